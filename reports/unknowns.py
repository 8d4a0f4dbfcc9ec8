"""The unknown cases of each release: their share of its cases and how many each reason left unknown
(``records.unknowns``), from the verdict counts (whose `reason` both engines derive by
``records.rules.UNKNOWN_REASONS``). Every renderer shows the same table: a row per release, a column per
reason the records hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from nats_conformance.records.aggregates import VerdictCount
from nats_conformance.records.releases import Release, sorted_releases
from nats_conformance.records.unknowns import REASONS

LIMIT: Final = 0.01
"""The share of a release's cases that may be unknown (issue 56: at most 1 %); a release above it is
marked in the table."""

INTRO: Final = (
    "Cases whose outcome could not be observed, per release: their share of the release's cases (those "
    "--max-unknown counts: a question an adapter does not support, and a refused mapping's subject in "
    "runs before 2026-11-29, are shown by reason but not counted), and how many each reason left unknown."
)
NONE: Final = "No case is unknown."


@dataclass(frozen=True, slots=True)
class UnknownShare:
    """One release's cases, those of them `unknown` that the exit status counts, and every `unknown` case
    per reason (in `records.unknowns.REASONS` order)."""

    release: Release
    cases: int
    unknown: int
    reasons: tuple[tuple[str, int], ...]

    @property
    def share(self) -> float:
        return self.unknown / self.cases if self.cases else 0.0

    @property
    def above(self) -> bool:
        """True iff more than `LIMIT` of its cases are unknown."""
        return self.share > LIMIT

    def of(self, reason: str) -> int:
        return dict(self.reasons).get(reason, 0)


def unknown_shares(counts: Iterable[VerdictCount]) -> tuple[UnknownShare, ...]:
    """Each release's `UnknownShare`, in release order."""
    cases: dict[Release, int] = {}
    unknown: dict[Release, int] = {}
    reasons: dict[Release, dict[str, int]] = {}
    for item in counts:
        cases[item.release] = cases.get(item.release, 0) + item.count
        if item.tally == "unknown":
            unknown[item.release] = unknown.get(item.release, 0) + item.count
        if item.verdict == "unknown":
            held = reasons.setdefault(item.release, {})
            held[item.reason] = held.get(item.reason, 0) + item.count
    return tuple(
        UnknownShare(
            release,
            cases[release],
            unknown.get(release, 0),
            tuple(sorted(reasons.get(release, {}).items(), key=lambda pair: _order(pair[0]))),
        )
        for release in sorted_releases(cases)
    )


def _order(reason: str) -> tuple[int, str]:
    """A reason's place: the list's order, one it does not hold last."""
    names = list(REASONS)
    return (names.index(reason) if reason in names else len(names), reason)


def reasons_shown(shares: Sequence[UnknownShare]) -> list[str]:
    """The reasons any release's unknown cases have: the table's columns."""
    return sorted({reason for item in shares for reason, _ in item.reasons}, key=_order)


def meaning(reason: str) -> str:
    """What a reason means (``records.unknowns.REASONS``)."""
    return REASONS.get(reason, "not a listed reason")


def table(shares: Sequence[UnknownShare]) -> tuple[list[str], list[list[str]]]:
    """The table every renderer shows (its headers, then a row per release, as text): cases, unknown,
    share (marked `above limit` past `LIMIT`), then each shown reason's count."""
    reasons = reasons_shown(shares)
    headers = ["release", "cases", "unknown", "share", *reasons]
    rows = [
        [
            item.release.label,
            f"{item.cases:,}",
            f"{item.unknown:,}",
            f"{item.share * 100:.2f} %" + (" (above 1 %)" if item.above else ""),
            *(f"{item.of(reason):,}" for reason in reasons),
        ]
        for item in shares
    ]
    return headers, rows
