"""`nats-conformance COMMAND ...`: every `python -m suites|reports|fixtures|reference` sub-command under
one name (`report` is `reports build`), with the same options, exit statuses and one-line errors. The
commands' modules are imported with the signal handling on (`reference.cli.run_loaded`)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tomllib
from functools import partial
from importlib import metadata
from pathlib import Path

from reference.cli import HelpFormatter, Parser, run_loaded
from reference.environment import epilog


class _Formatter(HelpFormatter):
    """One line per command: aligns help after the commands' indentation (Python 3.11 leaves it out)."""

    def add_argument(self, action: argparse.Action) -> None:
        self._indent()
        super().add_argument(action)
        self._dedent()


DISTRIBUTION = "nats-conformance"


def version() -> str:
    """The installed distribution's version, else (a checkout run without installing) pyproject.toml's."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parent / "pyproject.toml"
        project: dict[str, str] = tomllib.loads(pyproject.read_text())["project"]
        return project["version"]


def parser(width: int | None = None) -> Parser:
    """The `nats-conformance` argument parser with every sub-command, built without running anything (the
    docs' CLI reference is generated from it, docs/hooks.py); `width` wraps the top-level help (default
    the terminal's width, at least 100)."""
    import fixtures.commands
    import reference.commands
    import reports.commands
    import suites.commands
    from fixtures.configfile import COMMANDS, add_config_options

    command_line = Parser(
        prog="nats-conformance",
        description="Conformance of NATS subject mapping: run cases against servers, report, gate.",
        formatter_class=partial(_Formatter, width=width or max(shutil.get_terminal_size().columns, 100)),
        epilog=epilog(),
    )
    command_line.add_argument("--version", action="version", version=f"{DISTRIBUTION} {version()}")
    commands = command_line.add_subparsers(dest="command", required=True, metavar="COMMAND")
    suites.commands.add_commands(commands)
    reports.commands.add_commands(commands, build_name="report")
    fixtures.commands.add_commands(commands)
    reference.commands.add_commands(commands)
    for name, command in commands.choices.items():
        if name in COMMANDS:
            add_config_options(command)
        command.epilog = epilog(name)
    return command_line


def parse_configured(command_line: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """`argv` with the settings of its configuration file (`fixtures.configfile`), imported only once
    `run_loaded` handles signals, as every command module is."""
    from fixtures.configfile import parse

    return parse(command_line, argv)


def main(argv: list[str] | None = None) -> int:
    """Run the command line (with the settings of its configuration file); returns the exit status."""
    return run_loaded(parser, argv, parse_configured)


if __name__ == "__main__":
    sys.exit(main())
