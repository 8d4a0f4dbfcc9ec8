"""`nats-conformance COMMAND ...`: every `python -m suites|reports|fixtures|reference` sub-command under
one name (`report` is `reports build`), with the same options, exit statuses and one-line errors. The
commands' modules are imported with the signal handling on (`reference.cli.run_loaded`)."""

from __future__ import annotations

import argparse
import shutil
import sys
from functools import partial

from reference.cli import Parser, run_loaded


class _Formatter(argparse.HelpFormatter):
    """One line per command: aligns help after the commands' indentation (Python 3.11 leaves it out)."""

    def add_argument(self, action: argparse.Action) -> None:
        self._indent()
        super().add_argument(action)
        self._dedent()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    return run_loaded(_parser, argv)


def _parser() -> Parser:
    import fixtures.commands
    import reference.commands
    import reports.commands
    import suites.commands

    parser = Parser(
        prog="nats-conformance",
        description="Conformance of NATS subject mapping: run cases against servers, report, gate.",
        formatter_class=partial(_Formatter, width=max(shutil.get_terminal_size().columns, 100)),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    suites.commands.add_commands(commands)
    reports.commands.add_commands(commands, build_name="report")
    fixtures.commands.add_commands(commands)
    reference.commands.add_commands(commands)
    return parser


if __name__ == "__main__":
    sys.exit(main())
