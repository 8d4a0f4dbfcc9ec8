"""The report's plots as inline SVG text (matplotlib, Agg; no external assets).

matplotlib is the `figures` extra: without it (a core install) each set of plots is one paragraph saying
how to get them, and the report's tables and numbers are whole.

Partition histograms show keys per partition with the equal-share expectation as a dashed line;
weighted plots show how far each outcome's observed share lies from its exact expected share (the
dashed zero line), with its 99.9 % Wilson interval. Both are small multiples of at most ``PANELS``
panels, in the order the caller gives.
"""

from __future__ import annotations

import importlib.util
import io
import math
from collections.abc import Sequence
from typing import Any, Final

from nats_conformance.reports.distributions import PartitionDistribution, WeightedShares

EXTRA: Final = "figures"
MISSING: Final = (
    "<p>Plots need matplotlib: <code>pip install 'nats-conformance[figures]'</code>; "
    "the table below has every number.</p>"
)
"""What stands for a set of plots where matplotlib is not installed."""

PANELS: Final = 12
COLUMNS: Final = 3
DRAWABLE_PARTITIONS: Final = 256
"""Histograms are drawn for mappings of at most this many partitions (one bar each)."""

TITLE: Final = 0.45
"""Inches above each panel for its two-line title."""

OBSERVED_COLOUR: Final = "#3b6ea8"
EXPECTED_COLOUR: Final = "#c0392b"
ALARM_COLOUR: Final = "#d35400"


def shorten(text: str, limit: int = 46) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plotting() -> bool:
    """Whether matplotlib can be imported (the `figures` extra)."""
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ticker() -> Any:
    from matplotlib import ticker

    return ticker


def _grid(count: int, height: float, bottom: float) -> tuple[Any, list[Any]]:
    """``count`` panels of ``height`` inches, with fixed margins (inches; ``bottom`` below each panel
    for its tick labels): a computed layout (``tight_layout``) took most of the plotting time."""
    plt = _pyplot()
    rows = math.ceil(count / COLUMNS)
    total = height * rows
    figure, axes = plt.subplots(rows, COLUMNS, figsize=(13, total), squeeze=False)
    inner = height - TITLE - bottom
    figure.subplots_adjust(
        left=0.06,
        right=0.99,
        top=1 - TITLE / total,
        bottom=bottom / total,
        wspace=0.25,
        hspace=(TITLE + bottom) / inner,
    )
    flat = [axis for row in axes for axis in row]
    for axis in flat[count:]:
        axis.set_visible(False)
    return figure, flat[:count]


def _svg(figure: Any, salt: str) -> str:
    plt = _pyplot()
    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": salt, "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def partition_histograms(distributions: Sequence[PartitionDistribution]) -> str:
    """Histograms of up to ``PANELS`` distributions, in the order given (empty text for none)."""
    shown = [d for d in distributions if 1 <= d.partitions <= DRAWABLE_PARTITIONS][:PANELS]
    if not shown:
        return ""
    if not plotting():
        return MISSING
    figure, axes = _grid(len(shown), 2.6, 0.45)
    ticker = _ticker()
    for number, (axis, item) in enumerate(zip(axes, shown, strict=True), 1):
        alarm = item.fit is not None and item.fit.rejected
        axis.bar(range(item.partitions), item.dense(), color=ALARM_COLOUR if alarm else OBSERVED_COLOUR)
        if item.keys:
            axis.axhline(item.keys / item.partitions, color=EXPECTED_COLOUR, linestyle="--", linewidth=1)
        stats = "too few keys for chi-square" if item.fit is None else f"p={item.fit.p_value:.3g}"
        ratio = "∞" if math.isinf(item.ratio) else f"{item.ratio:.2f}"
        axis.set_title(
            f"#{number} {item.release.label}  {shorten(item.destination, 40)}\n"
            f"n={item.partitions}, {item.keys:,} keys, {stats}, max/min {ratio}",
            fontsize=8,
        )
        axis.set_xlabel("partition", fontsize=8)
        axis.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        axis.set_ylabel("keys", fontsize=8)
        axis.tick_params(labelsize=7)
    return _svg(figure, "partition")


def weighted_plots(lists: Sequence[WeightedShares]) -> str:
    """Per list (up to ``PANELS``), each outcome's observed minus expected share in percentage points,
    with the 99.9 % interval: an interval crossing the zero line (the exact expected share) agrees."""
    shown = [item for item in lists if item.shares][:PANELS]
    if not shown:
        return ""
    if not plotting():
        return MISSING
    figure, axes = _grid(len(shown), 2.9, 0.65)
    for number, (axis, item) in enumerate(zip(axes, shown, strict=True), 1):
        positions = list(range(len(item.shares)))
        deviation = [100 * (share.observed - share.expected) for share in item.shares]
        below = [100 * max(0.0, share.observed - share.low) for share in item.shares]
        above = [100 * max(0.0, share.high - share.observed) for share in item.shares]
        colours = [OBSERVED_COLOUR if share.consistent else ALARM_COLOUR for share in item.shares]
        for position, value, low, high, colour in zip(
            positions, deviation, below, above, colours, strict=True
        ):
            axis.errorbar([position], [value], yerr=[[low], [high]], fmt="o", color=colour, capsize=4)
        axis.axhline(0, color=EXPECTED_COLOUR, linestyle="--", linewidth=1)
        labels = [f"{shorten(share.label, 16)}\n{share.expected:.0%} exp." for share in item.shares]
        axis.set_xticks(positions, labels, fontsize=7)
        axis.set_xlim(-0.6, len(positions) - 0.4)
        axis.set_ylabel("observed - expected (pp)", fontsize=8)
        axis.tick_params(labelsize=7)
        verdict = "consistent" if item.consistent else "INCONSISTENT"
        axis.set_title(
            f"#{number} {item.release.label}  {shorten(item.source, 30)}\n"
            f"{item.messages:,} messages, loss {item.loss_rate:.2%}, {verdict}",
            fontsize=8,
        )
    return _svg(figure, "weighted")
