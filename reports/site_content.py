"""What the compatibility site's pages show: the report of every run given (`Site`), each run's own report
and its moves against the previous run of the same targets (`SiteRun`), and the pages' names. Collected by
``reports.site``, rendered by ``reports.render_site``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from nats_conformance.records.load import Run
from nats_conformance.records.releases import Release
from nats_conformance.reports.baseline import GateResult
from nats_conformance.reports.report import Report

TITLE_END = " - nats-conformance</title>"
"""How every page's title ends: a folder whose index page has it holds a site the command may replace."""


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
