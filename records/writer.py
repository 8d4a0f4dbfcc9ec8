"""Buffered Parquet writing of case records into a run directory, plus its manifest.

A run directory holds `cases/part-NNNNN.parquet` files and `manifest.json` (run id, schema version,
settings, seeds, and the verdict counts per feature, which always add up to the number of cases).
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections import Counter
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from records.schema import COLUMNS, SCHEMA, SCHEMA_VERSION, VERDICTS, Case
from reference.errors import ConformanceError

MANIFEST = "manifest.json"
ROW = attrgetter(*COLUMNS)
"""A case as a tuple in column order (dataclasses.astuple deep-copies and is ten times slower)."""
CASES = "cases"


class RecordsError(ConformanceError):
    """Records could not be written or read (a full disk, a corrupt file, a newer schema)."""


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def printable(text: str) -> str:
    """Text with bytes that are not UTF-8 (kept as surrogate escapes by the reference and the tap, so
    that byte-level results compare exactly) written as `\\xNN`."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _column(values: tuple[Any, ...], kind: pa.DataType) -> pa.Array:
    try:
        return pa.array(values, type=kind)
    except UnicodeEncodeError:
        return pa.array([printable(value) for value in values], type=kind)


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
        self._parts = 0
        self._ids = itertools.count()
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
        if case.verdict not in VERDICTS:
            raise ValueError(f"'verdict' must be one of {', '.join(VERDICTS)} (got {case.verdict!r})")
        self.counts[(case.feature, case.verdict)] += 1
        self._rows.append(ROW(case))
        if len(self._rows) >= self.part_rows:
            self.flush()

    def extend(self, cases: list[Case]) -> None:
        for case in cases:
            self.add(case)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def flush(self) -> None:
        """Write buffered rows as one Parquet part; on failure they are counted as unwritten."""
        if not self._rows:
            return
        rows, self._rows = self._rows, []
        columns = list(zip(*rows, strict=True))
        table = pa.Table.from_arrays(
            [_column(column, SCHEMA.field(name).type) for name, column in zip(COLUMNS, columns, strict=True)],
            schema=SCHEMA,
        )
        path = self.run_dir / CASES / f"part-{self._parts:05d}.parquet"
        try:
            pq.write_table(table, path, compression="zstd")
        except OSError as error:
            self.unwritten += len(rows)
            path.unlink(missing_ok=True)
            raise RecordsError(
                f"cannot write {len(rows)} records to {path.parent}: {error.strerror or error}"
            ) from error
        self._parts += 1
        self.written += len(rows)

    def manifest(self) -> dict[str, Any]:
        by_feature: dict[str, dict[str, int]] = {}
        for (feature, verdict), count in sorted(self.counts.items()):
            by_feature.setdefault(feature, dict.fromkeys(VERDICTS, 0))[verdict] = count
        totals = dict.fromkeys(VERDICTS, 0)
        for (_, verdict), count in self.counts.items():
            totals[verdict] += count
        return {
            "run_id": self.run_id,
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
        """Flush, then write the manifest (also when the flush failed, so the counts survive)."""
        try:
            self.flush()
        finally:
            text = json.dumps(self.manifest(), indent=2, sort_keys=True)
            try:
                (self.run_dir / MANIFEST).write_text(text + "\n")
            except OSError as error:
                raise RecordsError(
                    f"cannot write {self.run_dir / MANIFEST}: {error.strerror or error}"
                ) from error
