"""Buffered Parquet writing of case records into a run directory, plus its manifest: the run's journal.

A run directory holds `cases/part-NNNNN.parquet` files and `manifest.json` (run id, schema version,
settings, seeds, the run's status, and the verdict counts per feature, which always add up to the number
of cases). The manifest is written when the run starts (status `running`, with its owner process and
host) and again whenever a part lands, so its counts are always those of the parts on disk (plus the
rows a failed write lost); cases wait at most `flush_seconds` in memory, also when no further case
arrives (a server that stopped answering): a timer thread hands over what waited half of it. Closing
writes the final status: `completed`, `interrupted` (with the signal) or `crashed`; room for it is
held from the start (`.manifest.json.reserve`, freed to write it), so a run the disk filled up still
ends with its counts and status. A manifest still `running` whose process is gone is a killed run
(`run_status`).

A campaign scaled out on Spark (`suites.engine.scaleout`) has one writer per task, each in its own
process: a shard writer (`shard=NAME`) writes `cases/part-NAME-NNNNN.parquet` and journals its own
counts in `tasks/NAME.json` (the manifest's layout), with case ids from its own range. The driver's
writer, which owns `manifest.json`, counts each task's latest journal (`note_shards`) in its own.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import socket
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from nats_conformance.records.casefile import size, write_case_files
from nats_conformance.records.files import printable
from nats_conformance.records.owners import is_process_alive, process_identity
from nats_conformance.records.schema import (
    COLUMNS,
    EXACT,
    KINDS,
    OUTCOMES,
    PER_CASE,
    SCHEMA,
    SCHEMA_VERSION,
    VERDICTS,
    Case,
    CaseBlock,
    arrow_value,
    texts_of,
)
from nats_conformance.reference.errors import ConformanceError

MANIFEST = "manifest.json"
MANIFEST_FORMAT: Final = 1
"""Version of the manifest's own layout (its keys); readers refuse a newer one, like a newer schema."""
ROW = attrgetter(*COLUMNS)
FEATURE, VERDICT = COLUMNS.index("feature"), COLUMNS.index("verdict")
"""A case as a tuple in column order (dataclasses.astuple deep-copies and is ten times slower)."""
CASES = "cases"
TASKS = "tasks"
"""Where the shard writers of a scaled-out run journal their counts (and log their output)."""
UNIQUE_PER_CASE: Final = ("case_id", "subject", "expected", "observed", "detail")
NESTED: Final = ("weights", "layout")
"""Columns whose values `records.schema.arrow_value` converts (dataclasses to dicts) before pyarrow."""
DICTIONARY_COLUMNS: Final = [
    name for name in COLUMNS if name not in UNIQUE_PER_CASE and not pa.types.is_list(SCHEMA.field(name).type)
]
"""Columns with few distinct values per part; dictionary-encoding the per-case ones only costs time."""


STATUSES: Final = ("running", "completed", "interrupted", "crashed")
RESERVE_BYTES: Final = 16 * 1024
"""Room held for the final manifest, at least (four times the first manifest's size when larger): the
disk a run fills up has none left for it otherwise."""
FLUSH_SECONDS: Final = 2.0
"""At most how long a recorded case waits in memory before its part is written: the timer hands over
buffered cases once the oldest waited half of it, leaving the other half to encode and write them."""
WRITERS: Final = 2
"""Parts encoded at once (Parquet encoding releases the GIL): while cases are added, a part is handed
over with the one before it still being encoded; a caller's `flush` returns with at most the part it
handed over still in flight."""


class RecordsError(ConformanceError):
    """Records could not be written or read (a full disk, a corrupt file, a newer schema); `rows` is
    how many records a failed write lost."""

    def __init__(self, message: str, *, rows: int = 0) -> None:
        super().__init__(message)
        self.rows = rows


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


Exact = dict[int, dict[str, Any]]
"""The exact values of the fields a column could not hold as they were, by row and column name."""


def _column(
    values: Sequence[Any] | pa.Array, kind: pa.DataType, name: str, exact: Exact | None = None
) -> pa.Array:
    """`values` as a column of `kind`. A value the column cannot hold as it is (an integer past the
    column's width, as a drawn partition count of 2**63; text that is not UTF-8; a value of another
    type) is stored as its nearest storable value (`_storable`), and its exact value goes into `exact`
    by row, for the row's `exact` column: the case, and every other of its part, is recorded."""
    if isinstance(values, pa.Array):
        try:
            return values.cast(kind)
        except pa.ArrowInvalid:
            values = texts_of(values)
    if name in NESTED:
        values = [arrow_value(name, value) for value in values]
    elif pa.types.is_list(kind):
        values = [list(value) if isinstance(value, tuple) else value for value in values]
    try:
        return pa.array(values, type=kind)
    except (pa.ArrowException, OverflowError, UnicodeEncodeError, TypeError, ValueError):
        stored = [_storable(value, kind) for value in values]
        if exact is not None:
            for row, (value, kept) in enumerate(zip(values, stored, strict=True)):
                if kept != value:
                    exact.setdefault(row, {})[name] = value
        return pa.array(stored, type=kind)


def _storable(value: Any, kind: pa.DataType) -> Any:
    """The value nearest to `value` that a column of `kind` holds: an integer within the width, text with
    bytes that are not UTF-8 as `printable` writes them, lists and structs item by item, and the type's
    empty value for a value of another type."""
    if value is None:
        return None
    if pa.types.is_integer(kind):
        if not isinstance(value, int) or isinstance(value, bool):
            return 0
        bits = kind.bit_width - (1 if pa.types.is_signed_integer(kind) else 0)
        low = -(2**bits) if pa.types.is_signed_integer(kind) else 0
        return min(max(value, low), 2**bits - 1)
    if pa.types.is_string(kind):
        return printable(value) if isinstance(value, str) else ""
    if pa.types.is_boolean(kind):
        return value if isinstance(value, bool) else False
    if pa.types.is_list(kind):
        items = value if isinstance(value, (list, tuple)) else []
        return [_storable(item, kind.value_type) for item in items]
    if pa.types.is_struct(kind):
        given = value if isinstance(value, Mapping) else {}
        return {field.name: _storable(given.get(field.name), field.type) for field in kind}
    return value


def exact_column(exact: Exact, rows: int) -> pa.Array:
    """The `exact` column: each row's exact values as JSON (non-ASCII and surrogate escapes written as
    `\\uXXXX`, so that any text survives), empty where every value was stored as it was."""
    return pa.array(
        [json.dumps(exact[row], sort_keys=True, default=repr) if row in exact else "" for row in range(rows)],
        pa.string(),
    )


def rows_table(rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    """Rows (`ROW` of each case) as a table of the records' schema (`_column`: a value a column cannot hold
    is stored as its nearest storable value, and exactly in the row's `exact` column)."""
    columns = list(zip(*rows, strict=True))
    exact: Exact = {}
    arrays = [
        _column(values, SCHEMA.field(name).type, name, exact)
        for name, values in zip(COLUMNS, columns, strict=True)
        if name != EXACT
    ]
    arrays.insert(COLUMNS.index(EXACT), exact_column(exact, len(rows)))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def cases_table(cases: Iterable[Case]) -> pa.Table:
    """Cases as the table their part file would hold."""
    return rows_table([ROW(case) for case in cases])


def _check(case: Case) -> None:
    """A case's verdict, kind and outcome are among those the schema names (`outcome` may be empty)."""
    for name, allowed in (("verdict", VERDICTS), ("kind", KINDS), ("outcome", ("", *OUTCOMES))):
        if getattr(case, name) not in allowed:
            names = ", ".join(value or "(empty)" for value in allowed)
            raise ValueError(f"{name!r} must be one of {names} (got {getattr(case, name)!r})")


def _blocks_table(blocks: Sequence[CaseBlock]) -> pa.Table:
    """Blocks as one Arrow table: each per-case column from every block's lists, each shared column from
    the blocks' values, taken as many times as each block has cases (one `take` a column: a repeat per
    block and column was most of a short matching campaign's close, 0.13 s for 458 blocks). A value a
    column cannot hold is stored as `_column` says, exactly in the `exact` column of its rows."""
    sizes = [len(block) for block in blocks]
    starts = np.concatenate(([0], np.cumsum(sizes)))
    exact: Exact = {}
    per_block = []
    for number, block in enumerate(blocks):
        own: Exact = {}
        per_block.append(_per_case_columns(block, own))
        for row, values in own.items():
            exact.setdefault(int(starts[number]) + row, {}).update(values)
    index = pa.array(np.repeat(np.arange(len(blocks), dtype=np.int32), sizes))
    arrays = []
    for name in COLUMNS:
        if name in PER_CASE:
            arrays.append(pa.concat_arrays([columns[name] for columns in per_block]))
        elif name == EXACT:
            arrays.append(pa.nulls(0, pa.string()))  # filled below, once every column is known
        else:
            shared = [getattr(block.shared, name) for block in blocks]
            by_block: Exact = {}
            arrays.append(_column(shared, SCHEMA.field(name).type, name, by_block).take(index))
            for number, values in by_block.items():
                for row in range(int(starts[number]), int(starts[number + 1])):
                    exact.setdefault(row, {}).update(values)
    arrays[COLUMNS.index(EXACT)] = exact_column(exact, int(starts[-1]))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _per_case_columns(block: CaseBlock, exact: Exact) -> dict[str, pa.Array]:
    """A block's per-case columns as Arrow arrays of the schema's types (`_column`, with `exact`)."""
    per_case: dict[str, Sequence[Any]] = {
        "case_id": block.case_ids,
        "subject": block.subjects,
        "expected": block.expected,
        "observed": block.observed,
        "bucket": block.buckets if block.buckets is not None else [block.shared.bucket] * len(block),
    }
    columns: dict[str, pa.Array] = {}
    converted: dict[int, tuple[pa.Array, Exact]] = {}
    for name in PER_CASE:
        values = per_case[name]
        if id(values) not in converted:  # observed is often the very list of expected subjects
            own: Exact = {}
            converted[id(values)] = _column(values, SCHEMA.field(name).type, name, own), own
        columns[name], own = converted[id(values)]
        for row, kept in own.items():
            exact.setdefault(row, {})[name] = next(iter(kept.values()))
    return columns


ERRNO_IN_TEXT = re.compile(r"\[errno (\d+)\]")


def reason(error: OSError) -> str:
    """The system's wording of an I/O error (Arrow wraps it as 'Error writing bytes... [errno 28] ...')."""
    found = ERRNO_IN_TEXT.search(str(error))
    code = error.errno or (int(found[1]) if found else None)
    return os.strerror(code) if code else str(error)


def _write_part(table: pa.Table, path: Path, rows: int) -> int:
    """Write one part (in the writer thread: Parquet encoding releases the GIL) under a temporary name,
    then give it its own, so that a killed run never leaves half a part; returns its rows."""
    staged = path.with_name(f".{path.name}.tmp")
    try:
        pq.write_table(table, staged, compression="zstd", use_dictionary=DICTIONARY_COLUMNS)
        os.replace(staged, path)
    except OSError as error:
        staged.unlink(missing_ok=True)
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
        flush_seconds: float = FLUSH_SECONDS,
        shard: str = "",
        first_case_id: int = 0,
    ) -> None:
        self.run_dir = run_dir.absolute()
        """Absolute: the process may change its working directory while the writer runs (a test's
        `monkeypatch.chdir`), and its timer thread writes parts at any moment."""
        self.run_id = run_id or new_run_id()
        self.settings = dict(settings or {})
        self.part_rows = part_rows
        self.flush_seconds = flush_seconds
        self.shard = shard
        """A shard writer's name: its parts are `part-NAME-NNNNN`, its journal `tasks/NAME.json`, and it
        writes no case files (the driver does, once for the run)."""
        self.counts: Counter[tuple[str, str]] = Counter()
        """Cases added, by (feature, verdict)."""
        self.settled: Counter[tuple[str, str]] = Counter()
        """Cases of the parts that landed (or whose write failed), by (feature, verdict)."""
        self.written = 0
        self.unwritten = 0
        self.lost: Counter[tuple[str, str]] = Counter()
        """Cases whose records could not be written, by (feature, verdict): a journal a task could not
        close is counted again from its parts on disk and these (`suites.engine.scaleout.cancelled`)."""
        self.status = "running"
        self.signal = ""
        self.restarts: list[dict[str, str]] = []
        """Servers restarted during the run: target, family and why."""
        self.tasks: list[dict[str, Any]] = []
        """How each task of a scaled-out run ended (the driver's writer)."""
        self.judgements: list[dict[str, Any]] = []
        self.implementations: list[dict[str, Any]] = []
        """What each adapter target said of itself (`note_implementation`): the implementations page."""
        """Each adapter target judged by a release's engine (`--judge-by engine`, `suites.judgement`)."""
        self._shards: dict[str, dict[str, Any]] = {}
        """The latest journal of each shard writer of this run (the driver's writer)."""
        self._journal = threading.Lock()
        """Held while the settled counts change and while the manifest is written (both threads)."""
        self._buffer = threading.Lock()
        """Held while cases are buffered or handed over (the caller's thread and the timer's)."""
        self._oldest: float | None = None
        """When the oldest buffered case was added (None: nothing buffered)."""
        self._closing = threading.Event()
        self._rows: list[tuple[Any, ...]] = []
        self._blocks: list[CaseBlock] = []
        self._buffered = 0
        self._parts = 0
        self.next_case_id: Callable[[], int] = itertools.count(first_case_id).__next__
        """A case id unique within this run (the counter's own `__next__`: a block of a million cases
        takes its ids with no Python call per id)."""
        self._writer = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="nats-conformance-records")
        self._pending: deque[Future[int]] = deque()
        self.smallest: dict[tuple[str, str, str], Case] = {}
        self._started = time.time()
        try:
            (run_dir / CASES).mkdir(parents=True, exist_ok=True)
            if shard:
                (run_dir / TASKS).mkdir(exist_ok=True)
        except OSError as error:
            raise RecordsError(f"cannot create run directory {run_dir}: {error.strerror}") from error
        with self._journal:
            size = self._write_manifest()
        self._reserve = self._manifest_path().with_name(f".{self._manifest_path().name}.reserve")
        self._hold_room(max(RESERVE_BYTES, 4 * size))
        self._timer = threading.Thread(
            target=self._hand_over_in_time, name="nats-conformance-flush", daemon=True
        )
        self._timer.start()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def add(self, case: Case) -> None:
        _check(case)
        self.counts[(case.feature, case.verdict)] += 1
        if case.verdict in ("diverge", "expected"):
            self._keep_if_smallest(case)
        with self._buffer:
            self._rows.append(ROW(case))
            self._grew(1)
        self._flush_if_full()

    def add_block(self, block: CaseBlock) -> None:
        """Buffer a block of cases (their ids come from `next_case_id`, like those of single cases)."""
        if not len(block):
            return
        _check(block.shared)
        self.counts[(block.shared.feature, block.shared.verdict)] += len(block)
        if block.shared.verdict in ("diverge", "expected"):
            subjects = texts_of(block.subjects)
            shortest = min(range(len(block)), key=lambda i: len(subjects[i]))
            self._keep_if_smallest(block.case(shortest))
        with self._buffer:
            self._blocks.append(block)
            self._grew(len(block))
        self._flush_if_full()

    def _keep_if_smallest(self, case: Case) -> None:
        key = (case.implementation, case.server_version, case.case_class)
        kept = self.smallest.get(key)
        if kept is None or size(case) < size(kept):
            self.smallest[key] = case

    def _grew(self, rows: int) -> None:
        """Count buffered rows (the buffer lock held)."""
        if self._oldest is None:
            self._oldest = time.monotonic()
        self._buffered += rows

    def _flush_if_full(self) -> None:
        """Hand over a full part, or cases that waited long enough (as the timer does); a part that failed
        to land (one the timer handed over too) raises here, in the caller's thread."""
        if self._buffered >= self.part_rows or self._due():
            self.flush(in_flight=WRITERS)
        while self._pending and (self._pending[0].done() or self.unwritten):
            self._settle(self._pending.popleft())  # once a part failed, wait for its failure to raise

    def _due(self) -> bool:
        """True iff the oldest buffered case waited half of `flush_seconds`."""
        oldest = self._oldest
        return oldest is not None and time.monotonic() - oldest >= self.flush_seconds / 2

    def _hand_over_in_time(self) -> None:
        """The timer thread: hands over buffered cases once the oldest waited half of `flush_seconds`,
        whether or not another case arrives; a part that cannot be written fails the caller's `settle`
        or `close`."""
        wait = self.flush_seconds / 2
        while True:
            oldest = self._oldest
            left = wait if oldest is None else oldest + wait - time.monotonic()
            if self._closing.wait(max(left, 0.01)):
                return
            with self._buffer:
                if self._due():
                    self._hand_over()

    def note_restart(self, target: str, family: str, reason: str) -> None:
        """Journal that `family`'s server of `target` was restarted, and why."""
        with self._journal:
            self.restarts.append({"target": target, "family": family, "reason": reason})

    def note_judgement(self, judgement: dict[str, Any]) -> None:
        """Journal an adapter target's verdict judged by a release's engine (`suites.judgement`)."""
        with self._journal:
            self.judgements.append(judgement)

    def note_implementation(self, described: dict[str, Any]) -> None:
        """Journal what an adapter target is (its hello: implementation, operations, the library function
        answering each; a packaged adapter's language, pinned version and documentation), once each."""
        with self._journal:
            if described not in self.implementations:
                self.implementations.append(described)

    def extend(self, cases: list[Case]) -> None:
        for case in cases:
            self.add(case)

    def note_shards(self, journals: dict[str, dict[str, Any]]) -> None:
        """Count each shard's journal (`tasks/NAME.json`, by NAME) in this run's, in place of its previous
        one; the manifest is written once."""
        with self._journal:
            self._shards.update(journals)
            if self.status == "running":
                self.hold_room(4 * self._write_manifest())

    def note_task(self, outcome: dict[str, Any]) -> None:
        """Journal how a task of a scaled-out run ended."""
        with self._journal:
            self.tasks.append(outcome)

    def keep_smallest(self, cases: Sequence[Case]) -> None:
        """Keep these divergences (a shard's smallest of each class) where they are smaller."""
        for case in cases:
            self._keep_if_smallest(case)

    def _shard_counts(self, key: str = "features") -> Counter[tuple[str, str]]:
        counts: Counter[tuple[str, str]] = Counter()
        for journal in self._shards.values():
            counts.update(untallied(journal.get(key, {})))
        return counts

    @property
    def total(self) -> int:
        return sum(self.counts.values()) + sum(self._shard_counts().values())

    def flush(self, in_flight: int = 1) -> None:
        """Write buffered rows as one Parquet part; on failure they are counted as unwritten. Returns once
        at most `in_flight` parts are still being written (the parts a batch fills as it is recorded
        keep both writers busy; a caller's flush leaves only the part it handed over)."""
        with self._buffer:
            if self._rows or self._blocks:
                self._hand_over()
        while len(self._pending) > in_flight:
            self._settle(self._pending.popleft())

    def _hand_over(self) -> None:
        """Build the buffered rows' part and hand it to a writer thread (the buffer lock held)."""
        rows, self._rows = self._rows, []
        blocks, self._blocks = self._blocks, []
        self._buffered = 0
        self._oldest = None
        # Counted from the rows themselves: a signal between a case's count and its row cannot make the
        # journal count a case that is not on disk.
        counts = Counter((row[FEATURE], row[VERDICT]) for row in rows)
        for block in blocks:
            counts[(block.shared.feature, block.shared.verdict)] += len(block)
        count = sum(counts.values())
        tables = [_blocks_table(blocks)] if blocks else []  # every value storable (`_column`)
        if rows:
            tables.append(rows_table(rows))
        prefix = f"{self.shard}-" if self.shard else ""
        path = self.run_dir / CASES / f"part-{prefix}{self._parts:05d}.parquet"
        self._parts += 1
        self._pending.append(self._writer.submit(self._land, pa.concat_tables(tables), path, count, counts))

    def _land(self, table: pa.Table, path: Path, rows: int, counts: Counter[tuple[str, str]]) -> int:
        """Write one part and journal it (in the writer thread)."""
        try:
            _write_part(table, path, rows)
        except RecordsError:
            self._journaled(counts, lost=rows)
            raise
        self._journaled(counts, written=rows)
        return rows

    def _journaled(self, counts: Counter[tuple[str, str]], *, written: int = 0, lost: int = 0) -> None:
        """Count a settled part, then rewrite the manifest of a running run."""
        with self._journal:
            self.settled.update(counts)
            self.written += written
            self.unwritten += lost
            if lost:
                self.lost.update(counts)
            if self.status == "running":
                self._write_manifest()

    def settle(self) -> None:
        """Wait until every part handed to the writer thread is written (or counted as unwritten)."""
        while self._pending:
            self._settle(self._pending.popleft())

    @staticmethod
    def _settle(pending: Future[int]) -> None:
        """Wait for one part; a failed write raises (its rows are counted as unwritten)."""
        pending.result()

    def manifest(self) -> dict[str, Any]:
        """The journal: the counts of the parts settled so far (all of them once closed), its own and
        those of its shards' latest journals."""
        settled = self.settled + self._shard_counts()
        by_feature, totals = tallied(settled)
        shards = self._shards.values()
        return {
            "run_id": self.run_id,
            "manifest_format": MANIFEST_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "status": self.status,
            "signal": self.signal,
            "owner": process_identity(),
            "host": socket.gethostname(),
            "started": self._started,
            "finished": time.time(),
            "settings": self.settings,
            "restarts": self.restarts + [restart for journal in shards for restart in journal["restarts"]],
            "tasks": self.tasks,
            "judgements": self.judgements,
            "implementations": self.implementations,
            "cases": sum(settled.values()),
            "written": self.written + sum(journal["written"] for journal in shards),
            "unwritten": self.unwritten + sum(journal["unwritten"] for journal in shards),
            "lost": tallied(self.lost + self._shard_counts("lost"))[0],
            "verdicts": totals,
            "features": by_feature,
        }

    def close(self, status: str = "completed", *, signal: str = "") -> None:
        """Flush and wait for the writes, then write the manifest with the run's final `status` (also
        when a write failed, so the counts survive); `signal` names what interrupted it."""
        if status not in STATUSES:
            raise ValueError(f"'status' must be one of {', '.join(STATUSES)} (got {status!r})")
        if self.status != "running":
            return
        self._closing.set()
        self._timer.join()
        failed = True
        try:
            self.flush()
            failed = False
        finally:
            try:
                self.settle()
            except BaseException:
                failed = True
                raise
            finally:
                self._writer.shutdown()
                with self._journal:
                    # records that could not be written: never journaled `completed` (a resumed sweep
                    # would keep the task as it is, its lost cases with it)
                    lost = failed or self.unwritten
                    self.status = "crashed" if lost and status == "completed" else status
                    self.signal = signal
                    self._write_manifest(room=self._reserve)
                if not self.shard:
                    self._write_case_files()

    def _write_case_files(self) -> None:
        """The smallest case of each divergence class, as case files (records.casefile)."""
        try:
            write_case_files(self.run_dir, self.smallest.values())
        except OSError as error:
            raise RecordsError(f"cannot write case files in {self.run_dir}: {reason(error)}") from error

    def _manifest_path(self) -> Path:
        return self.run_dir / TASKS / f"{self.shard}.json" if self.shard else self.run_dir / MANIFEST

    def _write_manifest(self, room: Path | None = None) -> int:
        """Replace the manifest in one step (a run killed meanwhile leaves the previous one whole);
        returns its size. With `room` (the reserve) the text is written over that file's own blocks,
        which then replaces the manifest: a full disk, whose freed room another writer could take
        first, still takes the final manifest."""
        text = json.dumps(self.manifest(), indent=2, sort_keys=True) + "\n"
        path = self._manifest_path()
        staged = path.with_suffix(".json.tmp")
        data = text.encode()
        try:
            if room is not None and room.exists() and room.stat().st_size >= len(data):
                with room.open("r+b") as file:
                    file.write(data)
                    file.truncate()
                os.replace(room, path)
                return len(data)
            if room is not None:
                room.unlink(missing_ok=True)
            staged.write_text(text)
            os.replace(staged, path)
        except OSError as error:
            staged.unlink(missing_ok=True)
            raise RecordsError(f"cannot write {path}: {error.strerror or error}") from error
        return len(text.encode())

    def _hold_room(self, size: int) -> None:
        """Fill the reserve file with `size` bytes (written, not sparse: a file system counts only the
        blocks written); with no room for them, the run goes on without."""
        try:
            with self._reserve.open("wb") as reserve:
                reserve.write(bytes(size))
        except OSError:
            self._reserve.unlink(missing_ok=True)

    def hold_room(self, size: int) -> None:
        """Hold at least `size` bytes for the final manifest (grown, never shrunk; a reserve that cannot
        grow keeps what it held): the journal of a scaled-out run grows by an entry per task at its end."""
        held = self._reserve.stat().st_size if self._reserve.exists() else 0
        if size <= held:
            return
        try:
            with self._reserve.open("ab") as reserve:
                reserve.write(bytes(size - held))
        except OSError:
            with contextlib.suppress(OSError), self._reserve.open("r+b") as reserve:
                reserve.truncate(held)  # what it held before: blocks of a partial write are given back


def untallied(by_feature: dict[str, dict[str, int]]) -> Counter[tuple[str, str]]:
    """Counts by (feature, verdict) from a journal's counts by feature (`tallied`'s first half)."""
    return Counter(
        {(feature, verdict): n for feature, verdicts in by_feature.items() for verdict, n in verdicts.items()}
    )


def run_status(manifest: dict[str, Any]) -> str:
    """How a run ended, from its manifest: its status, or `killed` for a run still `running` whose
    process on this host is gone (a SIGKILL, a power cut). A manifest of before the journal is
    `completed`; a run directory with none at all never started writing (`killed`)."""
    if not manifest:
        return "killed"
    status = str(manifest.get("status", "completed"))
    if status != "running" or manifest.get("host") != socket.gethostname():
        return status
    return status if is_process_alive(str(manifest.get("owner", ""))) else "killed"


def tallied(counts: Counter[tuple[str, str]]) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Counts by (feature, verdict) as a journal holds them: by feature, every verdict named (sorted),
    and the totals by verdict."""
    by_feature: dict[str, dict[str, int]] = {}
    for (feature, verdict), count in sorted(counts.items()):
        by_feature.setdefault(feature, dict.fromkeys(VERDICTS, 0))[verdict] = count
    totals = dict.fromkeys(VERDICTS, 0)
    for (_, verdict), count in counts.items():
        totals[verdict] += count
    return by_feature, totals
