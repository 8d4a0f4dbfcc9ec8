"""What both renderers share: display order of distributions, number formats and cell colours."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

from nats_conformance.reports.distributions import PartitionDistribution, WeightedShares
from nats_conformance.reports.matrix import AGREES, DIVERGES, KNOWN, NO_EVIDENCE, NOT_SUPPORTED, Tally

STATE_COLOURS: Final = {
    AGREES: "#9fd89a",
    KNOWN: "#ffd966",
    DIVERGES: "#f08080",
    NOT_SUPPORTED: "#b4bcc8",
    NO_EVIDENCE: "#f4f4f4",
}
"""Matrix cell backgrounds (also checked in a browser screenshot by the tests)."""

STATE_SYMBOLS: Final = {
    AGREES: "✅",
    KNOWN: "🟨",
    DIVERGES: "❌",
    NOT_SUPPORTED: "⛔",
    NO_EVIDENCE: "·",
}
"""Matrix cells in Markdown, where cells have no colour."""

CHANGES_HEADERS: Final = ("release", "since", "change", "what changed", "evidence", "class")
CHANGES_INTRO: Final = (
    "Divergence classes that appeared or disappeared between consecutive nats-server releases, each shown "
    "by the same case run on both releases (a statistical class: by Fisher's exact test of its share). A "
    "release is compared for a feature's classes only with the previous release that ran that feature."
)
CHANGES_NONE: Final = "No divergence class appeared or disappeared between consecutive releases."
CHANGES_UNPAIRED: Final = (
    "The runs were not paired, so no change between releases is claimed: `nats-conformance pair RUN_DIR` "
    "runs each class seen on one release and not on the next on the other."
)
"""The changelog section's table headers and texts, the same in HTML and Markdown."""


def not_drawn_text(count: int) -> str:
    """The line counting one-sided classes that no paired case shows changed."""
    classes = "class was" if count == 1 else "classes were"
    return (
        f"{count:,} one-sided {classes} not drawn on both releases: the same case gave the same outcome "
        "on both, or the share did not differ significantly. These are not changes."
    )


TABLE_ROWS: Final = 200
"""Rows of a long table shown in a report; the rest are in summary.json."""


def ranked_partitions(items: Sequence[PartitionDistribution]) -> list[PartitionDistribution]:
    """Least uniform first: lowest p-value, then highest max/min ratio; untested ones last."""
    return sorted(
        items,
        key=lambda d: (
            d.fit is None,
            d.fit.p_value if d.fit else 1.0,
            -(d.ratio if math.isfinite(d.ratio) else 1e300 if d.ratio > 0 else 0),
        ),
    )


def ranked_weighted(items: Sequence[WeightedShares]) -> list[WeightedShares]:
    """Inconsistent lists first, then by release and source."""
    return sorted(items, key=lambda w: (w.consistent, w.release.key, w.source, w.destination))


def differ_text(tally: Tally) -> str:
    """A matrix cell's counts: ``40 cases, 2 differ (5.00 %)``; '' for no judged case."""
    if not tally.judged:
        return ""
    differ = tally.diverge + tally.expected
    text = f"{tally.judged:,} case{'' if tally.judged == 1 else 's'}"
    return f"{text}, {differ:,} differ ({share(differ / tally.judged)})" if differ else text


BANNER_COLOURS: Final = {True: "#1e7b34", False: "#b00020"}
"""The verdict banner's background: green when it passed (``Report.passed``), else red."""
CONFORMS_COLOUR: Final = "#1f5fa8"
"""The banner's background when the report conforms to a nats-server release (``Report.conforms_to``)."""
JUDGED_INTRO: Final = (
    "Adapter targets judged by the transform engine of a nats-server release (--judge-by engine): one "
    "whose every divergence the release's engine shares (both differ from the documents) conforms to that "
    "release. The classes where the release and the documents differ, with their cases:"
)


def count(value: int) -> str:
    return f"{value:,}"


def share(value: float) -> str:
    return "-" if math.isnan(value) else f"{value * 100:.2f} %"


def ratio(value: float) -> str:
    if math.isnan(value):
        return "-"
    return "∞" if math.isinf(value) else f"{value:.2f}"


def p_value(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def expectation_links(ids: Sequence[str], links: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(id, URL, the rest of its link: the section) for each expectation id; URL and rest empty when the
    entry names no public page."""
    shown = []
    for name in ids:
        link = links.get(name, "")
        url, _, rest = link.partition(" ")
        if not url.startswith(("https://", "http://")):
            url, rest = "", link
        shown.append((name, url.rstrip(","), rest.strip(" ,")))
    return shown
