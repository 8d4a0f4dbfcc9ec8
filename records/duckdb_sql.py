"""The embedded engine: the report's queries (``records.queries``) in DuckDB, in this process.

DuckDB reads the part files itself (https://duckdb.org/docs/data/parquet/overview), several columns
and row groups at once on every core; files of an older schema are read by column name, a column that
none of the files has (``records.schema.ADDED_IN``) is null, and the rows are read as the current schema
(``records.load.upgraded``), as in the Spark engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from nats_conformance.records.aggregates import Aggregates
from nats_conformance.records.load import upgraded
from nats_conformance.records.queries import FAMILIES, RECORDS, Rows, aggregates
from nats_conformance.records.schema import COLUMNS
from nats_conformance.reference.errors import interrupts_held

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection


def open_records(connection: DuckDBPyConnection, paths: Sequence[str]) -> None:
    """The view `RECORDS` of the part files ``paths`` on ``connection``, with no progress bar (DuckDB
    draws one on stdout for queries over a couple of seconds)."""
    connection.execute("SET enable_progress_bar = false")
    scan = f"read_parquet({list(paths)!r}, union_by_name = true)"
    present = {str(row[0]) for row in connection.sql(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
    columns = ", ".join(name if name in present else f"NULL AS {name}" for name in COLUMNS)
    connection.execute(f"CREATE VIEW {RECORDS} AS {upgraded(f'(SELECT {columns} FROM {scan}) stored')}")


def connect() -> DuckDBPyConnection:
    """A new in-memory DuckDB connection, the module imported with interrupts held
    (`reference.errors.interrupts_held`): a signal during its import ends the command with its one line."""
    with interrupts_held():
        import duckdb
    return duckdb.connect()


def aggregate(
    paths: Sequence[str], *, rows: int, progress: Callable[[str], None] = lambda line: None
) -> Aggregates:
    """Every aggregation of the report over the part files ``paths`` (``rows`` rows, already counted)."""
    with connect() as connection:
        open_records(connection, paths)
        results: dict[str, Rows] = {}
        for family in FAMILIES:
            for table, query in family.cached:
                connection.execute(f"CREATE TEMP TABLE {table} AS {query}")
            for name, query in family.queries:
                results[name] = connection.sql(query).to_arrow_table().to_pylist()
            progress(f"{family.name} done")
    return aggregates(results, rows=rows)
