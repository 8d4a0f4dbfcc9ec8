"""``python -m nats_conformance.reference map SRC DEST [SUBJECT...]`` and ``python -m
nats_conformance.reference serve``.

``map`` mirrors ``nats server mapping``: it prints the mapped subject for each subject, or the validation
error as one line ``nats-conformance: error: <kind>: <detail>`` on stderr with exit status 2.
``serve`` speaks the adapter protocol (``docs/adapter-protocol.md``) on stdin/stdout.
"""

from __future__ import annotations

import argparse
import sys

from nats_conformance.reference.adapter import serve
from nats_conformance.reference.cli import Parser
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.profiles import NEWEST, for_version
from nats_conformance.reference.transform import compile_transform

PROG = "nats-conformance"


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register map and serve (here and in `nats-conformance`)."""
    mapping = commands.add_parser("map", help="map subjects like `nats server mapping`")
    mapping.add_argument("source", metavar="SRC")
    mapping.add_argument("destination", metavar="DEST")
    mapping.add_argument("subjects", metavar="SUBJECT", nargs="*")
    mapping.add_argument(
        "--server-version",
        dest="server_version",
        metavar="V",
        help=f"release whose rules apply (default: newest known, {NEWEST.name})",
    )
    mapping.add_argument(
        "--engine-only",
        action="store_true",
        help="skip the account-mapping validator (accepts left/right from 2.10.16)",
    )
    mapping.set_defaults(handler=_map)
    serving = commands.add_parser("serve", help="answer adapter-protocol JSON lines on stdin")
    serving.set_defaults(handler=_serve)


def _map(args: argparse.Namespace) -> int:
    """Print each subject mapped, or the error's kind and detail as one line (exit status 2)."""
    try:
        profile = NEWEST if args.server_version is None else for_version(args.server_version)
        transform = compile_transform(args.source, args.destination, profile, engine_only=args.engine_only)
        for subject in args.subjects:
            mapped = transform.apply(subject)
            print(mapped.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))
    except ConformanceError as exc:
        sys.stdout.flush()
        sys.stderr.write(f"{PROG}: error: {exc.kind}: {exc}\n")
        return 2
    except BrokenPipeError:
        return 1
    return 0


def _serve(args: argparse.Namespace) -> int:
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:
        return 1
    return 0


def build_parser() -> Parser:
    """The parser of `python -m nats_conformance.reference` (run by its `__main__`)."""
    parser = Parser(
        prog="python -m nats_conformance.reference", description="The nats-conformance reference model."
    )
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="{map,serve}"))
    return parser
