"""The report's aggregation rules, written once: which rows each aggregation reads, what it groups them
by, and the support evidence a row gives. `records.queries` spells them as the SQL that both engines
(Spark and DuckDB) run; the engines differ in execution, never in definitions (a test checks that both
return equal `Aggregates` for the same records).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from nats_conformance.records import unknowns
from nats_conformance.records.aggregates import DIVERGING, EXERCISED, UNSUPPORTED
from nats_conformance.records.schema import NOT_SUPPORTED, REFUSED


@dataclass(frozen=True, slots=True)
class Is:
    """The column equals the value."""

    column: str
    value: str


@dataclass(frozen=True, slots=True)
class IsNot:
    """The column differs from the value."""

    column: str
    value: str


@dataclass(frozen=True, slots=True)
class OneOf:
    """The column is one of the values."""

    column: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StartsWith:
    """The column's text begins with the prefix."""

    column: str
    prefix: str


@dataclass(frozen=True, slots=True)
class All:
    """Every part holds."""

    parts: tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """At least one part holds."""

    parts: tuple[Condition, ...]


Condition = Is | IsNot | OneOf | StartsWith | All | AnyOf

VALIDATION = Is("feature", "validation")
JUDGED = IsNot("verdict", "unknown")
"""``unknown`` rows are a failed run, not evidence: no aggregation but the verdict counts reads them."""

UNSUPPORTED_EXPECTED: Final = "reject:unsupported-function"
EVIDENCE: Final[tuple[tuple[str, Condition], ...]] = (
    (
        UNSUPPORTED,
        AnyOf(
            (
                All((VALIDATION, Is("expected", UNSUPPORTED_EXPECTED), Is("observed", "reject"))),
                Is("difference", NOT_SUPPORTED),
            )
        ),
    ),
    (
        EXERCISED,
        AnyOf(
            (
                All((IsNot("feature", "validation"), JUDGED)),
                All((VALIDATION, Is("expected", "accept"), Is("observed", "accept"))),
            )
        ),
    ),
)
"""A row's support evidence: the first kind whose condition holds, else '' (see ``records.aggregates``)."""

VERDICT_KEYS: Final = ("implementation", "server_version", "feature", "functions", "verdict")
"""Verdict counts group every row by these, its evidence and its tally."""
TALLIED_BY_DIFFERENCE: Final = OneOf("difference", (REFUSED, NOT_SUPPORTED))
"""A row's tally (what an exit status counts, README "Exit statuses") is its verdict, but for the subjects
of a mapping the server refused (judged in a case of their own) and the questions an adapter does not
support: those count under their difference, not as `unknown`."""

UNKNOWN: Final = Is("verdict", "unknown")
UNKNOWN_REASONS: Final[tuple[tuple[str, Condition], ...]] = (
    *((reason, Is("difference", difference)) for difference, reason in unknowns.BY_DIFFERENCE.items()),
    *((reason, StartsWith("detail", unknowns.stated(reason, ""))) for reason in unknowns.STATED),
)
"""An `unknown` row's reason (``records.unknowns``): the first whose condition holds, else
``unknowns.UNLISTED``; '' for a row of any other verdict. Verdict counts group by it, so that the report's
table of reasons and the unknown share of each release come from the same query as every other count."""

DIVERGING_ROWS: Final = OneOf("verdict", DIVERGING)
CLASS_KEYS: Final = ("feature", "functions", "difference")
"""What a divergence class is: its text (``records.schema.case_class_of``) is made from these."""
SIZE_COLUMNS: Final = ("source", "destination", "subject")
SIZE_LISTS: Final = ("steps",)
"""A case's size: the characters of these columns together, and of every item of these lists (a sequence
with fewer or shorter steps is the smaller case)."""
SMALLEST_ORDER: Final = ("size", *SIZE_COLUMNS, "server_version", "backend", "run_id", "case_id")
"""How the smallest case of a class is chosen (see ``records.aggregates.DivergenceClass``)."""

PARTITION_ROWS: Final = All((Is("feature", "partition"), IsNot("outcome", ""), JUDGED))
"""Rows of the published messages of partition mappings: those with an `outcome` (a summary has none)."""
PARTITION_KEYS: Final = ("implementation", "server_version", "source", "destination", "partitions", "bucket")
"""Partition buckets count the distinct subjects of each group (a null `bucket`: in no partition)."""

WEIGHTED_ROWS: Final = All((Is("feature", "weighted"), IsNot("outcome", ""), JUDGED))
WEIGHTED_KEYS: Final = ("implementation", "server_version", "source", "weights", "bucket", "outcome")
"""Weighted buckets count the messages of each group: per entry delivered to, delivered elsewhere (a null
`bucket`), lost and unchanged."""
