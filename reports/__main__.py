"""`python -m reports build RUN_DIR... --out DIR [--master URL]`: the report of one or many runs.

Progress goes to stderr; errors are one line (`nats-conformance: error: ...`) with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reference.errors import run_command
from reports.build import ENGINES, build_report
from reports.spark import DEFAULT_MASTER


def progress(line: str) -> None:
    print(f"reports: {line}", file=sys.stderr, flush=True)


def build(arguments: argparse.Namespace) -> int:
    built = build_report(
        [Path(path) for path in arguments.run_dirs],
        Path(arguments.out),
        master=arguments.master,
        engine=arguments.engine,
        progress=progress,
    )
    print(built.html)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("build", help="build report.html, report.md and summary.json")
    run.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        help="a run directory (holding cases/), or a directory of them such as runs/",
    )
    run.add_argument("--out", required=True, metavar="DIR", help="where the report files go")
    run.add_argument(
        "--master", default=DEFAULT_MASTER, metavar="URL", help="Spark master (default local[*])"
    )
    run.add_argument(
        "--engine",
        choices=ENGINES,
        default="spark",
        help="spark (default) or arrow: pyarrow and pandas in this process, no JVM",
    )
    run.set_defaults(handler=build)
    arguments = parser.parse_args(argv)
    return run_command(lambda: arguments.handler(arguments))


if __name__ == "__main__":
    sys.exit(main())
