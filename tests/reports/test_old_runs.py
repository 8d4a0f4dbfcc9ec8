"""Runs of an older schema read as the current one (``records.load.upgraded``).

``runs/schema-4`` is a campaign the schema-4 code wrote (the mapping, partition and weighted families on
nats-server 2.14.5, seed 7: partition messages in three buckets, a weighted list's entries and 760
remainders delivered unchanged, its summary row); ``runs/schema-4-summary.json`` is the summary.json
the schema-4 code built from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from handmade import case, write_run

from nats_conformance.records import duckdb_sql
from nats_conformance.records.aggregates import Aggregates
from nats_conformance.records.load import load_records
from nats_conformance.records.schema import SCHEMA_VERSION, case_of
from nats_conformance.records.writer import CASES, cases_table
from nats_conformance.reports.__main__ import main as reports_main

RUNS = Path(__file__).parent / "runs"
SCHEMA_4 = RUNS / "schema-4"
CHANGED = {"records_schema", "generated", "changes", "changes_paired", "changes_not_drawn"}
"""What a summary of the same records says differently now: the schema, the time, and the changes
between releases, which only paired evidence claims since (records.pairs: these runs were never paired)."""
ADDED = {"unknown", "unknown_reasons", "implementations", "distribution_builds", "mutants"}
"""Keys summary.json gained after the stored summary was written (unknown reasons, the implementations
page, distribution builds, mutants runs): what they say of these runs is tested where they are made."""


def duckdb_aggregates(run: Path) -> Aggregates:
    records = load_records([run])
    return duckdb_sql.aggregate([str(p) for p in records.parts], rows=records.rows)


def read_back(parts: list[str]) -> list[dict[str, Any]]:
    """The rows of `parts` as the engines read them (DuckDB's view `records`)."""
    with duckdb.connect() as connection:
        duckdb_sql.open_records(connection, parts)
        relation = connection.sql("SELECT * FROM records ORDER BY case_id")
        return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def without_smallest(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary's parts that do not show records as they are stored (a class's smallest case does)."""
    classes = [{**item, "smallest": None} for item in summary["divergence_classes"]]
    return {key: value for key, value in summary.items() if key not in CHANGED | ADDED} | {
        "divergence_classes": classes
    }


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_schema_4_run_reports_as_the_schema_4_code_reported_it(tmp_path: Path, engine: str) -> None:
    assert reports_main(["build", str(SCHEMA_4), "--out", str(tmp_path), "--engine", engine]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    before = json.loads((RUNS / "schema-4-summary.json").read_text())
    assert (before["records_schema"], summary["records_schema"]) == (4, SCHEMA_VERSION)
    assert without_smallest(summary) == without_smallest(before)
    remainder = "weighted:literal:remainder-delivered"
    (smallest,) = [c["smallest"] for c in summary["divergence_classes"] if c["case_class"] == remainder]
    (stored,) = [c for c in before["divergence_classes"] if c["case_class"] == remainder]
    assert {key: smallest[key] for key in stored["smallest"] if key != "bucket"} == {
        key: value for key, value in stored["smallest"].items() if key != "bucket"
    }
    # bucket -2 of schema 4: a remainder delivered on its own subject
    assert (stored["smallest"]["bucket"], smallest["bucket"], smallest["outcome"], smallest["kind"]) == (
        -2,
        None,
        "unchanged",
        "case",
    )
    shares = {share["label"]: share["count"] for share in summary["weighted"][0]["shares"]}
    assert shares["wt.s.> (unchanged)"] == 760


def test_a_schema_4_run_reads_as_its_rows_written_in_schema_5(tmp_path: Path) -> None:
    """Each row as the engines read it, written again by the schema-5 writer, aggregates the same; the
    rows show every kind and outcome of the run."""
    cases = [case_of(row) for row in read_back([str(part) for part in load_records([SCHEMA_4]).parts])]
    kinds = {(c.feature, c.kind, c.outcome, c.bucket is None) for c in cases}
    assert kinds == {
        ("mapping", "case", "", True),
        ("validation", "case", "", True),
        ("partition", "case", "delivered", False),
        ("weighted", "case", "delivered", False),
        ("weighted", "case", "unchanged", True),
        ("weighted", "summary", "", True),
    }
    rewritten = write_run(tmp_path / "schema-5", cases)
    assert duckdb_aggregates(rewritten) == duckdb_aggregates(SCHEMA_4)


@pytest.mark.spark
def test_spark_reads_a_schema_4_run_as_duckdb_does(spark: Any) -> None:
    from nats_conformance.records.spark_sql import aggregate

    records = load_records([SCHEMA_4])
    assert aggregate(spark, [str(p) for p in records.parts], rows=records.rows) == duckdb_aggregates(SCHEMA_4)


SCHEMA_4_ROWS = (
    # feature, subject, expected, observed, partitions, bucket as stored -> kind, outcome, bucket
    ("partition", "p.a", "p.a.1", "p.a.1", 3, 1, "case", "delivered", 1),
    ("partition", "p.b", "p.b.0", "", 3, -1, "case", "lost", None),
    ("partition", "p.c", "p.c.2", "p.c.2|p.c.2", 3, -1, "case", "delivered", None),
    (
        "partition",
        "",
        "uniform over 3 partitions (chi-square p >= 1e-06)",
        "p=0.5",
        3,
        -1,
        "summary",
        "",
        None,
    ),
    ("partition", "", '["a"]', "0", 1, -1, "case", "", None),  # a library's partition question
    ("weighted", "w.a", "w.x.a|(dropped)", "w.x.a", 0, 0, "case", "delivered", 0),
    ("weighted", "w.b", "w.x.b|(dropped)", "", 0, -1, "case", "lost", None),
    ("weighted", "w.c", "w.x.c|(dropped)", "w.c", 0, -2, "case", "unchanged", None),
    ("weighted", "w.d", "w.x.d", "w.y.d", 0, -1, "case", "delivered", None),
    (
        "weighted",
        "",
        "shares w.x.> 50%, (dropped) 50% (chi-square p >= 1e-06)",
        "p=0.5",
        0,
        -1,
        "summary",
        "",
        None,
    ),
    ("weighted", "", "accept", "reject", 0, -1, "case", "", None),  # a list the server refused
    ("mapping", "m.a", "n.a", "n.a", 0, -1, "case", "", None),
)


def test_schema_4_markers_read_as_kinds_outcomes_and_buckets(tmp_path: Path) -> None:
    """A summary was a distribution test's row with no subject; `bucket` -1 a message lost (nothing
    observed) or delivered to no partition or entry, -2 one delivered unchanged."""
    cases = [
        case(
            case_id=index,
            feature=feature,
            subject=subject,
            expected=expected,
            observed=observed,
            partitions=n,
        )
        for index, (feature, subject, expected, observed, n, *_) in enumerate(SCHEMA_4_ROWS)
    ]
    table = cases_table(cases).drop_columns(["kind", "outcome"])
    stored = pa.array([row[5] for row in SCHEMA_4_ROWS], pa.int64())
    table = table.set_column(
        table.schema.get_field_index("bucket"), pa.field("bucket", pa.int64(), False), stored
    )
    (tmp_path / CASES).mkdir()
    pq.write_table(
        table.replace_schema_metadata({b"nats_conformance_schema": b"4"}),
        tmp_path / CASES / "part-00000.parquet",
    )
    rows = read_back([str(tmp_path / CASES / "part-00000.parquet")])
    assert [(row["kind"], row["outcome"], row["bucket"]) for row in rows] == [
        row[6:] for row in SCHEMA_4_ROWS
    ]


SCHEMA_5_DETAILS = (
    # detail as stored -> command, detail
    ("adapter command: python lib.py --fast", "python lib.py --fast", ""),
    (
        "adapter command: ./lib; adapter exited with status 1",
        "./lib",
        "adapter exited with status 1",
    ),
    ("nats: no responders", "", "nats: no responders"),
    ("", "", ""),
)


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_schema_5_adapter_details_read_as_command_and_detail(
    tmp_path: Path, engine: str, request: Any
) -> None:
    """Before schema 6 an adapter's case began its `detail` with its command, then its failure."""
    cases = [case(case_id=index, detail=detail) for index, (detail, *_) in enumerate(SCHEMA_5_DETAILS)]
    (tmp_path / CASES).mkdir()
    part = tmp_path / CASES / "part-00000.parquet"
    pq.write_table(
        cases_table(cases)
        .drop_columns(["command"])
        .replace_schema_metadata({b"nats_conformance_schema": b"5"}),
        part,
    )
    if engine == "spark":
        from nats_conformance.records.spark import read_records

        frame = read_records(request.getfixturevalue("spark"), [str(part)])
        rows = [row.asDict() for row in frame.orderBy("case_id").collect()]
    else:
        rows = read_back([str(part)])
    assert [(row["command"], row["detail"]) for row in rows] == [row[1:] for row in SCHEMA_5_DETAILS]
