"""The report's aggregations with pyarrow and pandas in one process, for comparison with Spark.

Same inputs, same rules and same `Aggregates` as ``reports.aggregate`` (a test checks that both agree on
the same records); used by ``benchmarks/bench_reports.py`` to time one engine against the other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from records.schema import SCHEMA, case_of, weights_of
from reports import rules
from reports.model import (
    UNCLASSIFIED,
    Aggregates,
    BucketCount,
    ClassCount,
    VerdictCount,
    WeightedCount,
)
from reports.releases import Release

MAIN_COLUMNS = [
    "implementation",
    "server_version",
    "feature",
    "functions",
    "verdict",
    "expected",
    "observed",
    "source",
    "destination",
    "subject",
    "partitions",
    "bucket",
    "weights",
]


def _counts(table: pa.Table, keys: list[str]) -> list[dict[str, object]]:
    grouped = table.group_by(keys, use_threads=True).aggregate([([], "count_all")])
    return grouped.to_pylist()  # type: ignore[no-any-return]


def arrow_condition(condition: rules.Condition, table: pa.Table) -> pa.ChunkedArray:
    """A rule's condition (``reports.rules``) as a boolean column of `table`."""
    match condition:
        case rules.Is(column, value):
            return pc.equal(table[column], value)
        case rules.IsNot(column, value):
            return pc.not_equal(table[column], value)
        case rules.Above(column, value):
            return pc.greater(table[column], value)
        case rules.OneOf(column, values):
            return pc.is_in(table[column], pa.array(values))
        case rules.All(parts):
            return reduce(pc.and_, (arrow_condition(part, table) for part in parts))
        case rules.AnyOf(parts):
            return reduce(pc.or_, (arrow_condition(part, table) for part in parts))


def verdict_counts(table: pa.Table) -> list[VerdictCount]:
    evidence: pa.ChunkedArray | pa.Scalar = pa.scalar("")
    for kind, condition in reversed(rules.EVIDENCE):
        evidence = pc.if_else(arrow_condition(condition, table), kind, evidence)
    keys = list(rules.VERDICT_KEYS)
    narrow = table.select(keys).append_column("evidence", evidence)
    return [
        VerdictCount(
            Release(str(r["implementation"]), str(r["server_version"])),
            str(r["feature"]),
            str(r["functions"]),
            str(r["verdict"]),
            str(r["evidence"]),
            int(r["count_all"]),  # type: ignore[call-overload]
        )
        for r in _counts(narrow, [*keys, "evidence"])
    ]


def partition_buckets(table: pa.Table) -> list[BucketCount]:
    keys = list(rules.PARTITION_KEYS)
    rows = table.filter(arrow_condition(rules.PARTITION_ROWS, table)).select([*keys, "subject"])
    distinct = rows.group_by([*keys, "subject"]).aggregate([])
    return [
        BucketCount(
            Release(str(r["implementation"]), str(r["server_version"])),
            str(r["source"]),
            str(r["destination"]),
            int(r["partitions"]),  # type: ignore[call-overload]
            int(r["bucket"]),  # type: ignore[call-overload]
            int(r["count_all"]),  # type: ignore[call-overload]
        )
        for r in _counts(distinct, keys)
    ]


def weighted_buckets(table: pa.Table) -> list[WeightedCount]:
    keys = list(rules.WEIGHTED_KEYS)
    rows = table.filter(arrow_condition(rules.WEIGHTED_ROWS, table))
    # pyarrow groups by scalar keys only: the list is grouped by its JSON text and read back.
    texts = pa.array([json.dumps(items) for items in rows["weights"].to_pylist()], pa.string())
    narrow = rows.select(keys).set_column(keys.index("weights"), "weights", texts)
    narrow = narrow.append_column("delivered", arrow_condition(rules.DELIVERED, rows))
    return [
        WeightedCount(
            Release(str(r["implementation"]), str(r["server_version"])),
            str(r["source"]),
            weights_of(json.loads(str(r["weights"]))),
            int(r["bucket"]),  # type: ignore[call-overload]
            bool(r["delivered"]),
            int(r["count_all"]),  # type: ignore[call-overload]
        )
        for r in _counts(narrow, [*keys, "delivered"])
    ]


def class_counts(dataset: ds.Dataset) -> list[ClassCount]:
    diverging = dataset.to_table(
        filter=pc.field(rules.DIVERGING_ROWS.column).isin(list(rules.DIVERGING_ROWS.values))
    )
    frame = diverging.to_pandas()
    if frame.empty:
        return []
    frame["size"] = sum(frame[column].str.len() for column in rules.SIZE_COLUMNS) + sum(
        frame[column].map(lambda items: sum(len(item) for item in items)) for column in rules.SIZE_LISTS
    )
    out = []
    for _, group in frame.groupby(list(rules.CLASS_KEYS), sort=False):
        smallest = case_of(group.sort_values(list(rules.SMALLEST_ORDER), kind="stable").iloc[0])
        releases = {
            Release(str(i), str(v))
            for i, v in zip(group["implementation"], group["server_version"], strict=True)
        }
        out.append(
            ClassCount(
                case_class=smallest.case_class or UNCLASSIFIED,
                diverge=int((group["verdict"] == "diverge").sum()),
                expected=int((group["verdict"] == "expected").sum()),
                releases=tuple(releases),
                expectations=tuple({str(e) for e in group["expectation"] if e}),
                smallest=smallest,
            )
        )
    return out


def aggregate(paths: Sequence[str], *, rows: int) -> Aggregates:
    """Every aggregation of the report over the part files ``paths``, with pyarrow and pandas."""
    dataset = ds.dataset(list(paths), format="parquet", schema=SCHEMA)
    table = dataset.to_table(columns=MAIN_COLUMNS)
    return Aggregates(
        rows=rows,
        verdicts=tuple(verdict_counts(table)),
        classes=tuple(class_counts(dataset)),
        partitions=tuple(partition_buckets(table)),
        weighted=tuple(weighted_buckets(table)),
    ).normalised()
