"""The report's content, assembled from checked inputs and aggregates: what every renderer shows.

Divergence classes come first if they hold unexpected divergences, then by count; each carries its
first and last release (version order), the releases between them that ran its feature without
showing it, and the replay command of its smallest case
(``records.replay.replay_command``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from nats_conformance.records.aggregates import UNCLASSIFIED, Aggregates, DivergenceClass, VerdictCount
from nats_conformance.records.bisection import ReleaseBisection
from nats_conformance.records.coverage import ReleaseCoverage
from nats_conformance.records.expectations import Ended
from nats_conformance.records.judgement import EngineJudgement, judgements
from nats_conformance.records.load import Records, Run
from nats_conformance.records.mutants import MutantsRun
from nats_conformance.records.pairs import WITHIN, Pair
from nats_conformance.records.releases import Release, sorted_releases
from nats_conformance.records.replay import replay_command
from nats_conformance.records.schema import LITERAL, VERDICTS, Case
from nats_conformance.records.unknowns import UnknownShare, unknown_shares
from nats_conformance.reports.changes import Change, Changelog, Showing, changelog, showings
from nats_conformance.reports.distributions import (
    PartitionDistribution,
    WeightedShares,
    partition_distributions,
    weighted_shares,
)
from nats_conformance.reports.implementations import Implementation, implementations
from nats_conformance.reports.matrix import (
    Matrix,
    compatibility_matrices,
    context_matrices,
    function_names,
    row_order,
    tallies,
)


@dataclass(frozen=True, slots=True)
class RunSummary:
    run_id: str
    path: str
    """The run directory's name (never its absolute path: outputs name no directory of the build machine)."""
    rows: int
    unwritten: int
    status: str = "completed"
    """How the run ended (`records.writer.run_status`); anything but completed is an incomplete run."""
    judged_by: tuple[tuple[str, str], ...] = ()
    """(server version, release whose rules judged it) for each server judged by another release's rules
    (the manifest's ``settings.profiles``): one newer than every rule set, or ``--profile``."""
    judgements: tuple[EngineJudgement, ...] = ()
    """Its adapter targets judged by a release's engine (``--judge-by engine``, the manifest's
    ``judgements``): each one's verdict and the classes where that release and the documents differ."""

    def judged_by_text(self) -> str:
        """One sentence naming the servers judged by another release's rules, '' when none was."""
        if not self.judged_by:
            return ""
        pairs = ", ".join(
            f"nats-server {version} by the rules of {rules}" for version, rules in self.judged_by
        )
        return f"{self.run_id} judged {pairs} (the nearest release the reference has rules for, or --profile)"


def class_parts(smallest: Case) -> tuple[str, str, str]:
    """A class's (feature, functions, difference) from a case of it, functions `LITERAL` when it uses
    none, as its text shows them; (`UNCLASSIFIED`, '', '') for diverging cases with no difference."""
    if not smallest.difference:
        return (UNCLASSIFIED, "", "")
    return (smallest.feature, smallest.functions or LITERAL, smallest.difference)


@dataclass(frozen=True, slots=True)
class Divergence(DivergenceClass):
    """One divergence class: ``feature:functions:difference``."""

    replay: str
    not_on: tuple[Release, ...] = ()
    """Releases between the first and the last that ran the class's feature without showing it."""
    oracles: tuple[tuple[str, int], ...] = ()
    """Cases per three-way value, from runs with an engine oracle (`suites.oracle`)."""
    shown: dict[Release, Showing] = field(default_factory=dict)
    """Its cases on each release it shows on (``reports.changes.showings``)."""

    def oracle_count(self, value: str) -> int:
        return dict(self.oracles).get(value, 0)

    @property
    def count(self) -> int:
        return self.diverge + self.expected

    @property
    def parts(self) -> tuple[str, str, str]:
        """(feature, functions, difference), as `class_parts` of its smallest case."""
        return class_parts(self.smallest)

    def in_row(self, kind: str, name: str) -> bool:
        """True iff the class counts in a matrix row: its feature, or a function it uses."""
        feature, functions, _ = self.parts
        return (
            name == feature if kind == "feature" else kind == "function" and name in function_names(functions)
        )

    @property
    def first_release(self) -> Release:
        return self.releases[0]

    @property
    def last_release(self) -> Release:
        return self.releases[-1]


DIAGNOSES: Final = (
    ("reference-alone", "reference differs from both"),
    ("target-alone", "target differs from the engine (engine agrees with the reference)"),
    ("all-differ", "all three differ"),
    ("engine-unanswered", "engine did not answer"),
)
"""The report's three-way columns: a diverging case's `oracle` value and what it tells."""


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """Cases of one feature or function on one release, per verdict."""

    kind: str
    name: str
    release: Release
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class Report:
    generated: float
    runs: tuple[RunSummary, ...]
    rows: int
    releases: tuple[Release, ...]
    verdicts: dict[str, int]
    verdict_rows: tuple[VerdictRow, ...]
    verdict_counts: tuple[VerdictCount, ...]
    divergences: tuple[Divergence, ...]
    partitions: tuple[PartitionDistribution, ...]
    weighted: tuple[WeightedShares, ...]
    matrices: tuple[Matrix, ...]
    bisections: tuple[ReleaseBisection, ...] = ()
    contexts: tuple[Matrix, ...] = ()
    links: dict[str, str] = field(default_factory=dict)
    """Each expectation's `link` (a public page, then its section), by id."""
    endings: tuple[Ended, ...] = ()
    """The listed divergences the runs show ended (``records.expectations.Ended``), each once."""
    changelog: Changelog = field(default_factory=Changelog)
    """Classes that appeared or disappeared between consecutive releases by paired evidence, how many
    one-sided classes were not drawn on both, and whether the runs were paired."""
    coverages: tuple[ReleaseCoverage, ...] = ()
    """The runs' coverage of nats-server's mapping code (runs of `nats-conformance coverage`)."""
    unknowns: tuple[UnknownShare, ...] = ()
    """Each release's unknown share and its unknown cases per reason (``reports.unknowns``)."""
    implementations: tuple[Implementation, ...] = ()
    """Each implementation judged through the adapter protocol, per operation
    (``reports.implementations``)."""
    mutants: tuple[MutantsRun, ...] = ()
    """The runs of `nats-conformance mutants` given (``records.mutants``): a report of only those has no
    case run, and shows their section alone."""

    @property
    def changes(self) -> tuple[Change, ...]:
        """The paired changes between consecutive releases (``changelog``)."""
        return self.changelog.changes

    @property
    def complete(self) -> bool:
        return all(run.status == "completed" for run in self.runs)

    @property
    def passed(self) -> bool:
        """No unexpected divergence and every run complete: the banner is green."""
        return not self.verdicts.get("diverge", 0) and self.complete

    @property
    def judgements(self) -> tuple[EngineJudgement, ...]:
        return tuple(item for run in self.runs for item in run.judgements)

    @property
    def conforms_to(self) -> tuple[str, ...]:
        """The releases every unexpected divergence belongs to an adapter conforming to (each one its
        engine shares, ``records.judgement``), with every run complete; () otherwise."""
        diverge = self.verdicts.get("diverge", 0)
        conforming = [item for item in self.judgements if item.conforms]
        if not (diverge and self.complete) or sum(item.diverge for item in conforming) != diverge:
            return ()
        return tuple(sorted({item.release for item in conforming}))

    def cell_classes(self, kind: str, name: str, release: Release) -> list[Divergence]:
        """The divergence classes behind one matrix cell, in report order."""
        return [item for item in self.divergences if release in item.shown and item.in_row(kind, name)]

    def banner(self) -> str:
        """``0 unexpected divergences, 3 listed, 1 unknown - complete``: the verdict atop every output."""
        diverge, expected, unknown = (self.verdicts.get(v, 0) for v in ("diverge", "expected", "unknown"))
        plural = "" if diverge == 1 else "s"
        state = "complete" if self.complete else "incomplete"
        if self.conforms_to:
            releases = " and ".join(f"nats-server {release}" for release in self.conforms_to)
            return (
                f"conforms to {releases}: {diverge:,} divergence{plural} from the documents, all the "
                f"release's own, {expected:,} listed, {unknown:,} unknown - {state}"
            )
        return (
            f"{diverge:,} unexpected divergence{plural}, {expected:,} listed, {unknown:,} unknown - {state}"
        )


def paired_within(runs: Sequence[Run]) -> tuple[Pair, ...] | None:
    """The pairs between the releases of each run (``suites.pairing``); None when no run was paired."""
    found = [run.paired.of(WITHIN) for run in runs]
    if all(pairs is None for pairs in found):
        return None
    return tuple(pair for pairs in found if pairs for pair in pairs)


def divergences(aggregates: Aggregates) -> list[Divergence]:
    tested: dict[str, set[Release]] = {}
    for count in aggregates.verdicts:
        tested.setdefault(count.feature, set()).add(count.release)
    found = []
    for item in aggregates.classes:
        releases = tuple(sorted_releases(item.releases))
        feature = class_parts(item.smallest)[0]
        found.append(
            Divergence(
                case_class=item.case_class,
                diverge=item.diverge,
                expected=item.expected,
                releases=releases,
                expectations=item.expectations,
                smallest=item.smallest,
                replay=replay_command(item.smallest),
                not_on=gaps(releases, tested.get(feature, set())),
                oracles=item.oracles,
                shown=showings(item.by_release),
            )
        )
    return sorted(found, key=lambda d: (d.diverge == 0, -d.count, d.case_class))


def gaps(releases: tuple[Release, ...], tested: set[Release]) -> tuple[Release, ...]:
    """The `tested` releases of the same implementation strictly between the first and the last of
    `releases` (version order) that are not among them: with every patch swept, a class's exact
    release ranges."""
    first, last = releases[0], releases[-1]
    return tuple(
        release
        for release in sorted_releases(tested)
        if release.implementation == first.implementation
        and first.key < release.key < last.key
        and release not in releases
    )


def verdict_rows(counts: tuple[VerdictCount, ...]) -> list[VerdictRow]:
    table = tallies(counts)
    rows = []
    for kind, name in row_order(table):
        for release in sorted_releases(table[(kind, name)]):
            tally = table[(kind, name)][release]
            rows.append(VerdictRow(kind, name, release, {v: getattr(tally, v) for v in VERDICTS}))
    return rows


def judged_by(manifest: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The manifest's servers judged by another release's rules (`RunSummary.judged_by`)."""
    profiles = (manifest.get("settings") or {}).get("profiles") or {}
    pairs = {
        (str(item.get("server_version", "")), str(item.get("profile", "")))
        for item in profiles.values()
        if isinstance(item, dict)
    }
    return tuple(sorted((version, rules) for version, rules in pairs if version != rules))


def assemble(records: Records, aggregates: Aggregates, *, generated: float | None = None) -> Report:
    """Everything the renderers show, from the checked inputs and the engine's aggregates."""
    totals: Counter[str] = Counter()
    for item in aggregates.verdicts:
        totals[item.verdict] += item.count
    within = changelog(aggregates.classes, aggregates.verdicts, paired_within(records.runs))
    return Report(
        generated=time.time() if generated is None else generated,
        runs=tuple(
            RunSummary(
                run.run_id,
                run.path.name,
                run.rows,
                int(run.manifest.get("unwritten", 0) or 0),
                run.status,
                judged_by(run.manifest),
                judgements(run.manifest),
            )
            for run in records.runs
        ),
        rows=aggregates.rows,
        releases=tuple(sorted_releases(item.release for item in aggregates.verdicts)),
        verdicts={verdict: totals[verdict] for verdict in VERDICTS},
        verdict_rows=tuple(verdict_rows(aggregates.verdicts)),
        verdict_counts=aggregates.verdicts,
        divergences=tuple(divergences(aggregates)),
        partitions=tuple(partition_distributions(aggregates.partitions)),
        weighted=tuple(weighted_shares(aggregates.weighted)),
        matrices=tuple(compatibility_matrices(aggregates.verdicts)),
        bisections=tuple(run.bisection for run in records.runs if run.bisection),
        contexts=tuple(context_matrices(aggregates.verdicts)),
        changelog=within,
        endings=tuple(dict.fromkeys(item for run in records.runs for item in run.endings)),
        coverages=tuple(run.coverage for run in records.runs if run.coverage),
        unknowns=unknown_shares(aggregates.verdicts),
        implementations=implementations(records.runs, aggregates.verdicts, aggregates.classes),
        mutants=records.mutants,
    )
