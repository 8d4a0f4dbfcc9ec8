"""The verdict counts an exit status is decided on (reference.cli), read from a run's records alone.

`unknown` counts the cases the run could not tell; the subjects of a mapping the server refused count
under `records.schema.REFUSED` instead, as the refusal is judged in a case of its own, and the questions
an adapter does not support under `records.schema.NOT_SUPPORTED`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.parquet as pq

from records.schema import NOT_SUPPORTED, REFUSED, Case
from records.writer import CASES

COLUMNS: Final = ["verdict", "difference"]
BATCH_ROWS: Final = 262_144


def tally_key(verdict: str, difference: str) -> str:
    """Where a case counts: under its verdict, or under `REFUSED` or `NOT_SUPPORTED` (its difference)
    when it is the subject of a refused mapping or a question an adapter does not support."""
    return difference if difference in (REFUSED, NOT_SUPPORTED) else verdict


def verdict_tally(parts: Iterable[Path]) -> Counter[str]:
    """The cases of these part files per verdict, those of a refused mapping under `REFUSED` and those
    an adapter does not support under `NOT_SUPPORTED`."""
    tally: Counter[str] = Counter()
    for part in parts:
        for batch in pq.ParquetFile(part).iter_batches(batch_size=BATCH_ROWS, columns=COLUMNS):
            grouped = pa.Table.from_batches([batch]).group_by(COLUMNS).aggregate([([], "count_all")])
            for row in grouped.to_pylist():
                tally[tally_key(str(row["verdict"]), str(row["difference"]))] += int(row["count_all"])
    return tally


def case_tally(cases: Iterable[Case]) -> Counter[str]:
    """`verdict_tally` of cases in memory (a replay's)."""
    return Counter(tally_key(case.verdict, case.difference) for case in cases)


def run_tally(run_dir: Path) -> Counter[str]:
    """`verdict_tally` of every part file of one run directory."""
    return verdict_tally(sorted((run_dir / CASES).glob("part-*.parquet")))
