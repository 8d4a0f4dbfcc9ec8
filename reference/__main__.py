"""`python -m nats_conformance.reference ...`: the commands of `reference.commands`, imported with the signal
handling on."""

from __future__ import annotations

import sys

from nats_conformance.reference.cli import Parser, run_loaded


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    return run_loaded(_parser, argv)


def _parser() -> Parser:
    from nats_conformance.reference.commands import build_parser

    return build_parser()


if __name__ == "__main__":
    sys.exit(main())
