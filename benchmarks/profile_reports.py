"""Where a report's time goes: each phase of ``reports build`` timed in one process.

    .venv/bin/python benchmarks/profile_reports.py RUN_DIR [--engine duckdb|spark] [--repeats 1]

Times checking the run directories (``records.load``), each query of ``records.queries`` on its own
(for Spark, after the session start, with the family's cached table built first), folding the rows
into `Aggregates`, each part of assembling the report (statistics, matrices) and each renderer. Make
records with ``benchmarks/bench_reports.py --keep RUN_DIR``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nats_conformance.records import queries as sql  # noqa: E402
from nats_conformance.records.load import load_records  # noqa: E402
from nats_conformance.reports.distributions import partition_distributions, weighted_shares  # noqa: E402
from nats_conformance.reports.matrix import compatibility_matrices, context_matrices  # noqa: E402
from nats_conformance.reports.render_html import render_html  # noqa: E402
from nats_conformance.reports.render_markdown import render_markdown  # noqa: E402
from nats_conformance.reports.report import assemble, divergences, verdict_rows  # noqa: E402
from nats_conformance.reports.summary import summary_json  # noqa: E402

Timings = dict[str, float]


def timed(timings: Timings, phase: str, work: Callable[[], Any]) -> Any:
    began = time.perf_counter()
    result = work()
    timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - began
    return result


def duckdb_queries(parts: list[str], timings: Timings) -> dict[str, sql.Rows]:
    """Each query's rows, timed one by one, as `records.duckdb_sql` runs them."""
    import duckdb

    from nats_conformance.records.duckdb_sql import open_records

    results: dict[str, sql.Rows] = {}
    with duckdb.connect() as connection:
        timed(timings, "engine: open the records", lambda: open_records(connection, parts))
        for family in sql.FAMILIES:
            for table, query in family.cached:
                timed(
                    timings,
                    f"cache {table}",
                    lambda q=query, t=table: connection.execute(f"CREATE TEMP TABLE {t} AS {q}"),
                )
            for name, query in family.queries:
                results[name] = timed(
                    timings, f"query {name}", lambda q=query: connection.sql(q).to_arrow_table().to_pylist()
                )
    return results


def spark_queries(parts: list[str], timings: Timings) -> dict[str, sql.Rows]:
    """Each query's rows, timed one by one after the session start (families not run side by side)."""
    from nats_conformance.records.spark import read_records, spark_session

    results: dict[str, sql.Rows] = {}
    began = time.perf_counter()
    with spark_session() as spark:
        timings["engine: start Spark"] = time.perf_counter() - began
        timed(
            timings,
            "engine: open the records",
            lambda: read_records(spark, parts).createOrReplaceTempView(sql.RECORDS),
        )
        for family in sql.FAMILIES:
            cached = []
            for table, query in family.cached:
                frame = spark.sql(query).cache()
                frame.createOrReplaceTempView(table)
                timed(timings, f"cache {table}", frame.count)
                cached.append(frame)
            for name, query in family.queries:
                results[name] = timed(
                    timings,
                    f"query {name}",
                    lambda q=query: [row.asDict(recursive=True) for row in spark.sql(q).collect()],
                )
            for frame in cached:
                frame.unpersist()
    return results


def profile(run_dir: Path, engine: str) -> Timings:
    timings: Timings = {}
    records = timed(timings, "load: check the run directories", lambda: load_records([run_dir]))
    parts = [str(p) for p in records.parts]
    queries = duckdb_queries if engine == "duckdb" else spark_queries
    results = queries(parts, timings)
    aggregates = timed(
        timings, "fold rows into Aggregates", lambda: sql.aggregates(results, rows=records.rows)
    )
    timed(timings, "assemble: divergence classes", lambda: divergences(aggregates))
    timed(timings, "assemble: verdict rows", lambda: verdict_rows(aggregates.verdicts))
    timed(timings, "assemble: partition statistics", lambda: partition_distributions(aggregates.partitions))
    timed(timings, "assemble: weighted statistics", lambda: weighted_shares(aggregates.weighted))
    timed(
        timings,
        "assemble: matrices",
        lambda: (compatibility_matrices(aggregates.verdicts), context_matrices(aggregates.verdicts)),
    )
    report = timed(timings, "assemble: whole report", lambda: assemble(records, aggregates))
    timed(timings, "render: HTML", lambda: render_html(report))
    timed(timings, "render: Markdown", lambda: render_markdown(report))
    timed(timings, "render: summary.json", lambda: summary_json(report))
    sizes = ", ".join(f"{name} {len(rows):,}" for name, rows in results.items())
    print(f"  result rows: {sizes}", file=sys.stderr)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb")
    parser.add_argument("--repeats", type=int, default=1)
    arguments = parser.parse_args()
    runs = [profile(arguments.run_dir, arguments.engine) for _ in range(arguments.repeats)]
    print(f"{arguments.engine}, median of {arguments.repeats}:")
    for phase in runs[0]:
        print(f"  {phase:36s} {statistics.median(run[phase] for run in runs):7.2f} s")


if __name__ == "__main__":
    main()
