"""What an aggregation engine (Spark, or pyarrow for comparison) returns: small grouped counts.

Everything after this point (statistics, the matrix, rendering) is plain Python over these values, so
both engines must return equal `Aggregates` for the same records (`Aggregates.normalised`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Final

from nats_conformance.records.releases import Release
from nats_conformance.records.schema import Case
from nats_conformance.reference.weighted import WeightedDestination

UNSUPPORTED: Final = "unsupported"
"""Evidence that a function is not supported: a validation case where the reference rejects the mapping
as ``reject:unsupported-function`` (a known function this release's validator refuses) and the server
rejected it too, or a question an adapter was not asked as its hello leaves out the operation or the
function (difference ``records.schema.NOT_SUPPORTED``)."""

EXERCISED: Final = "exercised"
"""Evidence that a function is supported: a non-validation case with a verdict other than ``unknown``
(the server applied a mapping using it and the message was judged), or a validation case that reference
and server both accepted. A rejected mapping naming two functions says nothing about the supported one."""

UNCLASSIFIED: Final = "(unclassified)"
"""The class of a diverging row that carries no ``case_class`` (a suite bug, shown rather than lost)."""

DIVERGING: Final = ("diverge", "expected")
"""Verdicts that make a row part of a divergence class (``unknown`` is a failed run, not a finding)."""


def weights_key(weights: tuple[WeightedDestination, ...]) -> tuple[tuple[str, int, str], ...]:
    """A weighted list as an orderable value (its entries' fields; no cluster sorts as '')."""
    return tuple((entry.destination, entry.weight, entry.cluster or "") for entry in weights)


@dataclass(frozen=True, slots=True)
class VerdictCount:
    """Rows per release, feature, function combination, verdict, evidence kind and tally (the verdict, or
    the difference the exit status counts instead: ``records.rules.TALLIED_BY_DIFFERENCE``)."""

    release: Release
    feature: str
    functions: str
    verdict: str
    evidence: str
    count: int
    tally: str
    reason: str = ""
    """Why its rows are `unknown` (``records.rules.UNKNOWN_REASONS``); '' for any other verdict."""


_VERDICT_ORDER: Final = attrgetter(
    "release.key", "feature", "functions", "verdict", "evidence", "tally", "reason"
)
"""The canonical order of verdict counts: every field but the count, the release in version order."""


def merged(counts: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """(value, count) pairs with each value once, counts summed, in value order."""
    total: dict[str, int] = {}
    for value, n in counts:
        total[value] = total.get(value, 0) + n
    return tuple(sorted(total.items()))


@dataclass(frozen=True, slots=True)
class ReleaseTally:
    """One divergence class's cases on one release under one expectation id ('' for none)."""

    release: Release
    expectation: str
    diverge: int
    expected: int


def merged_tallies(tallies: tuple[ReleaseTally, ...]) -> tuple[ReleaseTally, ...]:
    """Tallies with each (release, expectation) once, counts summed, in release then id order."""
    total: dict[tuple[Release, str], tuple[int, int]] = {}
    for item in tallies:
        diverge, expected = total.get((item.release, item.expectation), (0, 0))
        total[(item.release, item.expectation)] = (diverge + item.diverge, expected + item.expected)
    return tuple(
        ReleaseTally(release, expectation, diverge, expected)
        for (release, expectation), (diverge, expected) in sorted(
            total.items(), key=lambda item: (item[0][0].key, item[0][1])
        )
    )


@dataclass(frozen=True, slots=True)
class DivergenceClass:
    """One divergence class (``case_class``) over all runs: counts per verdict, the releases it
    appears in, the expectation ids that explain it, and its smallest case (what the aggregates'
    `ClassCount` and the report's `reports.report.Divergence` both hold).

    The smallest case has the fewest characters in source + destination + subject; ties go to the
    least (source, destination, subject, server_version, backend, run_id, case_id) in code-point order.
    """

    case_class: str
    diverge: int
    expected: int
    releases: tuple[Release, ...]
    expectations: tuple[str, ...]
    smallest: Case


@dataclass(frozen=True, slots=True)
class ClassCount(DivergenceClass):
    """One divergence class as the aggregation engine counts it."""

    oracles: tuple[tuple[str, int], ...] = ()
    """Cases per three-way value (`suites.oracle`) of runs with an engine oracle."""
    by_release: tuple[ReleaseTally, ...] = ()
    """The same counts per release and expectation id (what the changelog between releases reads)."""


@dataclass(frozen=True, slots=True)
class BucketCount:
    """Distinct published subjects of one partition mapping on one release that landed in ``bucket``
    (None: not observed in a partition)."""

    release: Release
    source: str
    destination: str
    partitions: int
    bucket: int | None
    count: int


@dataclass(frozen=True, slots=True)
class WeightedCount:
    """Messages of one weighted list on one release with this ``outcome`` and ``bucket`` (the entry a
    delivered message went to; None for one delivered to no entry, lost or unchanged: see
    ``records.schema.OUTCOMES``)."""

    release: Release
    source: str
    weights: tuple[WeightedDestination, ...]
    bucket: int | None
    outcome: str
    count: int


@dataclass(frozen=True, slots=True)
class Aggregates:
    """Everything the report needs from the records, grouped."""

    rows: int
    verdicts: tuple[VerdictCount, ...]
    classes: tuple[ClassCount, ...]
    partitions: tuple[BucketCount, ...]
    weighted: tuple[WeightedCount, ...]

    def normalised(self) -> Aggregates:
        """The same aggregates in a canonical order (engines return groups in any order)."""
        return Aggregates(
            rows=self.rows,
            verdicts=tuple(sorted(self.verdicts, key=_VERDICT_ORDER)),
            classes=tuple(
                sorted(
                    (
                        replace(
                            c,
                            releases=tuple(sorted(set(c.releases), key=lambda r: r.key)),
                            expectations=tuple(sorted(set(c.expectations))),
                            oracles=merged(c.oracles),
                            by_release=merged_tallies(c.by_release),
                        )
                        for c in self.classes
                    ),
                    key=lambda c: c.case_class,
                )
            ),
            partitions=tuple(
                sorted(
                    self.partitions,
                    key=lambda b: (b.release.key, b.source, b.destination, b.partitions, _order(b.bucket)),
                )
            ),
            weighted=tuple(
                sorted(
                    self.weighted,
                    key=lambda w: (
                        w.release.key,
                        w.source,
                        weights_key(w.weights),
                        _order(w.bucket),
                        w.outcome,
                    ),
                )
            ),
        )


def _order(bucket: int | None) -> tuple[bool, int]:
    """A bucket's place in the canonical order: none after every number."""
    return (bucket is None, bucket or 0)
