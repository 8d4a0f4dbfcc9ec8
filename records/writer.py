"""Buffered Parquet writing of case records into a run directory, plus its manifest.

A run directory holds `cases/part-NNNNN.parquet` files and `manifest.json` (run id, schema version,
settings, seeds, and the verdict counts per feature, which always add up to the number of cases).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from records.casefile import size, write_case_files
from records.schema import (
    COLUMNS,
    PER_CASE,
    SCHEMA,
    SCHEMA_VERSION,
    VERDICTS,
    Case,
    CaseBlock,
    arrow_value,
)
from reference.errors import ConformanceError

MANIFEST = "manifest.json"
MANIFEST_FORMAT: Final = 1
"""Version of the manifest's own layout (its keys); readers refuse a newer one, like a newer schema."""
ROW = attrgetter(*COLUMNS)
"""A case as a tuple in column order (dataclasses.astuple deep-copies and is ten times slower)."""
CASES = "cases"
UNIQUE_PER_CASE: Final = ("case_id", "subject", "expected", "observed", "detail")
NESTED: Final = ("weights", "layout")
"""Columns whose values `records.schema.arrow_value` converts (dataclasses to dicts) before pyarrow."""
DICTIONARY_COLUMNS: Final = [
    name for name in COLUMNS if name not in UNIQUE_PER_CASE and not pa.types.is_list(SCHEMA.field(name).type)
]
"""Columns with few distinct values per part; dictionary-encoding the per-case ones only costs time."""


class RecordsError(ConformanceError):
    """Records could not be written or read (a full disk, a corrupt file, a newer schema); `rows` is
    how many records a failed write lost."""

    def __init__(self, message: str, *, rows: int = 0) -> None:
        super().__init__(message)
        self.rows = rows


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def printable(text: str) -> str:
    """Text with bytes that are not UTF-8 (kept as surrogate escapes by the reference and the tap, so
    that byte-level results compare exactly) written as `\\xNN`."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _column(values: Sequence[Any], kind: pa.DataType, name: str = "") -> pa.Array:
    if name in NESTED:
        values = [arrow_value(name, value) for value in values]
    try:
        return pa.array(values, type=kind)
    except UnicodeEncodeError:
        if kind != pa.string():
            raise
        return pa.array([printable(value) for value in values], type=kind)


def _check_verdict(case: Case) -> None:
    if case.verdict not in VERDICTS:
        raise ValueError(f"'verdict' must be one of {', '.join(VERDICTS)} (got {case.verdict!r})")


def _block_table(block: CaseBlock) -> pa.Table:
    """A block as an Arrow table: per-case columns from its lists, the others repeated."""
    size = len(block)
    per_case: dict[str, Sequence[Any]] = {
        "case_id": block.case_ids,
        "subject": block.subjects,
        "expected": block.expected,
        "observed": block.observed,
        "bucket": block.buckets if block.buckets is not None else [block.shared.bucket] * size,
    }
    arrays = []
    converted: dict[int, pa.Array] = {}
    for name in COLUMNS:
        kind = SCHEMA.field(name).type
        if name in PER_CASE:
            values = per_case[name]
            if id(values) not in converted:  # observed is often the very list of expected subjects
                converted[id(values)] = _column(values, kind)
            arrays.append(converted[id(values)])
        else:
            arrays.append(_repeated(arrow_value(name, getattr(block.shared, name)), kind, size))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _repeated(value: Any, kind: pa.DataType, size: int) -> pa.Array:
    """`value` `size` times. Nested values are taken from a one-element array (Arrow's repeat of a list
    scalar is about forty times slower)."""
    if pa.types.is_list(kind):
        return pa.array([value], kind).take(pa.repeat(pa.scalar(0, pa.int32()), size))
    return pa.repeat(pa.scalar(value if kind != pa.string() else printable(value), kind), size)


ERRNO_IN_TEXT = re.compile(r"\[errno (\d+)\]")


def reason(error: OSError) -> str:
    """The system's wording of an I/O error (Arrow wraps it as 'Error writing bytes... [errno 28] ...')."""
    found = ERRNO_IN_TEXT.search(str(error))
    code = error.errno or (int(found[1]) if found else None)
    return os.strerror(code) if code else str(error)


def _write_part(table: pa.Table, path: Path, rows: int) -> int:
    """Write one part (in the writer thread: Parquet encoding releases the GIL); returns its rows."""
    try:
        pq.write_table(table, path, compression="zstd", use_dictionary=DICTIONARY_COLUMNS)
    except OSError as error:
        path.unlink(missing_ok=True)
        message = f"cannot write {rows} records to {path.parent}: {reason(error)}"
        raise RecordsError(message, rows=rows) from error
    return rows


class RecordWriter:
    """Collects `Case` rows and writes them in Parquet parts of `part_rows` rows."""

    def __init__(
        self,
        run_dir: Path,
        *,
        run_id: str | None = None,
        settings: dict[str, Any] | None = None,
        part_rows: int = 250_000,
    ) -> None:
        self.run_dir = run_dir
        self.run_id = run_id or new_run_id()
        self.settings = dict(settings or {})
        self.part_rows = part_rows
        self.counts: Counter[tuple[str, str]] = Counter()
        self.written = 0
        self.unwritten = 0
        self._rows: list[tuple[Any, ...]] = []
        self._blocks: list[CaseBlock] = []
        self._buffered = 0
        self._parts = 0
        self._ids = itertools.count()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nats-conformance-records")
        self._pending: Future[int] | None = None
        self.smallest: dict[tuple[str, str, str], Case] = {}
        self._started = time.time()
        try:
            (run_dir / CASES).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RecordsError(f"cannot create run directory {run_dir}: {error.strerror}") from error

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def next_case_id(self) -> int:
        """A case id unique within this run."""
        return next(self._ids)

    def add(self, case: Case) -> None:
        _check_verdict(case)
        self.counts[(case.feature, case.verdict)] += 1
        if case.verdict in ("diverge", "expected"):
            self._keep_if_smallest(case)
        self._rows.append(ROW(case))
        self._grew(1)

    def add_block(self, block: CaseBlock) -> None:
        """Buffer a block of cases (their ids come from `next_case_id`, like those of single cases)."""
        if not len(block):
            return
        _check_verdict(block.shared)
        self.counts[(block.shared.feature, block.shared.verdict)] += len(block)
        if block.shared.verdict in ("diverge", "expected"):
            shortest = min(range(len(block)), key=lambda i: len(block.subjects[i]))
            self._keep_if_smallest(block.case(shortest))
        self._blocks.append(block)
        self._grew(len(block))

    def _keep_if_smallest(self, case: Case) -> None:
        key = (case.implementation, case.server_version, case.case_class)
        kept = self.smallest.get(key)
        if kept is None or size(case) < size(kept):
            self.smallest[key] = case

    def _grew(self, rows: int) -> None:
        self._buffered += rows
        if self._buffered >= self.part_rows:
            self.flush()

    def extend(self, cases: list[Case]) -> None:
        for case in cases:
            self.add(case)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def flush(self) -> None:
        """Write buffered rows as one Parquet part; on failure they are counted as unwritten."""
        if not self._buffered:
            return
        rows, self._rows = self._rows, []
        blocks, self._blocks = self._blocks, []
        count, self._buffered = self._buffered, 0
        try:
            tables = [_block_table(block) for block in blocks]
            if rows:
                columns = list(zip(*rows, strict=True))
                tables.append(
                    pa.Table.from_arrays(
                        [
                            _column(values, SCHEMA.field(name).type, name)
                            for name, values in zip(COLUMNS, columns, strict=True)
                        ],
                        schema=SCHEMA,
                    )
                )
        except (pa.ArrowException, OverflowError) as error:
            # A value the schema cannot hold: these rows are lost, and said so in one line.
            self.unwritten += count
            raise RecordsError(f"cannot record {count} cases: {error}", rows=count) from error
        path = self.run_dir / CASES / f"part-{self._parts:05d}.parquet"
        self._parts += 1
        previous, self._pending = self._pending, None
        self._pending = self._writer.submit(_write_part, pa.concat_tables(tables), path, count)
        self._settle(previous)

    def settle(self) -> None:
        """Wait until every part handed to the writer thread is written (or counted as unwritten)."""
        pending, self._pending = self._pending, None
        self._settle(pending)

    def _settle(self, pending: Future[int] | None) -> None:
        """Wait for one part; a failed write counts its rows as unwritten and raises."""
        if pending is None:
            return
        try:
            self.written += pending.result()
        except RecordsError as error:
            self.unwritten += error.rows
            raise

    def manifest(self) -> dict[str, Any]:
        by_feature: dict[str, dict[str, int]] = {}
        for (feature, verdict), count in sorted(self.counts.items()):
            by_feature.setdefault(feature, dict.fromkeys(VERDICTS, 0))[verdict] = count
        totals = dict.fromkeys(VERDICTS, 0)
        for (_, verdict), count in self.counts.items():
            totals[verdict] += count
        return {
            "run_id": self.run_id,
            "manifest_format": MANIFEST_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "started": self._started,
            "finished": time.time(),
            "settings": self.settings,
            "cases": self.total,
            "written": self.written,
            "unwritten": self.unwritten,
            "verdicts": totals,
            "features": by_feature,
        }

    def close(self) -> None:
        """Flush and wait for the writes, then write the manifest (also when a write failed, so the
        counts survive)."""
        try:
            self.flush()
        finally:
            try:
                self.settle()
            finally:
                self._writer.shutdown()
                self._write_manifest()
                self._write_case_files()

    def _write_case_files(self) -> None:
        """The smallest case of each divergence class, as case files (records.casefile)."""
        try:
            write_case_files(self.run_dir, self.smallest.values())
        except OSError as error:
            raise RecordsError(f"cannot write case files in {self.run_dir}: {reason(error)}") from error

    def _write_manifest(self) -> None:
        text = json.dumps(self.manifest(), indent=2, sort_keys=True)
        try:
            (self.run_dir / MANIFEST).write_text(text + "\n")
        except OSError as error:
            raise RecordsError(
                f"cannot write {self.run_dir / MANIFEST}: {error.strerror or error}"
            ) from error
