"""The report's aggregations with pyarrow and pandas in one process, for comparison with Spark.

Same inputs, same rules and same `Aggregates` as ``reports.aggregate`` (a test checks that both agree on
the same records); used by ``benchmarks/bench_reports.py`` to time one engine against the other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from records.schema import SCHEMA, case_of, weights_of
from reports.aggregate import CLASS_KEYS, SMALLEST_ORDER, UNSUPPORTED_EXPECTED
from reports.model import (
    DIVERGING,
    EXERCISED,
    UNCLASSIFIED,
    UNSUPPORTED,
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


def verdict_counts(table: pa.Table) -> list[VerdictCount]:
    validation = pc.equal(table["feature"], "validation")
    unsupported = pc.and_(
        validation,
        pc.and_(pc.equal(table["expected"], UNSUPPORTED_EXPECTED), pc.equal(table["observed"], "reject")),
    )
    accepted = pc.and_(pc.equal(table["expected"], "accept"), pc.equal(table["observed"], "accept"))
    exercised = pc.or_(
        pc.and_(pc.invert(validation), pc.not_equal(table["verdict"], "unknown")),
        pc.and_(validation, accepted),
    )
    evidence = pc.if_else(unsupported, UNSUPPORTED, pc.if_else(exercised, EXERCISED, ""))
    keys = ["implementation", "server_version", "feature", "functions", "verdict"]
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
    keep = pc.and_(
        pc.and_(pc.equal(table["feature"], "partition"), pc.not_equal(table["subject"], "")),
        pc.and_(pc.greater(table["partitions"], 0), pc.not_equal(table["verdict"], "unknown")),
    )
    keys = ["implementation", "server_version", "source", "destination", "partitions"]
    rows = table.filter(keep).select([*keys, "subject", "bucket"])
    distinct = rows.group_by([*keys, "subject", "bucket"]).aggregate([])
    return [
        BucketCount(
            Release(str(r["implementation"]), str(r["server_version"])),
            str(r["source"]),
            str(r["destination"]),
            int(r["partitions"]),  # type: ignore[call-overload]
            int(r["bucket"]),  # type: ignore[call-overload]
            int(r["count_all"]),  # type: ignore[call-overload]
        )
        for r in _counts(distinct, [*keys, "bucket"])
    ]


def weighted_buckets(table: pa.Table) -> list[WeightedCount]:
    keep = pc.and_(
        pc.and_(pc.equal(table["feature"], "weighted"), pc.not_equal(table["subject"], "")),
        pc.not_equal(table["verdict"], "unknown"),
    )
    keys = ["implementation", "server_version", "source", "weights", "bucket"]
    rows = table.filter(keep)
    # pyarrow groups by scalar keys only: the list is grouped by its JSON text and read back.
    texts = pa.array([json.dumps(items) for items in rows["weights"].to_pylist()], pa.string())
    narrow = rows.select(keys).set_column(keys.index("weights"), "weights", texts)
    narrow = narrow.append_column("delivered", pc.not_equal(rows["observed"], ""))
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
    diverging = dataset.to_table(filter=pc.field("verdict").isin(list(DIVERGING)))
    frame = diverging.to_pandas()
    if frame.empty:
        return []
    frame["size"] = frame["source"].str.len() + frame["destination"].str.len() + frame["subject"].str.len()
    out = []
    for _, group in frame.groupby(list(CLASS_KEYS), sort=False):
        smallest = case_of(group.sort_values(list(SMALLEST_ORDER), kind="stable").iloc[0])
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
