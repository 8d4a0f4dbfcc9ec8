"""The command-line contract every ``python -m`` entry point shares: argument errors as one line, option
types, and the exit statuses of a run (README, "Exit statuses").

0: every case agrees or is expected; 1: unexpected divergences (or a gate regression); 2: usage or
setup error, one ``nats-conformance: error: ...`` line; 3: more unknown cases than ``--max-unknown``
allows; 4: a campaign judged by a release's engine (``--judge-by engine``) whose every divergence is
one that release shares, "conforms to nats-server R" (``records.judgement``). Divergences outrank
unknown cases, as Jepsen's invalid outranks unknown, and unknown cases outrank conformance.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any, Final, NoReturn, Protocol

from nats_conformance.reference.environment import COLUMN, HEADING, keep_hypothesis_storage
from nats_conformance.reference.errors import UsageError, run_command

PASSED: Final = 0
DIVERGED: Final = 1
TOO_MANY_UNKNOWN: Final = 3
CONFORMS_TO_ENGINE: Final = 4
DEFAULT_MAX_UNKNOWN: Final = 0.05


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, except that an "environment variables:" epilog (`reference.environment.epilog`) keeps
    one variable a line, its meaning wrapped under its own column."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if not text.startswith(HEADING):
            return super()._fill_text(text, width, indent)
        heading, *lines = text.splitlines()
        wrapped = [
            textwrap.fill(
                line,
                width,
                break_on_hyphens=False,
                initial_indent=indent,
                subsequent_indent=indent + " " * COLUMN,
            )
            for line in lines
        ]
        return "\n".join([indent + heading, *wrapped])


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors raise `UsageError` (one line, exit 2 through `run_command`)
    instead of printing a usage block; its sub-command parsers are of the same class, with the same
    `HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def run_parsed(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse `argv` and run the chosen sub-command's ``handler`` through `run_command`, so an argument
    error is one line with exit status 2 like any other error."""

    def command() -> int:
        arguments = parser.parse_args(argv)
        return int(arguments.handler(arguments))

    return run_command(command)


def run_loaded(
    load: Callable[[], argparse.ArgumentParser],
    argv: list[str] | None,
    parse: Callable[[argparse.ArgumentParser, list[str] | None], argparse.Namespace] | None = None,
) -> int:
    """`run_parsed` on the parser `load` returns, called inside `run_command`: an entry point (a
    ``__main__`` module, `nats-conformance`) imports its commands' modules there, so Ctrl-C or SIGTERM
    while they load (seconds for the suites) ends it with its one line too, not a traceback. `parse`
    parses (default `parse_args`; `nats-conformance` reads its configuration file there). With no `argv`
    the command line is this process's own (`sys.argv`): once interrupted, it keeps ignoring signals
    until it exits (`run_command`'s `own_process`)."""

    if argv is None:
        keep_hypothesis_storage()

    def command() -> int:
        parser = load()
        arguments = parse(parser, argv) if parse else parser.parse_args(argv)
        return int(arguments.handler(arguments))

    return run_command(command, own_process=argv is None)


class EntryPoint(Protocol):
    """A ``__main__`` module's ``main``: runs the command line, returns the exit status."""

    def __call__(self, argv: list[str] | None = None) -> int: ...


def entry_point(commands: str) -> EntryPoint:
    """The ``main`` that `run_loaded` runs the ``build_parser`` of the module `commands` with, that
    module imported inside it (with the signal handling on)."""

    def main(argv: list[str] | None = None) -> int:
        return run_loaded(lambda: import_module(commands).build_parser(), argv)

    return main


def count(text: str) -> int:
    """A whole number >= 0 (a budget, a number of questions or partitions)."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 (got {text!r})")
    return int(text)


def port(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535."""
    number = count(text)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535 (got {text!r})")
    return number


def fraction(text: str) -> float:
    """A share of cases between 0 and 1, written as a fraction (0.05) or a percentage (5%)."""
    number = text.removesuffix("%")
    try:
        value = float(number) / (100 if number != text else 1)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction (0.05) or a percentage (5%) (got {text!r})")
    return value


def percent(share: float) -> str:
    """``0.05`` as ``5``."""
    return f"{share * 100:g}"


def add_max_unknown(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Register ``--max-unknown`` (exit status 3 above it)."""
    parser.add_argument(
        "--max-unknown",
        type=fraction,
        default=DEFAULT_MAX_UNKNOWN,
        metavar="SHARE",
        help="exit 3 when more than this share of the cases is unknown: 0.05 or 5%% "
        f"(default {percent(DEFAULT_MAX_UNKNOWN)}%%)",
    )


def too_many_unknown(verdicts: Mapping[str, int], max_unknown: float) -> str | None:
    """One line saying the unknown cases are above ``max_unknown``, or None when they are not."""
    total = sum(verdicts.values())
    unknown = verdicts.get("unknown", 0)
    if not total or unknown / total <= max_unknown:
        return None
    share = f"{unknown / total:.1%}"
    return f"{unknown} of {total} cases unknown ({share}), above --max-unknown {percent(max_unknown)}%"


def exit_status(*, diverged: bool, unknown: str | None, conforms: bool = False) -> int:
    """The run's exit status: divergences, then too many unknown cases, then conformance to a release's
    engine (every divergence one the release shares), else passed."""
    if diverged:
        return DIVERGED
    if unknown:
        return TOO_MANY_UNKNOWN
    return CONFORMS_TO_ENGINE if conforms else PASSED
