"""The changelog of mapping behaviour between consecutive nats-server releases, claimed only from paired
evidence (``records.pairs``, written by ``suites.pairing``).

For each feature, the nats-server releases that judged a case of it are taken in version order
(``reference.versions.Version``; a version that is no release, such as ``system``, is left out), and
between each two consecutive ones a divergence class of that feature (``feature:functions:difference``)
that shows on one and not on the other is a change only when:

- its smallest case, replayed on the other release, gave another outcome there (a pair whose outcome is
  ``changed``): **appeared** when the newer release shows it, **disappeared** when the older did;
- or, for a statistical class (a test of shares: ``suites.pairing.statistical``), its share of the
  feature's judged cases differs between the two by Fisher's exact test at
  ``records.significance.CHANGE_ALPHA``.

Every other one-sided class was "not drawn on both": counted, never listed. A class showing on both with
another verdict or expectation is the same behaviour judged by other ranges (``expectations check``
says which), not a change. A run that was not paired claims no change. Adapters and other
implementations are not releases of nats-server and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from nats_conformance.records.aggregates import ClassCount, ReleaseTally, VerdictCount
from nats_conformance.records.pairs import CHANGED as PAIR_CHANGED
from nats_conformance.records.pairs import Pair, statistical
from nats_conformance.records.releases import REFERENCE_IMPLEMENTATION, Release, sorted_releases, version_key
from nats_conformance.records.schema import case_class_of
from nats_conformance.records.significance import CHANGE_ALPHA
from nats_conformance.reports.stats import fisher_exact

APPEARED: Final = "appeared"
DISAPPEARED: Final = "disappeared"
KINDS: Final = (APPEARED, DISAPPEARED)


@dataclass(frozen=True, slots=True)
class Showing:
    """A class on one release: its diverging and expected cases, and the ids that explain the latter."""

    diverge: int
    expected: int
    expectations: tuple[str, ...]

    @property
    def verdict(self) -> str:
        """``diverge`` when any case is unexpected, else ``expected``."""
        return "diverge" if self.diverge else "expected"

    @property
    def state(self) -> str:
        """``unexpected``, or ``expected as left-right``."""
        if self.diverge:
            return "unexpected"
        return f"expected as {', '.join(self.expectations)}" if self.expectations else "expected"

    @property
    def cases(self) -> str:
        """``3 cases``, or ``2 diverge, 1 expected`` when the class has both."""
        if self.diverge and self.expected:
            return f"{self.diverge:,} diverge, {self.expected:,} expected"
        total = self.diverge + self.expected
        return f"{total:,} case{'' if total == 1 else 's'}"


@dataclass(frozen=True, slots=True)
class Change:
    """One class that appeared, disappeared or changed verdict between two consecutive releases."""

    before: Release
    after: Release
    kind: str
    case_class: str
    feature: str
    functions: str
    difference: str
    was: Showing | None
    now: Showing | None
    evidence: str = ""
    """What shows the change: the pair's replay line, or the test of a statistical class's shares."""

    @property
    def expectations(self) -> tuple[str, ...]:
        """The expectation ids of its expected cases on either release."""
        ids = {name for side in (self.was, self.now) if side for name in side.expectations}
        return tuple(sorted(ids))

    @property
    def name(self) -> str:
        """``left-right (validation: reference-accept-server-reject, left)`` for a class an expectation
        lists, else ``divergence validation:left:reference-accept-server-reject``."""
        if self.expectations:
            functions = self.functions or "literal"
            return f"{', '.join(self.expectations)} ({self.feature}: {self.difference}, {functions})"
        return f"divergence {self.case_class}"

    def text(self) -> str:
        """The change as a release manager reads it, led by the newer release."""
        after, before = self.after.label, self.before.label
        if self.kind == APPEARED:
            assert self.now is not None
            known = "known " if self.expectations else ""
            name = self.name.removeprefix("divergence ")
            return f"{after}: new {known}divergence {name}, {self.now.cases} (not on {before})"
        return f"{after}: {self.name} no longer shows (ends at {before})"


def _is_release(release: Release) -> bool:
    return release.implementation == REFERENCE_IMPLEMENTATION and version_key(release.version)[0]


def ran(verdicts: Iterable[VerdictCount]) -> dict[str, list[Release]]:
    """The nats-server releases that judged a case of each feature (``unknown`` cases are no run), in
    version order."""
    found: dict[str, set[Release]] = {}
    for item in verdicts:
        if item.verdict != "unknown" and item.count and _is_release(item.release):
            found.setdefault(item.feature, set()).add(item.release)
    return {feature: sorted_releases(releases) for feature, releases in found.items()}


def showings(by_release: Iterable[ReleaseTally]) -> dict[Release, Showing]:
    """A class's cases on each release it shows on, from its tallies (``ClassCount.by_release``)."""
    counts: dict[Release, tuple[int, int, set[str]]] = {}
    for tally in by_release:
        diverge, expected, ids = counts.get(tally.release, (0, 0, set()))
        if tally.expectation and tally.expected:
            ids = ids | {tally.expectation}
        counts[tally.release] = (diverge + tally.diverge, expected + tally.expected, ids)
    return {
        release: Showing(diverge, expected, tuple(sorted(ids)))
        for release, (diverge, expected, ids) in counts.items()
        if diverge or expected
    }


def _kind(was: Showing | None, now: Showing | None) -> str | None:
    """``appeared`` or ``disappeared`` for a class on one release only; None otherwise."""
    if was is None:
        return None if now is None else APPEARED
    return DISAPPEARED if now is None else None


@dataclass(frozen=True, slots=True)
class Changelog:
    """The paired changes, how many one-sided classes were not drawn on both, and whether any run of the
    report was paired at all (`paired`)."""

    changes: tuple[Change, ...] = ()
    not_drawn: int = 0
    paired: bool = False


def _judged(verdicts: Iterable[VerdictCount]) -> dict[tuple[Release, str], int]:
    totals: dict[tuple[Release, str], int] = {}
    for item in verdicts:
        if item.verdict != "unknown" and _is_release(item.release):
            totals[(item.release, item.feature)] = totals.get((item.release, item.feature), 0) + item.count
    return totals


def _pair_for(pairs: Iterable[Pair], case_class: str, before: Release, after: Release) -> Pair | None:
    """The pair replaying this class between the two releases whose outcome changed."""
    sides = {before.version, after.version}
    for pair in pairs:
        seen = case_class_of(pair.feature, pair.functions, pair.seen_difference)
        if seen == case_class and {pair.seen_on, pair.replayed_on} == sides and pair.outcome == PAIR_CHANGED:
            return pair
    return None


def changelog(
    classes: Iterable[ClassCount], verdicts: Iterable[VerdictCount], pairs: Sequence[Pair] | None
) -> Changelog:
    """Every paired change between consecutive releases that ran each class's feature (see the module),
    by newer release, then kind, then class; ``pairs`` None: no run was paired, no change is claimed."""
    if pairs is None:
        return Changelog()
    verdicts = list(verdicts)
    releases, judged = ran(verdicts), _judged(verdicts)
    changes, not_drawn = [], 0
    for item in classes:
        case = item.smallest
        shown = showings(item.by_release)
        for before, after in pairwise(releases.get(case.feature, [])):
            was, now = shown.get(before), shown.get(after)
            kind = _kind(was, now)
            if kind is None:
                continue
            if statistical(case.feature, case.difference):
                counts = [
                    (side.diverge + side.expected if side else 0, judged.get((release, case.feature), 0))
                    for side, release in ((was, before), (now, after))
                ]
                p_value = fisher_exact(*counts[0], *counts[1])
                shares = " vs ".join(f"{hits}/{trials}" for hits, trials in counts)
                evidence = f"Fisher's exact test p = {p_value:.2g} ({shares})"
                if p_value >= CHANGE_ALPHA:
                    not_drawn += 1
                    continue
            else:
                pair = _pair_for(pairs, item.case_class, before, after)
                if pair is None:
                    not_drawn += 1
                    continue
                evidence = pair.text()
            changes.append(
                Change(
                    before,
                    after,
                    kind,
                    item.case_class,
                    case.feature,
                    case.functions,
                    case.difference,
                    was,
                    now,
                    evidence,
                )
            )
    ordered = sorted(changes, key=lambda c: (c.after.key, KINDS.index(c.kind), c.case_class))
    return Changelog(tuple(ordered), not_drawn, True)
