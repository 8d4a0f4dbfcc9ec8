"""The Spark engine: the report's queries (``records.queries``) on a SparkSession (``records.spark``).

The families are submitted together from threads, so Spark runs their jobs side by side and fills the
cores that one job's small stages leave idle; a family's cached table is computed by its first query and
reused by the next (https://spark.apache.org/docs/latest/sql-ref-syntax-aux-cache-cache-table.html).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING

from nats_conformance.records.aggregates import Aggregates
from nats_conformance.records.queries import FAMILIES, RECORDS, Family, Rows, aggregates
from nats_conformance.records.spark import read_records

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _run(spark: SparkSession, family: Family) -> dict[str, Rows]:
    cached = [spark.sql(query).cache() for _table, query in family.cached]
    for (table, _query), frame in zip(family.cached, cached, strict=True):
        frame.createOrReplaceTempView(table)
    try:
        return {
            name: [row.asDict(recursive=True) for row in spark.sql(query).collect()]
            for name, query in family.queries
        }
    finally:
        for frame in cached:
            frame.unpersist()


def aggregate(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    rows: int,
    progress: Callable[[str], None] = lambda line: None,
) -> Aggregates:
    """Every aggregation of the report over the part files ``paths`` (``rows`` rows, already counted)."""
    read_records(spark, paths).createOrReplaceTempView(RECORDS)
    results: dict[str, Rows] = {}
    pool = ThreadPoolExecutor(len(FAMILIES), thread_name_prefix="reports-spark")
    try:
        running = {pool.submit(_run, spark, family): family.name for family in FAMILIES}
        for done in as_completed(running):
            results.update(done.result())
            progress(f"{running[done]} done")
    finally:
        # Not waiting: after an error or an interrupt, the other families' jobs end when the session
        # cancels them (`records.spark.spark_session`), not when they complete.
        pool.shutdown(wait=False, cancel_futures=True)
    return aggregates(results, rows=rows)
