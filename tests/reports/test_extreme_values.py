"""Every value a server, an adapter or a generator can produce is recorded and read back exactly (issue 56,
item 2): integers past 64 bits and negative counts, text that is not UTF-8 (surrogate escapes), NUL, very
long subjects and details, through a run's Parquet parts and each aggregation engine's reading of them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nats_conformance.records.duckdb_sql import connect, open_records
from nats_conformance.records.queries import RECORDS
from nats_conformance.records.schema import KINDS, OUTCOMES, VERDICTS, Case, CaseBlock, case_of
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.channels import ServerSpec
from nats_conformance.reference.weighted import WeightedDestination

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

EDGES = (
    0,
    -1,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**32,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    2**64,
    2**200,
    -(2**90),
)
INTEGERS = st.one_of(st.sampled_from(EDGES), st.integers())
CHARACTERS = st.one_of(
    st.characters(codec="utf-8"),
    st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF),  # a byte that is not UTF-8, as read
    st.just("\x00"),
)
TEXTS = st.one_of(
    st.text(CHARACTERS, max_size=40),
    st.builds(
        lambda text, times: text * times, st.text(CHARACTERS, min_size=1, max_size=8), st.integers(1, 3000)
    ),
)
SHORT = st.text(CHARACTERS, max_size=12)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A case whose every column holds a drawn value, the extreme ones often."""
    return Case(
        run_id=draw(SHORT),
        case_id=0,  # the writer's own, given by `recorded`
        implementation=draw(SHORT),
        server_version=draw(SHORT),
        backend=draw(SHORT),
        feature=draw(SHORT),
        functions=draw(SHORT),
        source=draw(TEXTS),
        destination=draw(TEXTS),
        subject=draw(TEXTS),
        expected=draw(TEXTS),
        observed=draw(TEXTS),
        verdict=draw(st.sampled_from(VERDICTS)),
        kind=draw(st.sampled_from(KINDS)),
        detail=draw(TEXTS),
        expectation=draw(SHORT),
        difference=draw(SHORT),
        partitions=draw(INTEGERS),
        bucket=draw(st.none() | INTEGERS),
        outcome=draw(st.sampled_from(("", *OUTCOMES))),
        seed=draw(INTEGERS),
        duration_us=draw(INTEGERS),
        stream_subjects=tuple(draw(st.lists(TEXTS, max_size=3))),
        headers_only=draw(st.booleans()),
        weights=tuple(
            draw(st.lists(st.builds(WeightedDestination, TEXTS, INTEGERS, st.none() | SHORT), max_size=3))
        ),
        layout=tuple(
            draw(
                st.lists(
                    st.builds(ServerSpec, st.lists(SHORT, max_size=3).map(tuple), st.booleans()), max_size=2
                )
            )
        ),
        steps=tuple(draw(st.lists(TEXTS, max_size=3))),
        oracle=draw(SHORT),
        command=draw(TEXTS),
    )


def recorded(run_dir: Path, drawn: list[Case], in_blocks: bool) -> list[Case]:
    """Write `drawn` as one run, each case alone or as a block of its own; the cases as written (their
    ids given by the writer)."""
    written = []
    with RecordWriter(run_dir, part_rows=7) as writer:
        for given in drawn:
            case = replace(given, case_id=writer.next_case_id())
            if in_blocks:
                writer.add_block(
                    CaseBlock(
                        case, [case.case_id], [case.subject], [case.expected], [case.observed], [case.bucket]
                    )
                )
            else:
                writer.add(case)
            written.append(case)
    assert writer.unwritten == 0
    return written


def by_id(rows: list[dict[str, Any]]) -> list[Case]:
    return sorted((case_of(row) for row in rows), key=lambda case: case.case_id)


def parts(run_dir: Path) -> list[str]:
    return sorted(str(path) for path in (run_dir / "cases").glob("*.parquet"))


@pytest.fixture(scope="module")
def duckdb() -> Iterator[DuckDBPyConnection]:
    connection = connect()
    yield connection
    connection.close()


def read_by_duckdb(connection: DuckDBPyConnection, run_dir: Path) -> list[Case]:
    open_records(connection, parts(run_dir))
    try:
        result = connection.sql(f"SELECT * FROM {RECORDS}")
        return by_id([dict(zip(result.columns, row, strict=True)) for row in result.fetchall()])
    finally:
        connection.execute(f"DROP VIEW {RECORDS}")


PROPERTY = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@PROPERTY
@given(drawn=st.lists(cases(), min_size=1, max_size=12), in_blocks=st.booleans())
def test_every_value_reads_back_exactly_from_parquet_and_duckdb(
    tmp_path_factory: pytest.TempPathFactory, duckdb: DuckDBPyConnection, drawn: list[Case], in_blocks: bool
) -> None:
    run_dir = tmp_path_factory.mktemp("run")
    written = recorded(run_dir, drawn, in_blocks)
    assert by_id(pq.read_table(parts(run_dir)).to_pylist()) == written
    assert read_by_duckdb(duckdb, run_dir) == written


@pytest.mark.spark
@settings(PROPERTY, max_examples=5)
@given(drawn=st.lists(cases(), min_size=1, max_size=25), in_blocks=st.booleans())
def test_every_value_reads_back_exactly_from_spark(
    tmp_path_factory: pytest.TempPathFactory, spark: Any, drawn: list[Case], in_blocks: bool
) -> None:
    from nats_conformance.records.spark import read_records

    run_dir = tmp_path_factory.mktemp("run")
    written = recorded(run_dir, drawn, in_blocks)
    rows = [row.asDict(recursive=True) for row in read_records(spark, parts(run_dir)).collect()]
    assert by_id(rows) == written


def test_a_report_and_a_site_of_extreme_divergences_are_written(tmp_path: Path) -> None:
    """The exact values read back (bytes that are not UTF-8 among them) are shown as `\\xNN` in every
    page: a site of such a run ended in a UnicodeEncodeError traceback before."""
    from nats_conformance.reports.build import build_report
    from nats_conformance.reports.site import build_site

    odd = Case(
        **{
            "run_id": "r\udce6",
            "implementation": "nats-server",
            "case_id": 0,
            "server_version": "2.14.10",
            "backend": "process",
            "feature": "partition",
            "functions": "partition",
            "source": "m.*",
            "destination": "p.{{partition(9223372036854775808,1)}}",
            "subject": "m.\udce6",
            "expected": "p.0.\udce6",
            "observed": "p.1.\udce6\x00",
            "verdict": "diverge",
            "difference": "wrong-subject",
            "partitions": 2**63,
        }
    )
    run_dir = tmp_path / "run"
    recorded(run_dir, [odd, replace(odd, verdict="agree", difference="", observed=odd.expected)], False)
    built = build_report([run_dir], tmp_path / "report", engine="duckdb")
    index = build_site([run_dir], tmp_path / "site", engine="duckdb")
    replay = "--partitions 9223372036854775808 --subject 'm.\\xe6'"  # the exact count, the byte shown
    assert replay in built.markdown.read_text(encoding="utf-8")
    pages = "".join(path.read_text(encoding="utf-8") for path in index.parent.rglob("*.html"))
    assert "m.\\xe6" in pages
