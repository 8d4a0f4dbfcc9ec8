"""The one set of counts: the report's verdict counts query (``records.queries``, its rules in
``records.rules``), run by DuckDB over a run's part files, or over cases still in memory (a replay's).
The report, the baseline, the gate and every exit status read these rows, so that no two of them count
a case differently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nats_conformance.records.aggregates import VerdictCount
from nats_conformance.records.duckdb_sql import connect, open_records
from nats_conformance.records.load import corruption_named
from nats_conformance.records.queries import FAMILIES, RECORDS, verdict_counts
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import CASES, cases_table

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

(QUERY,) = (query for family in FAMILIES for name, query in family.queries if name == "verdicts")


def _counted(connection: DuckDBPyConnection) -> tuple[VerdictCount, ...]:
    return verdict_counts(connection.sql(QUERY).to_arrow_table().to_pylist())


def part_counts(parts: Sequence[Path]) -> tuple[VerdictCount, ...]:
    """The verdict counts of these part files (none: no rows)."""
    if not parts:
        return ()
    with corruption_named(parts), connect() as connection:
        open_records(connection, [str(part) for part in parts])
        return _counted(connection)


def case_counts(cases: Iterable[Case]) -> tuple[VerdictCount, ...]:
    """The verdict counts of cases in memory, by the same query."""
    cases = list(cases)
    if not cases:
        return ()
    table = cases_table(cases)
    with connect() as connection:
        connection.register(RECORDS, table)
        return _counted(connection)


def tally_of(counts: Iterable[VerdictCount]) -> Counter[str]:
    """Cases per tally (``records.rules.TALLIED_BY_DIFFERENCE``): what an exit status is decided on."""
    totals: Counter[str] = Counter()
    for item in counts:
        totals[item.tally] += item.count
    return totals


def run_counts(run_dir: Path) -> tuple[VerdictCount, ...]:
    """The verdict counts of every part file of one run directory."""
    return part_counts(sorted((run_dir / CASES).glob("part-*.parquet")))


def run_tally(run_dir: Path) -> Counter[str]:
    """`tally_of` every part file of one run directory."""
    return tally_of(run_counts(run_dir))
