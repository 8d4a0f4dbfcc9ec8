"""`nats-conformance report` without `--engine`: Spark when pyspark is importable, else DuckDB, and one
stderr line says which."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nats_conformance import main


def test_without_pyspark_the_report_is_built_with_duckdb(
    hand_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # `import pyspark` fails, find_spec finds nothing
    assert main(["report", str(hand_run), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "engine" in line] == [
        "reports: engine duckdb (pyspark is not importable; choose with --engine)"
    ]
    assert any("aggregating with DuckDB" in line for line in err)
    assert (tmp_path / "out" / "summary.json").is_file()


def test_with_pyspark_the_default_is_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    from nats_conformance.reports import build

    monkeypatch.setattr(
        build.importlib.util, "find_spec", lambda name: object() if name == "pyspark" else None
    )
    assert build.default_engine() == "spark"
    monkeypatch.setattr(build.importlib.util, "find_spec", lambda name: None)
    assert build.default_engine() == "duckdb"
