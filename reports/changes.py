"""The changelog of mapping behaviour between consecutive nats-server releases, computed from the
divergence classes' counts per release (``reports.model.ClassCount.by_release``) that the report's
shared aggregation already returns.

For each feature, the nats-server releases that judged a case of it are taken in version order
(``reference.versions.Version``; a version that is no release, such as ``system``, is left out), and
between each two consecutive ones a class of that feature (``feature:functions:difference``):

- **appeared**: shows on the newer release and not on the older;
- **disappeared**: showed on the older release and not on the newer;
- **changed**: shows on both with another verdict (any unexpected case makes it ``diverge``, else
  ``expected``) or other expectation ids.

A release that did not run a feature is not compared for that feature's classes, so a class never
"disappears" because its family did not run. Adapters and other implementations are not releases of
nats-server and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from reports.model import ClassCount, ReleaseTally, VerdictCount
from reports.releases import REFERENCE_IMPLEMENTATION, Release, sorted_releases, version_key

APPEARED: Final = "appeared"
DISAPPEARED: Final = "disappeared"
CHANGED: Final = "changed"
KINDS: Final = (APPEARED, DISAPPEARED, CHANGED)


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
        if self.kind == DISAPPEARED:
            return f"{after}: {self.name} no longer shows (ends at {before})"
        assert self.was is not None
        assert self.now is not None
        return (
            f"{after}: {self.name} is now {self.now.state} ({self.now.cases}), "
            f"was {self.was.state} on {before}"
        )


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
    if was is None:
        return None if now is None else APPEARED
    if now is None:
        return DISAPPEARED
    if (was.verdict, was.expectations) != (now.verdict, now.expectations):
        return CHANGED
    return None


def changelog(classes: Iterable[ClassCount], verdicts: Iterable[VerdictCount]) -> list[Change]:
    """Every change between consecutive releases that ran each class's feature (see the module), by
    newer release, then kind, then class."""
    releases = ran(verdicts)
    changes = []
    for item in classes:
        case = item.smallest
        shown = showings(item.by_release)
        for before, after in pairwise(releases.get(case.feature, [])):
            was, now = shown.get(before), shown.get(after)
            kind = _kind(was, now)
            if kind is not None:
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
                    )
                )
    return sorted(changes, key=lambda c: (c.after.key, KINDS.index(c.kind), c.case_class))
