"""Fixtures for the report tests: run directories of hand-built records, one Spark session."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from handmade import hand_cases, pair, paired, write_run

from nats_conformance.records.schema import Case


@pytest.fixture
def hand_run(tmp_path: Path) -> Path:
    """A run directory with ``hand_cases()`` in two part files."""
    return write_run(tmp_path / "run-1", hand_cases(), part_rows=150)


@pytest.fixture
def run_of(tmp_path: Path) -> Callable[[list[Case]], Path]:
    """Writes a run directory of the given cases under tmp_path."""
    counter = iter(range(1_000))

    def make(cases: list[Case]) -> Path:
        return write_run(tmp_path / f"run-{next(counter)}", cases)

    return make


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session for every Spark test (start-up takes 7-10 s)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    from nats_conformance.records.spark import spark_session

    with spark_session("local[2]") as session:
        yield session


LEFT_RIGHT = """[[divergence]]
id = "left-right"
feature = "validation"
difference = "reference-accept-server-reject"
link = "https://docs.nats.io/nats-concepts/subject_mapping, 'Subject Mapping'"
note = "The validator rejects left()."
"""


@pytest.fixture
def hand_site(tmp_path: Path) -> Path:
    """The site (duckdb) of two runs: ``hand_cases()``, then the same without its diverging cases; the
    first paired between its releases."""
    from nats_conformance.reports.site import build_site

    first = write_run(tmp_path / "runs" / "run-1", hand_cases())
    # the listed left-right class of 2.10.27, whose case agrees on 2.9.25: a paired change
    (left,) = [
        c
        for c in hand_cases()
        if (c.server_version, c.functions, c.verdict) == ("2.10.27", "left", "expected")
    ]
    paired(first, (left, pair(left, "2.9.25", "")))
    write_run(tmp_path / "runs" / "run-2", [c for c in hand_cases() if c.verdict != "diverge"])
    (tmp_path / "expectations.toml").write_text(LEFT_RIGHT)
    build_site([first.parent], tmp_path / "site", expectations=tmp_path / "expectations.toml")
    return tmp_path / "site"
