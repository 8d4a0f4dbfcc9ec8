"""`python -m nats_conformance.reports build RUN_DIR... --out DIR [--master URL]`: the report of one or many
runs (a run folder of `nats-conformance mutants` among them adds its section).

`python -m nats_conformance.reports baseline RUN_DIR... --out FILE` writes the runs' class verdicts as a
baseline file; `python -m nats_conformance.reports gate RUN_DIR... --baseline FILE [--against RELEASE]
[--update]` compares runs with it (with `--against`, by release line: another release's baseline), and
`python -m nats_conformance.reports gate RUN_DIR... --against PREVIOUS_RUN_DIR` with a previous run directly
(class by class across releases when the two tested different ones); either exits 1 on a regression
(reports/baseline.py), else 3 when more than `--max-unknown` of the runs' cases are unknown
(reference.cli). The verdict is printed first, then regressions, then fixes; every move is written to
`--details` (default RUN_DIR/gate-details.txt). `python -m nats_conformance.reports site RUN_DIR... --out DIR`
writes the compatibility site (reports/site.py), `python -m nats_conformance.reports site serve DIR [--port
N]` previews it. Progress goes to stderr; errors, bad arguments
included, are one line (`nats-conformance: error: ...`) with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nats_conformance.records.counts import part_counts, tally_of
from nats_conformance.records.expectations import DEFAULT_PATH
from nats_conformance.records.load import Records, load_records
from nats_conformance.records.pairs import against_label
from nats_conformance.records.spark import DEFAULT_MASTER
from nats_conformance.reference.cli import Parser, add_max_unknown, exit_status, port, too_many_unknown
from nats_conformance.reference.errors import UsageError
from nats_conformance.reports.baseline import (
    DETAILS,
    across_releases,
    aggregated_classes,
    by_line,
    counterparts,
    gate,
    paired,
    read_baseline,
    run_case_files,
    write_baseline,
    write_details,
)
from nats_conformance.reports.build import ENGINES, build_report, default_engine
from nats_conformance.reports.figures import EXTRA, plotting
from nats_conformance.reports.serve import serve
from nats_conformance.reports.site import build_site


def progress(line: str) -> None:
    print(f"reports: {line}", file=sys.stderr, flush=True)


def build(arguments: argparse.Namespace) -> int:
    engine = arguments.engine
    if engine is None:
        engine = default_engine()
        if engine == "duckdb":
            progress("engine duckdb (pyspark is not importable; choose with --engine)")
    if not plotting():
        progress(f"no plots: matplotlib is not installed (pip install 'nats-conformance[{EXTRA}]')")
    built = build_report(
        [Path(path) for path in arguments.run_dirs],
        Path(arguments.out),
        master=arguments.master,
        engine=engine,
        progress=progress,
        expectations=Path(arguments.expectations) if arguments.expectations else _default_expectations(),
    )
    print(built.html)
    return 0


def site(arguments: argparse.Namespace) -> int:
    """`site RUN... --out DIR` builds the site; `site serve DIR [--port N]` previews it."""
    paths = arguments.paths
    if paths[0] == "serve":
        if len(paths) != 2 or arguments.out:
            raise UsageError("site serve takes one built site directory: site serve DIR [--port N]")
        serve(Path(paths[1]), arguments.port)
        return 0
    if not arguments.out:
        raise UsageError("the following arguments are required: --out DIR (or: site serve DIR)")
    index = build_site(
        [Path(path) for path in paths],
        Path(arguments.out),
        engine=arguments.engine,
        master=arguments.master,
        expectations=Path(arguments.expectations) if arguments.expectations else _default_expectations(),
        progress=progress,
    )
    print(index)
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
    classes = aggregated_classes(part_counts(records.parts))
    incomplete = [run.run_id for run in records.runs if not run.complete]
    write_baseline(Path(arguments.out), classes, incomplete=incomplete, cases=run_case_files(records.runs))
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
    counts = part_counts(records.parts)
    classes = aggregated_classes(counts)
    compared = Path(arguments.baseline or arguments.against)
    found = [run.paired.of(against_label(compared)) for run in records.runs]
    pairs = None if None in found or (arguments.baseline and arguments.against) else found
    if arguments.baseline is None:
        previous = aggregated_classes(
            part_counts(_complete_records([arguments.against], arguments.allow_incomplete).parts)
        )
        sides = across_releases(previous, classes) if pairs is None else counterparts(previous, classes)
        result = gate(*sides, strict=True)
    elif arguments.against:
        result = gate(*by_line(read_baseline(Path(arguments.baseline)), classes, arguments.against))
    elif pairs is None:
        result = gate(read_baseline(Path(arguments.baseline)), classes)
    else:
        result = gate(*counterparts(read_baseline(Path(arguments.baseline)), classes))
    if pairs is not None:
        result = paired(result, [pair for each in pairs if each for pair in each])
    for run in records.runs:  # first: what a release fixed is the news
        for item in run.endings:
            print(item.headline() + (f"\n  replay: {item.replay_line()}" if item.case else ""))
    details = Path(arguments.details or Path(arguments.run_dirs[0]) / DETAILS)
    write_details(details, result)
    unknown = too_many_unknown(tally_of(counts), arguments.max_unknown)
    print(result.render(details, "unknown" if unknown and not result.failed else ""))
    if pairs is None and result.moved:
        print(
            f"unpaired: moves are by class, sampling included; for paired evidence: nats-conformance pair "
            f"RUN_DIR --with {compared}"
        )
    if unknown:
        print(unknown)
    if arguments.update:
        write_baseline(Path(arguments.baseline), classes, cases=run_case_files(records.runs))
        print(f"{arguments.baseline}: updated from the run, {len(classes)} classes")
    return exit_status(diverged=result.failed, unknown=unknown)


def add_run_dirs(parser: argparse.ArgumentParser, *, mutants: bool = False) -> None:
    """Register RUN_DIR...; with `mutants`, a mutants run folder is one too (the report's)."""
    parser.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        help="a run directory (holding cases/), or a directory of them such as runs/"
        + ("; or a run folder of `mutants` (holding mutants.json)" if mutants else ""),
    )


def add_aggregation(parser: argparse.ArgumentParser, engine: str | None) -> None:
    """Register --master, --engine (default `engine`; None: spark when pyspark is importable, else
    duckdb) and --expectations."""
    parser.add_argument(
        "--master", default=DEFAULT_MASTER, metavar="URL", help="Spark master (default local[*])"
    )
    default = f"{engine} (default)" if engine else "default spark when pyspark is importable, else duckdb"
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=engine,
        help=f"spark or duckdb: the report's SQL rules on Spark or on DuckDB in this process; {default}",
    )
    parser.add_argument(
        "--expectations",
        metavar="FILE",
        help="the expectations file whose links (and notes) are shown next to each expectation "
        "(default the repository's expectations.toml)",
    )


def add_allow_incomplete(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--allow-incomplete", action="store_true", help=help)


def add_commands(commands: argparse._SubParsersAction[Parser], *, build_name: str = "build") -> None:
    """Register build (as `build_name`), baseline and gate (here and in `nats-conformance`)."""
    run = commands.add_parser(build_name, help="build report.html, report.md and summary.json")
    add_run_dirs(run, mutants=True)
    run.add_argument("--out", required=True, metavar="DIR", help="where the report files go")
    add_aggregation(run, None)
    run.set_defaults(handler=build)
    pages = commands.add_parser(
        "site",
        help="build the compatibility site of runs (site RUN... --out DIR), or preview one "
        "(site serve DIR [--port N])",
        description="Static pages, relative links only: runs newest first with their moves, the "
        "release x feature matrix, a page per divergence class and per release. `site serve DIR` serves "
        "them on 127.0.0.1 until Ctrl-C (exit 130).",
    )
    pages.add_argument(
        "paths",
        nargs="+",
        metavar="RUN_DIR|serve DIR",
        help="run directories (or directories of them), or `serve` and a built site's directory",
    )
    pages.add_argument("--out", metavar="DIR", help="where the site goes")
    pages.add_argument(
        "--port",
        type=port,
        default=8000,
        metavar="N",
        help="site serve: the port (default 8000, 0 any free)",
    )
    add_aggregation(pages, "duckdb")
    pages.set_defaults(handler=site)
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
    """The parser of `python -m nats_conformance.reports` (run by its `__main__`)."""
    parser = Parser(
        prog="python -m nats_conformance.reports", description=" ".join(__doc__.split("\n\n")[0].split())
    )
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser
