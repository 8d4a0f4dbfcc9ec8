"""How the report shows the unknown cases of each release (``records.unknowns.unknown_shares``): every
renderer shows the same table, a row per release, a column per reason the records hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from nats_conformance.records.unknowns import REASONS, UnknownShare, reasons_shown

INTRO: Final = (
    "Cases whose outcome could not be observed, per release: their share of the release's cases (those "
    "--max-unknown counts: a question an adapter does not support, and a refused mapping's subject in "
    "runs before 2026-11-29, are shown by reason but not counted), and how many each reason left unknown."
)
NONE: Final = "No case is unknown."


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
            item.share_text + (" (above 1 %)" if item.above else ""),
            *(f"{item.of(reason):,}" for reason in reasons),
        ]
        for item in shares
    ]
    return headers, rows
