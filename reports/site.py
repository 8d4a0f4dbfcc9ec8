"""The compatibility site: one report of every run given, one per run, and how each run moved against the
run before it of the same targets; written as static pages by ``reports.render_site``.

Every count comes from the report's aggregation (``reports.build.aggregate_groups``: the SQL rules on
DuckDB or Spark) and ``reports.report.assemble``; a run's moves are the gate's class comparison
(``reports.baseline``) of its aggregated verdicts with the previous run's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nats_conformance.records.errors import ReportError
from nats_conformance.records.expectations import Expectation, load_expectations
from nats_conformance.records.load import Records, Run, load_records
from nats_conformance.records.releases import Release
from nats_conformance.records.spark import DEFAULT_MASTER
from nats_conformance.reports.baseline import GateResult, across_releases, aggregated_classes, gate
from nats_conformance.reports.build import aggregate_groups, check_engine, timed, with_expectations
from nats_conformance.reports.report import Report, assemble


@dataclass(frozen=True, slots=True)
class SiteRun:
    """One run: its own report and its moves against the previous run of the same targets (None for
    the first)."""

    run: Run
    report: Report
    previous: str | None = None
    moves: GateResult | None = None

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def started(self) -> float:
        """When the run started (manifest ``started``, Unix seconds; 0 when unknown)."""
        value = self.run.manifest.get("started")
        return float(value) if isinstance(value, int | float) else 0.0

    @property
    def targets(self) -> tuple[str, ...]:
        """The implementations it tested: runs of the same targets are compared with each other."""
        return tuple(sorted({release.implementation for release in self.report.releases}))

    def ran(self, feature: str) -> bool:
        """True iff one of its cases of `feature` was judged."""
        return any(
            item.feature == feature and item.verdict != "unknown" and item.count
            for item in self.report.verdict_counts
        )


@dataclass(frozen=True, slots=True)
class Site:
    """What the pages show: the report of all runs, the runs newest first, the expectations' entries."""

    report: Report
    runs: tuple[SiteRun, ...]
    notes: dict[str, str]

    def runs_of(self, release: Release) -> list[SiteRun]:
        return [run for run in self.runs if release in run.report.releases]


def slug(text: str) -> str:
    """A file name for `text`: its letters, digits, dots and dashes, other runs of characters as ``-``."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "-"


def finding_id(case_class: str) -> str:
    """A divergence class's page name: readable, and unique by a short hash of the class."""
    return f"{slug(case_class)[:80]}-{hashlib.sha256(case_class.encode()).hexdigest()[:8]}"


def release_id(release: Release) -> str:
    return slug(release.label)


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


def build_site(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    engine: str = "duckdb",
    master: str = DEFAULT_MASTER,
    expectations: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> Path:
    """Write the site of the runs in `run_dirs` into `out`; returns its index page.

    Raises:
        ReportError: bad input, an aggregation failure, or an unwritable `out`.
    """
    from nats_conformance.reports.render_site import site_pages

    site = collect(run_dirs, engine=engine, master=master, expectations=expectations, progress=progress)
    pages = site_pages(site)
    try:
        for name, text in pages.items():
            path = out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ReportError(f"cannot write the site to {out}: {error.strerror or error}") from error
    progress(f"wrote {len(pages)} page(s) to {out}")
    return out / "index.html"
