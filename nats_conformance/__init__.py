"""`nats-conformance COMMAND ...`: every `python -m nats_conformance.suites|reports|fixtures|reference`
sub-command under one name (`report` is `reports build`), with the same options, exit statuses and one-line
errors. The commands' modules are imported with the signal handling on (`reference.cli.run_loaded`); `main`
handles the signals itself while it imports the reference model that handling is part of, so this module
imports only the standard library when it loads."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from types import FrameType

    from nats_conformance.reference.cli import Parser

DISTRIBUTION = "nats-conformance"


def version() -> str:
    """The installed distribution's version, else (a checkout run without installing) pyproject.toml's."""
    import tomllib
    from importlib import metadata
    from pathlib import Path

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        project: dict[str, str] = tomllib.loads(pyproject.read_text())["project"]
        return project["version"]


def parser(width: int | None = None) -> Parser:
    """The `nats-conformance` argument parser with every sub-command, built without running anything (the
    docs' CLI reference is generated from it, docs/hooks.py); `width` wraps the top-level help (default
    the terminal's width, at least 100)."""
    import shutil
    from functools import partial

    import nats_conformance.fixtures.commands
    import nats_conformance.reference.commands
    import nats_conformance.reports.commands
    import nats_conformance.suites.commands
    from nats_conformance.fixtures.configfile import COMMANDS, add_config_options
    from nats_conformance.reference.cli import HelpFormatter, Parser
    from nats_conformance.reference.environment import epilog

    class _Formatter(HelpFormatter):
        """One line per command: aligns help after the commands' indentation (Python 3.11 leaves it out)."""

        def add_argument(self, action: argparse.Action) -> None:
            self._indent()
            super().add_argument(action)
            self._dedent()

    command_line = Parser(
        prog="nats-conformance",
        description="Conformance of NATS subject mapping: run cases against servers, report, gate.",
        formatter_class=partial(_Formatter, width=width or max(shutil.get_terminal_size().columns, 100)),
        epilog=epilog(),
    )
    command_line.add_argument("--version", action="version", version=f"{DISTRIBUTION} {version()}")
    commands = command_line.add_subparsers(dest="command", required=True, metavar="COMMAND")
    nats_conformance.suites.commands.add_commands(commands)
    nats_conformance.reports.commands.add_commands(commands, build_name="report")
    nats_conformance.fixtures.commands.add_commands(commands)
    nats_conformance.reference.commands.add_commands(commands)
    for name, command in commands.choices.items():
        if name in COMMANDS:
            add_config_options(command)
        command.epilog = epilog(name)
    return command_line


def parse_configured(command_line: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """`argv` with the settings of its configuration file (`fixtures.configfile`), imported only once
    `run_loaded` handles signals, as every command module is."""
    from nats_conformance.fixtures.configfile import parse

    return parse(command_line, argv)


_LOADING_ENDINGS: dict[int, tuple[int, str]] = {
    signal.SIGINT: (130, "interrupted"),
    signal.SIGTERM: (143, "terminated"),
    signal.SIGHUP: (129, "hung up"),
}
"""`reference.errors.ENDINGS` by signal number, for a signal that lands before that module is loaded."""


class _EndedWhileLoading(BaseException):
    """A signal that arrived while `main` imported the command line (args: exit status, line)."""


def _end_while_loading(number: int, frame: FrameType | None) -> None:
    status, line = _LOADING_ENDINGS[number]
    raise _EndedWhileLoading(status, line)


def main(argv: list[str] | None = None) -> int:
    """Run the command line (with the settings of its configuration file); returns the exit status.

    Ctrl-C, SIGTERM or SIGHUP while the reference model loads (before `run_loaded` handles signals) ends
    the command with its one line and exit status too, not a traceback from an import. With no `argv`
    (the process's own command line) signals are ignored from the command's end until the process
    exits: a Ctrl-C then (the work done, its output written) neither kills the process nor hides its
    exit status."""
    previous = {number: signal.signal(number, _end_while_loading) for number in _LOADING_ENDINGS}
    status = 0
    try:
        from nats_conformance.reference.cli import run_loaded

        status = run_loaded(parser, argv, parse_configured)
    except _EndedWhileLoading as ended:
        for number in _LOADING_ENDINGS:
            signal.signal(number, signal.SIG_IGN)
        exec("")  # forget an interrupt that left a string's code (reference.errors.forget_escaped_interrupt)
        status, line = ended.args
        print(f"nats-conformance: {line}", file=sys.stderr)
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_IGN if argv is None else handler)
    return int(status)
