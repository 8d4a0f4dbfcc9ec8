"""Partition distributions and weighted shares, from grouped counts (`records.aggregates`).

Partition: per (release, source, destination) the distinct published subjects per observed partition
(a key published several times, as in the determinism rounds, counts once; the hash of a key never
varies, so repeats would only inflate the statistic), their chi-square against equal shares and the
fullest/emptiest bucket ratio (`reports.stats`).

Weighted: per (release, source, destination list) every judged message (verdict other than
``unknown``; a row with no ``outcome``, such as a summary, is left out by the engines) falls in one
category by its ``outcome`` and ``bucket``: an entry of the list (delivered, ``bucket`` = its index),
elsewhere (delivered, no bucket: a destination the list does not allow), the unchanged subject, or lost.
The report's own category numbers for the last three are `ELSEWHERE`, `UNCHANGED` and `LOST`, below
every entry index. The exact expected share of entry
i is ``weight_i / 100``; the remainder ``(100 - sum) / 100`` is lost (``reference.weighted``), so the
unchanged subject's expected share is 0. Entries scoped to a
``cluster`` are left out: a server outside a cluster uses the unscoped list.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from nats_conformance.records import schema
from nats_conformance.records.aggregates import BucketCount, WeightedCount
from nats_conformance.records.releases import Release
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.weighted import WeightedDestination, parse_weight
from nats_conformance.reports.stats import Uniformity, max_min_ratio, uniform_chi_square, wilson_interval

LOST: Final = -1
UNCHANGED: Final = -2
ELSEWHERE: Final = -3
"""Categories of a weighted list other than its entries: lost, unchanged, delivered where the list does
not allow."""
CATEGORIES: Final = {schema.LOST: LOST, schema.UNCHANGED: UNCHANGED}
"""The category of each outcome but delivered (whose category is its bucket, or `ELSEWHERE`)."""


def special_labels(source: str) -> dict[int, str]:
    return {LOST: "(lost)", UNCHANGED: f"{source} (unchanged)", ELSEWHERE: "(elsewhere)"}


@dataclass(frozen=True, slots=True)
class PartitionDistribution:
    """Keys per partition of one mapping on one release."""

    release: Release
    source: str
    destination: str
    partitions: int
    counts: dict[int, int]  # bucket 0..partitions-1 -> distinct keys (absent: 0)
    outside: int  # keys not observed in any partition (bucket -1 or out of range)
    fit: Uniformity | None
    ratio: float

    @property
    def keys(self) -> int:
        return sum(self.counts.values())

    def dense(self) -> list[int]:
        """The counts of every bucket 0..partitions-1 (only for reasonably small ``partitions``)."""
        return [self.counts.get(bucket, 0) for bucket in range(self.partitions)]


def partition_distributions(buckets: Iterable[BucketCount]) -> list[PartitionDistribution]:
    """One distribution per (release, source, destination, partitions), in input order of first sight."""
    groups: dict[tuple[Release, str, str, int], list[BucketCount]] = defaultdict(list)
    for item in buckets:
        groups[(item.release, item.source, item.destination, item.partitions)].append(item)
    out = []
    for (release, source, destination, partitions), items in groups.items():
        counts = {b.bucket: b.count for b in items if b.bucket is not None and 0 <= b.bucket < partitions}
        outside = sum(b.count for b in items if b.bucket is None or not 0 <= b.bucket < partitions)
        out.append(
            PartitionDistribution(
                release=release,
                source=source,
                destination=destination,
                partitions=partitions,
                counts=counts,
                outside=outside,
                fit=uniform_chi_square(counts, partitions),
                ratio=max_min_ratio(counts, partitions),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Share:
    """One outcome of a weighted list: observed count and share with its interval, and the exact
    expected share."""

    category: int  # entry index, or LOST / UNCHANGED / ELSEWHERE
    label: str
    expected: float
    count: int
    observed: float
    low: float
    high: float

    @property
    def consistent(self) -> bool:
        """True iff the expected share lies inside the observed share's interval."""
        return self.low <= self.expected <= self.high


@dataclass(frozen=True, slots=True)
class WeightedShares:
    """Observed against expected shares of one weighted list on one release."""

    release: Release
    source: str
    destination: str
    messages: int
    shares: tuple[Share, ...]
    problem: str = ""  # why expected shares could not be derived (an unreadable list)

    @property
    def loss_rate(self) -> float:
        lost = sum(share.count for share in self.shares if share.category == LOST)
        return lost / self.messages if self.messages else math.nan

    @property
    def consistent(self) -> bool:
        return not self.problem and all(share.consistent for share in self.shares)


def weights_text(weights: Sequence[WeightedDestination]) -> str:
    """A weighted list as shown: `[{"destination": ..., "weight": ...}, ...]` (JSON, cluster if any)."""
    items = [
        {"destination": e.destination, "weight": e.weight, **({"cluster": e.cluster} if e.cluster else {})}
        for e in weights
    ]
    return json.dumps(items)


def expected_shares(
    source: str, weights: Sequence[WeightedDestination]
) -> tuple[dict[int, float], dict[int, str]]:
    """Exact shares and labels of every category of a weighted list (the records' `weights` column).

    Raises:
        ValueError: a weight outside 0..100.
    """
    shares: dict[int, float] = {}
    labels: dict[int, str] = {}
    total = 0
    for index, entry in enumerate(weights):
        if entry.cluster:
            continue
        try:
            weight = parse_weight(entry.weight)
        except MappingError as error:
            raise ValueError(str(error)) from error
        shares[index] = weight / 100
        labels[index] = entry.destination
        total += weight
    shares[LOST] = max(0, 100 - total) / 100
    shares[UNCHANGED] = 0.0
    shares[ELSEWHERE] = 0.0
    return shares, labels | special_labels(source)


def weighted_shares(counts: Iterable[WeightedCount]) -> list[WeightedShares]:
    """Observed shares of every weighted list and release; categories with neither an expected share
    nor an observation are left out."""
    groups: dict[tuple[Release, str, tuple[WeightedDestination, ...]], dict[int, int]] = defaultdict(
        lambda: defaultdict(int)
    )
    for item in counts:
        category = CATEGORIES.get(item.outcome, ELSEWHERE if item.bucket is None else item.bucket)
        groups[(item.release, item.source, item.weights)][category] += item.count
    out = []
    for (release, source, weights), observed in groups.items():
        messages = sum(observed.values())
        problem = ""
        try:
            expected, labels = expected_shares(source, weights)
        except ValueError as error:
            expected, labels, problem = {}, {}, str(error)
        labels = {**special_labels(source), **labels}
        for category in observed:
            if category not in expected:  # an index beyond the list, or a list that cannot be read
                expected[category] = 0.0
                labels.setdefault(category, f"entry {category}" + ("" if problem else " (not listed)"))
        shares = []
        for category in sorted(expected, key=lambda c: (c < 0, c if c >= 0 else -c)):
            count = observed.get(category, 0)
            if expected[category] == 0 and count == 0:
                continue
            low, high = wilson_interval(count, messages)
            shares.append(
                Share(
                    category=category,
                    label=labels[category],
                    expected=expected[category],
                    count=count,
                    observed=count / messages if messages else math.nan,
                    low=low,
                    high=high,
                )
            )
        out.append(WeightedShares(release, source, weights_text(weights), messages, tuple(shares), problem))
    return out
