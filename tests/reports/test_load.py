"""records.load and the command line on bad input: one clear line each, exit status 2, before Spark."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from handmade import case, one_error_line

from nats_conformance.records.errors import ReportError
from nats_conformance.records.load import load_records
from nats_conformance.records.schema import SCHEMA, SCHEMA_VERSION
from nats_conformance.records.writer import CASES, MANIFEST, MANIFEST_FORMAT
from nats_conformance.reports.__main__ import main as reports_main


def a_table(rows: int = 3) -> pa.Table:
    return pa.Table.from_pylist([vars_of(case(case_id=i)) for i in range(rows)], schema=SCHEMA)


def vars_of(item: object) -> dict[str, object]:
    return {name: getattr(item, name) for name in SCHEMA.names}


def test_a_run_directory_and_a_directory_of_runs(run_of: Callable[..., Path], tmp_path: Path) -> None:
    first = run_of([case(case_id=i) for i in range(5)])
    second = run_of([case(case_id=i) for i in range(7)])
    records = load_records([tmp_path])
    assert [run.path for run in records.runs] == [first.resolve(), second.resolve()]
    assert records.rows == 12
    assert records.runs[0].run_id == first.name  # from the manifest
    assert load_records([first, first]).rows == 5  # each run once


def test_missing_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = one_error_line(capsys, ["build", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    assert line == f"nats-conformance: error: run directory {tmp_path / 'nope'} does not exist"


def test_empty_run_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_error_line(capsys, ["build", str(empty), "--out", str(tmp_path / "out")])
    assert f"no case records in {empty}" in line
    assert "empty run directory" in line


def test_run_directory_without_parts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "run" / CASES).mkdir(parents=True)
    line = one_error_line(capsys, ["build", str(tmp_path / "run"), "--out", str(tmp_path / "out")])
    assert "holds no part-*.parquet files" in line


def test_corrupt_file(
    capsys: pytest.CaptureFixture[str], run_of: Callable[..., Path], tmp_path: Path
) -> None:
    run = run_of([case()])
    part = run / CASES / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[: len(part.read_bytes()) // 2])  # truncated on copy
    line = one_error_line(capsys, ["build", str(run), "--out", str(tmp_path / "out")])
    assert line.startswith(f"nats-conformance: error: corrupt records file {part}: ")


def test_not_parquet_at_all(tmp_path: Path) -> None:
    (tmp_path / CASES).mkdir()
    (tmp_path / CASES / "part-00000.parquet").write_text("hello")
    with pytest.raises(ReportError, match=r"^corrupt records file .*part-00000.parquet: "):
        load_records([tmp_path])


def test_records_of_a_newer_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / CASES).mkdir()
    newer = a_table().replace_schema_metadata({b"nats_conformance_schema": str(SCHEMA_VERSION + 1).encode()})
    pq.write_table(newer, tmp_path / CASES / "part-00000.parquet")
    line = one_error_line(capsys, ["build", str(tmp_path), "--out", str(tmp_path / "out")])
    assert (
        f"holds records of schema version {SCHEMA_VERSION + 1}, newer than the {SCHEMA_VERSION} this report "
        "builder reads"
    ) in line


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_records_of_schema_2_read_without_steps(tmp_path: Path, engine: str) -> None:
    """Schema 2 had no `steps`, and 32-bit `partitions` and `bucket` (-1 for none)."""
    (tmp_path / CASES).mkdir()
    older = a_table().drop_columns(["steps", "oracle", "kind", "outcome"])
    for name, values in (("partitions", older["partitions"].to_pylist()), ("bucket", [-1] * older.num_rows)):
        index = older.schema.get_field_index(name)
        older = older.set_column(index, pa.field(name, pa.int32(), False), pa.array(values, pa.int32()))
    older = older.replace_schema_metadata({b"nats_conformance_schema": b"2"})
    pq.write_table(older, tmp_path / CASES / "part-00000.parquet")
    (run,) = load_records([tmp_path]).runs
    assert run.rows == older.num_rows
    assert reports_main(["build", str(tmp_path), "--out", str(tmp_path / "out"), "--engine", engine]) == 0


@pytest.mark.parametrize(
    ("key", "what"), [("manifest_format", "manifest format"), ("schema_version", "schema version")]
)
def test_a_manifest_of_a_newer_format_or_schema(
    capsys: pytest.CaptureFixture[str], run_of: Callable[..., Path], tmp_path: Path, key: str, what: str
) -> None:
    run = run_of([case()])
    manifest = json.loads((run / MANIFEST).read_text())
    assert manifest[key] == {"manifest_format": MANIFEST_FORMAT, "schema_version": SCHEMA_VERSION}[key]
    (run / MANIFEST).write_text(json.dumps({**manifest, key: manifest[key] + 1}))
    for argv in (["build", str(run), "--out", str(tmp_path / "out")], ["baseline", str(run), "--out", "b"]):
        line = one_error_line(capsys, argv)
        assert line == (
            f"nats-conformance: error: {run / MANIFEST} is of {what} {manifest[key] + 1}, newer than the "
            f"{manifest[key]} this report builder reads; update nats-conformance"
        )


def test_parquet_that_is_not_case_records(tmp_path: Path) -> None:
    (tmp_path / CASES).mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / CASES / "part-00000.parquet")
    with pytest.raises(ReportError, match="is not a case-records file"):
        load_records([tmp_path])


def test_records_missing_a_column(tmp_path: Path) -> None:
    (tmp_path / CASES).mkdir()
    pq.write_table(a_table().drop_columns(["bucket"]), tmp_path / CASES / "part-00000.parquet")
    with pytest.raises(
        ReportError, match=rf"lacks the column\(s\) bucket of schema version {SCHEMA_VERSION}"
    ):
        load_records([tmp_path])


def test_corrupt_manifest(run_of: Callable[..., Path]) -> None:
    run = run_of([case()])
    (run / "manifest.json").write_text("{")
    with pytest.raises(ReportError, match=r"^corrupt manifest"):
        load_records([run])


def test_a_run_without_manifest_is_read(run_of: Callable[..., Path]) -> None:
    run = run_of([case()])
    (run / "manifest.json").unlink()
    assert load_records([run]).runs[0].manifest == {}


def test_an_unknown_spark_master_is_refused_before_spark_starts(
    capsys: pytest.CaptureFixture[str], run_of: Callable[..., Path], tmp_path: Path
) -> None:
    run = run_of([case()])
    line = one_error_line(
        capsys, ["build", str(run), "--out", str(tmp_path / "out"), "--master", "bogus://x"]
    )
    assert line.endswith(
        "'--master' must be local[*], local[N], spark://HOST:PORT, k8s://URL or yarn (got 'bogus://x')"
    )


def test_a_directory_of_runs_with_an_empty_one_names_it(
    capsys: pytest.CaptureFixture[str], run_of: Callable[..., Path], tmp_path: Path
) -> None:
    run_of([case()])
    empty = tmp_path / "failed-run"
    (empty / CASES).mkdir(parents=True)
    line = one_error_line(capsys, ["build", str(tmp_path), "--out", str(tmp_path / "out")])
    assert line == (
        f"nats-conformance: error: no case records in {empty}: {empty / CASES} holds no part-*.parquet "
        "files (a campaign that failed before its first case? remove the directory)"
    )
