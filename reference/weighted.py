"""Weighted destinations (docs.nats.io, "Subject Mapping and Partitioning": "Weighted Mappings",
"For Artificial Loss") and their exact selection rule.

Per message a draw 0..99 walks the destinations in ascending weight with cumulative sums; the first
whose cumulative weight exceeds the draw wins (observed on 2.2.6-2.14.5; the document gives only the
shares). When the weights sum below 100 the rest is lost: "the unaccounted for 2% would simulate
message loss" (``myservice.requests: [{v3, 90%}, {v3.fail, 8%}]``), and listing the source itself
(``foo.loss.>: [{foo.loss.>, 50%}]``) drops what is not mapped to it. Servers deliver an unaccounted
rest on the unchanged subject unless the source is listed (expectations.toml,
``weighted-remainder-not-lost``). ``cluster``-scoped entries form their own list: "Messages received by
servers within the named cluster will only consider mappings with the same cluster name. Otherwise, it
will fallback to non-cluster scoped mappings" (docs.nats.io, configuration reference, "mappings" >
"cluster", https://docs.nats.io/reference/config/mappings/cluster); the unscoped list's remainder (all
of it when it has no entry) is lost. Weights are 0..100; their total may not exceed 100 ("weights across
the destinations must add up to 100% on a per-cluster basis", ".../mappings/weight"; over the whole
list before 2.10), and a destination may appear once in the whole list, whatever its cluster. The
release range and the duplicate rule are what nats-server does (``AddWeightedMappings``, observed on
2.2.6, 2.14.9 and 2.15.2 by the weighted families' clustered and refused lists).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nats_conformance.reference.errors import DuplicateDestinationError, InvalidWeightError, TotalWeightError
from nats_conformance.reference.profiles import NEWEST, ReleaseProfile
from nats_conformance.reference.transform import Transform, compile_transform

__all__ = ["WeightedDestination", "WeightedMapping", "compile_weighted", "parse_weight"]


@dataclass(frozen=True, slots=True)
class WeightedDestination:
    """One entry of a weighted list: ``{destination: D, weight: W%, cluster: C}``."""

    destination: str
    weight: int
    cluster: str | None = None


def parse_weight(value: object) -> int:
    """A weight as the configuration parser reads it: an integer or text ``"N"``/``"N%"``, 0..100.

    Raises:
        InvalidWeightError: not an integer, or outside 0..100.
    """
    if isinstance(value, bool):
        raise InvalidWeightError(f"'weight' must be 0..100 (got {value!r})")
    if isinstance(value, str):
        text = value.removesuffix("%")
        if not (text.lstrip("+-").isdigit() and text.isascii()):
            raise InvalidWeightError(f"'weight' must be 0..100 or N% (got {value!r})")
        value = int(text)
    if not isinstance(value, int) or not 0 <= value <= 100:
        raise InvalidWeightError(f"'weight' must be 0..100 (got {value!r})")
    return value


@dataclass(frozen=True, slots=True)
class _Step:
    entry: WeightedDestination
    transform: Transform
    upto: int  # cumulative weight: draws below it (and above the previous step's) select this entry


@dataclass(frozen=True, slots=True)
class WeightedMapping:
    """A compiled weighted list for one server (its ``cluster``), ready to select per draw."""

    source: str
    entries: tuple[WeightedDestination, ...]
    cluster: str | None
    profile: ReleaseProfile
    steps: tuple[_Step, ...]

    def select(self, draw: int) -> WeightedDestination | None:
        """The entry chosen for ``draw`` (0..99); None means the message is lost."""
        if not 0 <= draw <= 99:
            raise ValueError(f"'draw' must be 0..99 (got {draw})")
        for step in self.steps:
            if draw < step.upto:
                return step.entry
        return None

    def apply(self, subject: str, draw: int) -> str | None:
        """The subject a message on ``subject`` is mapped to for ``draw``; None when it is dropped."""
        if not 0 <= draw <= 99:
            raise ValueError(f"'draw' must be 0..99 (got {draw})")
        for step in self.steps:
            if draw < step.upto:
                return step.transform.apply(subject)
        return None

    def expected_distribution(self) -> dict[str | None, float]:
        """Probability of each destination template (None for loss); destinations that can never be
        chosen (weight 0) are left out. Values sum to 1."""
        dist: dict[str | None, float] = {}
        previous = 0
        for step in self.steps:
            if step.upto > previous:
                dist[step.entry.destination] = (step.upto - previous) / 100
            previous = step.upto
        if previous < 100:
            dist[None] = (100 - previous) / 100
        return dist


def _unchanged(source: str) -> str:
    """The destination the server adds for the remainder: the source with ``*`` written ``$1, $2...``."""
    out, n = [], 0
    for token in source.split("."):
        if token == "*":
            n += 1
            out.append(f"${n}")
        else:
            out.append(token)
    return ".".join(out)


def compile_weighted(
    source: str,
    entries: Iterable[WeightedDestination],
    profile: ReleaseProfile | None = None,
    cluster: str | None = None,
) -> WeightedMapping:
    """Validate a weighted list and compile the list a server of ``cluster`` uses.

    Checks in server order, entry by entry: duplicate destination, weight 0..100, running total <= 100
    (per cluster from 2.10), then the mapping itself (``compile_transform``).

    Raises:
        MappingError: ``duplicate-destination``, ``invalid-weight``, ``total-weight-exceeded`` or any
            kind of :func:`reference.transform.compile_transform`.
    """
    p = NEWEST if profile is None else profile
    items = tuple(entries)
    seen: set[str] = set()
    totals: dict[str | None, int] = {}
    compiled: dict[str | None, list[tuple[WeightedDestination, Transform]]] = {}
    compile_transform(source, _unchanged(source), p)  # the source itself must be valid first
    for entry in items:
        if entry.destination in seen:
            raise DuplicateDestinationError(f"duplicate entry for {entry.destination!r}")
        seen.add(entry.destination)
        weight = parse_weight(entry.weight)
        scope = entry.cluster if p.weight_total_per_cluster else None
        totals[scope] = totals.get(scope, 0) + weight
        if totals[scope] > 100:
            raise TotalWeightError(f"total weight of {source!r} needs to be <= 100 (got {totals[scope]})")
        transform = compile_transform(source, entry.destination, p)
        compiled.setdefault(entry.cluster or None, []).append((entry, transform))
    chosen = compiled.get(cluster) if cluster is not None and cluster in compiled else compiled.get(None, [])
    scope_list = list(chosen or [])
    scope_list.sort(key=lambda pair: pair[0].weight)  # stable, like the server's sort for short lists
    steps, running = [], 0
    for entry, transform in scope_list:
        running += entry.weight
        steps.append(_Step(entry, transform, running))
    return WeightedMapping(source, items, cluster, p, tuple(steps))
