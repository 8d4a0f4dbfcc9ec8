"""The compatibility site: one report of every run given, one per run, and how each run moved against the
run before it of the same targets (``reports.site_content``); written as static pages by
``reports.render_site``.

Every count comes from the report's aggregation (``reports.build.aggregate_groups``: the SQL rules on
DuckDB or Spark) and ``reports.report.assemble``; a run's moves are the gate's class comparison
(``reports.baseline``) of its aggregated verdicts with the previous run's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from nats_conformance.records.errors import ReportError
from nats_conformance.records.expectations import Expectation, load_expectations
from nats_conformance.records.files import replace_folder
from nats_conformance.records.load import Records, load_records
from nats_conformance.records.spark import DEFAULT_MASTER
from nats_conformance.reports.baseline import across_releases, aggregated_classes, gate
from nats_conformance.reports.build import aggregate_groups, check_engine, timed, with_expectations
from nats_conformance.reports.report import assemble
from nats_conformance.reports.site_content import TITLE_END, Site, SiteRun


def with_moves(runs: Sequence[SiteRun]) -> list[SiteRun]:
    """The runs newest first, each compared with the run before it of the same targets."""
    ordered = sorted(runs, key=lambda run: (run.started, run.run_id))
    last: dict[tuple[str, ...], SiteRun] = {}
    out = []
    for run in ordered:
        before = last.get(run.targets)
        moved = run
        if before is not None:
            previous = aggregated_classes(before.report.verdict_counts)
            current = aggregated_classes(run.report.verdict_counts)
            moves = gate(*across_releases(previous, current), strict=True)
            moved = SiteRun(run.run, run.report, before.run_id, moves)
        last[run.targets] = moved
        out.append(moved)
    return out[::-1]


def collect(
    run_dirs: Sequence[Path],
    *,
    engine: str = "duckdb",
    master: str = DEFAULT_MASTER,
    expectations: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Site:
    """The site's content of the runs in `run_dirs` (run directories or directories of them).

    Raises:
        ReportError: bad input (``records.load``) or an aggregation failure.
    """
    check_engine(engine, master)
    say = timed(progress)
    records = load_records(list(run_dirs))
    say(f"{records.rows:,} case records of {len(records.runs)} run(s)")
    groups = [records, *(Records((run,)) for run in records.runs)]
    everything, *each = aggregate_groups(groups, engine, master, say)
    entries: Sequence[Expectation] = load_expectations(expectations).entries if expectations else ()
    report = with_expectations(assemble(records, everything), entries)
    runs = [
        SiteRun(run, with_expectations(assemble(Records((run,)), aggregates), entries))
        for run, aggregates in zip(records.runs, each, strict=True)
    ]
    return Site(report, tuple(with_moves(runs)), {entry.id: entry.note for entry in entries if entry.note})


def is_site(folder: Path) -> bool:
    """Whether `folder` holds a site this command wrote (its index page's title says so)."""
    try:
        return TITLE_END in (folder / "index.html").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def build_site(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    engine: str = "duckdb",
    master: str = DEFAULT_MASTER,
    expectations: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Path:
    """Write the site of the runs in `run_dirs` as the folder `out`, whole (`records.files.replace_folder`:
    an interrupted command leaves the old site or the new one); returns its index page.

    Raises:
        ReportError: bad input, an aggregation failure, an unwritable `out`, or an `out` that holds
            files and no site.
    """
    from nats_conformance.reports.render_site import site_pages

    site = collect(run_dirs, engine=engine, master=master, expectations=expectations, progress=progress)
    pages = site_pages(site)
    try:
        replace_folder(out, pages, owned=is_site)
    except OSError as error:
        raise ReportError(f"cannot write the site to {out}: {error.strerror or error}") from error
    progress(f"wrote {len(pages)} page(s) to {out}")
    return out / "index.html"
