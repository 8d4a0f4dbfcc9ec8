"""`python -m reports build RUN_DIR... --out DIR [--master URL]`: the report of one or many runs.

`python -m reports baseline RUN_DIR... --out FILE` writes the runs' class verdicts as a baseline file;
`python -m reports gate RUN_DIR... --baseline FILE [--against RELEASE] [--update]` compares runs with
it (with `--against`, by release line: another release's baseline), and
`python -m reports gate RUN_DIR... --against PREVIOUS_RUN_DIR` with a previous run directly (class by
class across releases when the two tested different ones); either exits 1 on a regression
(reports/baseline.py), else 3 when more than `--max-unknown` of the runs' cases are unknown
(reference.cli). The verdict is printed first, then regressions, then fixes; every move is written to
`--details` (default RUN_DIR/gate-details.txt). Progress goes to stderr; errors, bad arguments
included, are one line (`nats-conformance: error: ...`) with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from records.expectations import DEFAULT_PATH
from records.tally import verdict_tally
from reference.cli import Parser, add_max_unknown, exit_status, too_many_unknown
from reference.errors import UsageError
from reports.baseline import (
    DETAILS,
    across_releases,
    by_line,
    fold,
    gate,
    read_baseline,
    verdict_counts,
    write_baseline,
    write_details,
)
from reports.build import ENGINES, build_report
from reports.load import Records, load_records
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
        expectations=Path(arguments.expectations) if arguments.expectations else _default_expectations(),
    )
    print(built.html)
    return 0


def _default_expectations() -> Path | None:
    """The repository's expectations file, when there is one."""
    return DEFAULT_PATH if DEFAULT_PATH.is_file() else None


def _complete_records(run_dirs: list[str], allow_incomplete: bool) -> Records:
    """The runs at `run_dirs`, refused when one did not complete unless `--allow-incomplete` was given."""
    records = load_records([Path(run_dir) for run_dir in run_dirs])
    if not allow_incomplete:
        records.check_complete()
    return records


def baseline(arguments: argparse.Namespace) -> int:
    records = _complete_records(arguments.run_dirs, arguments.allow_incomplete)
    classes = fold(verdict_counts(records.parts))
    incomplete = [run.run_id for run in records.runs if not run.complete]
    write_baseline(Path(arguments.out), classes, incomplete=incomplete)
    print(f"{arguments.out}: {len(classes)} classes")
    return 0


def check(arguments: argparse.Namespace) -> int:
    if arguments.baseline is None and arguments.against is None:
        raise UsageError(
            "the following arguments are required: --baseline FILE or --against PREVIOUS_RUN_DIR"
        )
    if arguments.baseline is None and arguments.update:
        raise UsageError("--update rewrites a baseline file: give it --baseline FILE")
    if arguments.baseline is None and not Path(arguments.against).is_dir():
        raise UsageError(
            f"--against takes a previous run directory, or a release with --baseline FILE "
            f"({arguments.against} is no directory)"
        )
    records = _complete_records(arguments.run_dirs, arguments.allow_incomplete)
    classes = fold(verdict_counts(records.parts))
    if arguments.baseline is None:
        previous = _complete_records([arguments.against], arguments.allow_incomplete)
        result = gate(*across_releases(fold(verdict_counts(previous.parts)), classes), strict=True)
    elif arguments.against:
        result = gate(*by_line(read_baseline(Path(arguments.baseline)), classes, arguments.against))
    else:
        result = gate(read_baseline(Path(arguments.baseline)), classes)
    details = Path(arguments.details or Path(arguments.run_dirs[0]) / DETAILS)
    write_details(details, result)
    unknown = too_many_unknown(verdict_tally(records.parts), arguments.max_unknown)
    print(result.render(details, "unknown" if unknown and not result.failed else ""))
    if unknown:
        print(unknown)
    if arguments.update:
        write_baseline(Path(arguments.baseline), classes)
        print(f"{arguments.baseline}: updated from the run, {len(classes)} classes")
    return exit_status(diverged=result.failed, unknown=unknown)


def add_run_dirs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        help="a run directory (holding cases/), or a directory of them such as runs/",
    )


def add_allow_incomplete(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--allow-incomplete", action="store_true", help=help)


def add_commands(commands: argparse._SubParsersAction[Parser], *, build_name: str = "build") -> None:
    """Register build (as `build_name`), baseline and gate (here and in `nats-conformance`)."""
    run = commands.add_parser(build_name, help="build report.html, report.md and summary.json")
    add_run_dirs(run)
    run.add_argument("--out", required=True, metavar="DIR", help="where the report files go")
    run.add_argument(
        "--master", default=DEFAULT_MASTER, metavar="URL", help="Spark master (default local[*])"
    )
    run.add_argument(
        "--engine",
        choices=ENGINES,
        default="spark",
        help="spark (default) or duckdb: the same queries in this process, no JVM",
    )
    run.add_argument(
        "--expectations",
        metavar="FILE",
        help="the expectations file whose links the report shows next to each expectation "
        "(default the repository's expectations.toml)",
    )
    run.set_defaults(handler=build)
    write = commands.add_parser("baseline", help="write the runs' class verdicts as a baseline file")
    add_run_dirs(write)
    write.add_argument("--out", required=True, metavar="FILE", help="the baseline file to write")
    add_allow_incomplete(
        write,
        "write a baseline of runs that did not complete (interrupted, crashed or "
        'killed) from the records they left; the file names them in "incomplete"',
    )
    write.set_defaults(handler=baseline)
    compare = commands.add_parser(
        "gate",
        help="compare runs with a baseline file or a previous run; exit status 1 on a regression",
        description="Exit status: 0 no regression, 1 a regression (agree -> diverge; against a previous "
        "run also expected -> diverge and a new diverging class), 2 usage or setup error, 3 more unknown "
        "cases than --max-unknown. The verdict is the first line, then regressions, then fixes.",
    )
    add_run_dirs(compare)
    compare.add_argument("--baseline", metavar="FILE", help="the baseline file")
    compare.add_argument(
        "--against",
        metavar="PREVIOUS_RUN_DIR|RELEASE",
        help="without --baseline: a previous run directory to compare the runs with (by feature and "
        "functions across releases when they tested different ones: what changed since 2.14.5); with "
        "--baseline: a release, to compare the runs' releases of its line with the baseline's classes of "
        "RELEASE (a run on 2.14.6 against a baseline taken on 2.14.5)",
    )
    compare.add_argument(
        "--details",
        metavar="FILE",
        help="where every move (new, missing and changed classes too) is written "
        f"(default RUN_DIR/{DETAILS})",
    )
    compare.add_argument("--update", action="store_true", help="then rewrite the baseline file from the runs")
    add_allow_incomplete(
        compare, "gate runs that did not complete (interrupted, crashed or killed) on the records they left"
    )
    add_max_unknown(compare)
    compare.set_defaults(handler=check)


def build_parser() -> Parser:
    """The parser of `python -m reports` (run by its `__main__`)."""
    parser = Parser(prog="python -m reports", description=__doc__.splitlines()[0])
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser
