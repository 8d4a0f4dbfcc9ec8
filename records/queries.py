"""The report's aggregations, written once as SQL that both engines run: Spark SQL (``records.spark_sql``)
and DuckDB (``records.duckdb_sql``), over a view ``records`` of every part file.

Four families, each one pass over the records and returning a small result:

1. verdict counts per release, feature, function combination, verdict and support evidence;
2. divergence classes: the ``diverge``/``expected`` rows are cached once (a few thousand of millions),
   then tallied per class, release and expectation, and ranked for each class's smallest case;
3. distinct partition keys per mapping, release and bucket, counted as the length of the group's list of
   subjects without repeats (`DISTINCT_SUBJECTS`);
4. weighted-list messages per release, list, bucket and outcome.

The rows each reads, its keys and the evidence rule are ``records.rules``; this module only spells them
in the SQL both engines accept (plain ``GROUP BY``, ``CASE``, ``array_agg``, ``row_number()``; see
https://spark.apache.org/docs/latest/sql-ref-syntax.html and https://duckdb.org/docs/sql/introduction)
and folds the engines' result rows (dicts) into `Aggregates`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from nats_conformance.records import rules, unknowns
from nats_conformance.records.aggregates import (
    DIVERGING,
    UNCLASSIFIED,
    Aggregates,
    BucketCount,
    ClassCount,
    ReleaseTally,
    VerdictCount,
    WeightedCount,
)
from nats_conformance.records.releases import Release
from nats_conformance.records.schema import COLUMNS, case_of, weights_of

RECORDS: Final = "records"
"""The view of every part file that each engine opens before running `FAMILIES`."""
DIVERGING_TABLE: Final = "diverging"

Rows = list[dict[str, Any]]


def literal(value: str | int) -> str:
    """A SQL literal both dialects read the same way (no quotes or backslashes in the rules' texts)."""
    if isinstance(value, int):
        return str(value)
    if "'" in value or "\\" in value:
        raise ValueError(f"rule text {value!r} needs escaping that Spark SQL and DuckDB spell differently")
    return f"'{value}'"


def sql_condition(condition: rules.Condition) -> str:
    """A rule's condition (``records.rules``) as a SQL expression."""
    match condition:
        case rules.Is(column, value):
            return f"{column} = {literal(value)}"
        case rules.IsNot(column, value):
            return f"{column} <> {literal(value)}"
        case rules.OneOf(column, values):
            return f"{column} IN ({', '.join(literal(value) for value in values)})"
        case rules.StartsWith(column, prefix):
            return f"substr({column}, 1, {len(prefix)}) = {literal(prefix)}"
        case rules.All(parts):
            return "(" + " AND ".join(sql_condition(part) for part in parts) + ")"
        case rules.AnyOf(parts):
            return "(" + " OR ".join(sql_condition(part) for part in parts) + ")"


def evidence() -> str:
    """A row's support evidence (``records.rules.EVIDENCE``): the first kind whose condition holds."""
    branches = " ".join(f"WHEN {sql_condition(c)} THEN {literal(kind)}" for kind, c in rules.EVIDENCE)
    return f"CASE {branches} ELSE '' END"


def tally() -> str:
    """A row's tally (``records.rules.TALLIED_BY_DIFFERENCE``): its difference or its verdict."""
    return f"CASE WHEN {sql_condition(rules.TALLIED_BY_DIFFERENCE)} THEN difference ELSE verdict END"


def reason() -> str:
    """An `unknown` row's reason (``records.rules.UNKNOWN_REASONS``): the first whose condition holds, else
    ``unlisted``; '' for any other row."""
    branches = " ".join(f"WHEN {sql_condition(c)} THEN {literal(name)}" for name, c in rules.UNKNOWN_REASONS)
    return (
        f"CASE WHEN NOT ({sql_condition(rules.UNKNOWN)}) THEN '' {branches} "
        f"ELSE {literal(unknowns.UNLISTED)} END"
    )


def size() -> str:
    """A case's size (``records.rules.SIZE_COLUMNS`` and ``SIZE_LISTS``); a list absent from older
    records (null) counts nothing."""
    lengths = [f"length({column})" for column in rules.SIZE_COLUMNS]
    lengths += [f"coalesce(length(concat_ws('', {column})), 0)" for column in rules.SIZE_LISTS]
    return " + ".join(lengths)


def _grouped(keys: Sequence[str], measures: str, where: str = "", table: str = RECORDS) -> str:
    """``measures`` per group of ``keys`` (columns, or ``expression AS name``) of the rows of ``table``
    where ``where`` holds."""
    expressions = [key.split(" AS ")[0] for key in keys]
    filtered = f" WHERE {where}" if where else ""
    return f"SELECT {', '.join(keys)}, {measures} FROM {table}{filtered} GROUP BY {', '.join(expressions)}"


@dataclass(frozen=True, slots=True)
class Family:
    """One aggregation family: tables to cache first (name, query), then its queries (name, query)."""

    name: str
    queries: tuple[tuple[str, str], ...]
    cached: tuple[tuple[str, str], ...] = ()


_COLUMNS: Final = ", ".join(COLUMNS)
DISTINCT_SUBJECTS: Final = "cardinality(array_distinct(array_agg(subject)))"
"""The number of distinct subjects of a group. Equal to ``count(DISTINCT subject)``, but one aggregation
of a few thousand lists, where Spark plans ``count(DISTINCT)`` as a second aggregation over every
(group, subject) pair and its shuffle (3x the CPU on the benchmark's records; DuckDB takes as long)."""
_TALLIES: Final = ", ".join(
    f"sum(CASE WHEN verdict = {literal(verdict)} THEN 1 ELSE 0 END) AS {verdict}" for verdict in DIVERGING
)

FAMILIES: Final = (
    Family(
        "verdict counts",
        (
            (
                "verdicts",
                _grouped(
                    [
                        *rules.VERDICT_KEYS,
                        f"{evidence()} AS evidence",
                        f"{tally()} AS tally",
                        f"{reason()} AS reason",
                    ],
                    "count(*) AS n",
                ),
            ),
        ),
    ),
    Family(
        "divergence classes",
        (
            (
                "tallies",
                _grouped(
                    [
                        *rules.CLASS_KEYS,
                        "implementation",
                        "server_version",
                        "expectation",
                        "oracle",
                    ],
                    _TALLIES,
                    table=DIVERGING_TABLE,
                ),
            ),
            (
                "smallest",
                f"SELECT {_COLUMNS} FROM (SELECT {_COLUMNS}, row_number() OVER (PARTITION BY "
                f"{', '.join(rules.CLASS_KEYS)} ORDER BY "
                f"{', '.join(size() if key == 'size' else key for key in rules.SMALLEST_ORDER)}) AS place "
                f"FROM {DIVERGING_TABLE}) ranked WHERE place = 1",
            ),
        ),
        ((DIVERGING_TABLE, f"SELECT * FROM {RECORDS} WHERE {sql_condition(rules.DIVERGING_ROWS)}"),),
    ),
    Family(
        "partition buckets",
        (
            (
                "partitions",
                _grouped(
                    rules.PARTITION_KEYS, f"{DISTINCT_SUBJECTS} AS n", sql_condition(rules.PARTITION_ROWS)
                ),
            ),
        ),
    ),
    Family(
        "weighted buckets",
        (
            (
                "weighted",
                _grouped(
                    rules.WEIGHTED_KEYS,
                    "count(*) AS n",
                    sql_condition(rules.WEIGHTED_ROWS),
                ),
            ),
        ),
    ),
)
"""Every query of the report: what both engines run."""


def _release(row: Mapping[str, Any]) -> Release:
    return Release(str(row["implementation"]), str(row["server_version"]))


def _bucket(row: Mapping[str, Any]) -> int | None:
    return None if row["bucket"] is None else int(row["bucket"])


def classes(tallies: Rows, smallest: Rows) -> list[ClassCount]:
    """Divergence classes from their tallies per release and expectation and their smallest cases."""
    found = {tuple(row[key] for key in rules.CLASS_KEYS): case_of(row) for row in smallest}
    counts = {
        key: ClassCount(case.case_class or UNCLASSIFIED, 0, 0, (), (), case) for key, case in found.items()
    }
    for row in tallies:
        key = tuple(row[name] for name in rules.CLASS_KEYS)
        count = counts[key]
        n = int(row["diverge"]) + int(row["expected"])
        counts[key] = replace(
            count,
            diverge=count.diverge + int(row["diverge"]),
            expected=count.expected + int(row["expected"]),
            releases=(*count.releases, _release(row)),
            expectations=(*count.expectations, *([str(row["expectation"])] if row["expectation"] else [])),
            oracles=(*count.oracles, *([(str(row["oracle"]), n)] if row["oracle"] else [])),
            by_release=(
                *count.by_release,
                ReleaseTally(
                    _release(row), str(row["expectation"] or ""), int(row["diverge"]), int(row["expected"])
                ),
            ),
        )
    return list(counts.values())


def verdict_counts(rows: Rows) -> tuple[VerdictCount, ...]:
    """`VerdictCount`s from the result rows of the verdict counts query."""
    return tuple(
        VerdictCount(
            _release(r),
            r["feature"],
            r["functions"],
            r["verdict"],
            r["evidence"],
            int(r["n"]),
            r["tally"],
            r["reason"],
        )
        for r in rows
    )


def aggregates(results: Mapping[str, Rows], *, rows: int) -> Aggregates:
    """`Aggregates` from the result rows of every query of `FAMILIES` (by query name)."""
    return Aggregates(
        rows,
        verdict_counts(results["verdicts"]),
        tuple(classes(results["tallies"], results["smallest"])),
        tuple(
            BucketCount(
                _release(r),
                r["source"],
                r["destination"],
                int(r["partitions"]),
                _bucket(r),
                int(r["n"]),
            )
            for r in results["partitions"]
        ),
        tuple(
            WeightedCount(
                _release(r),
                r["source"],
                weights_of(r["weights"]),
                _bucket(r),
                str(r["outcome"]),
                int(r["n"]),
            )
            for r in results["weighted"]
        ),
    ).normalised()
