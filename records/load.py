"""Find the case records of one or many run directories and check them before any Spark work.

A run directory holds ``cases/part-NNNNN.parquet`` and ``manifest.json`` (docs/record-schema.md). A
directory without ``cases/`` whose subdirectories are run directories (such as ``runs/``) stands for all
of them. For a report, a folder holding ``mutants.json`` is a run of ``nats-conformance mutants``
(``records.mutants``), read as such: the campaign runs inside it are its own, never case runs of the
report. Every part file's footer is read here: a file that is not Parquet, lacks the schema-version
metadata, is of a newer schema than ``records.schema.SCHEMA_VERSION`` or lacks a column is refused with
one line naming it, so that Spark only ever sees files it can read. A manifest of a newer manifest
format (``records.writer.MANIFEST_FORMAT``) or naming a newer schema version is refused the same way.

Records of schemas 2 to 5 are read as the current schema in one place, `upgraded`, the SQL through which
both engines open the part files: every rule and query sees one shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from nats_conformance.records.bisection import ReleaseBisection, read_bisection
from nats_conformance.records.coverage import ReleaseCoverage, read_coverage
from nats_conformance.records.errors import ReportError
from nats_conformance.records.expectations import Ended, ExpectationsError, read_endings
from nats_conformance.records.mutants import MutantsRun, read_mutants
from nats_conformance.records.pairs import Paired, PairsError, read_pairs
from nats_conformance.records.schema import ADDED_IN, COLUMNS, SCHEMA_VERSION
from nats_conformance.records.writer import CASES, MANIFEST, MANIFEST_FORMAT, run_status

SCHEMA_KEY = b"nats_conformance_schema"
PARTS = "part-*.parquet"

SUMMARY_BEFORE_5: Final = (
    "feature IN ('partition', 'weighted') AND subject = '' AND expected LIKE '% (chi-square p >= %'"
)
"""A summary row before schema 5: a distribution test's, with no subject, expecting shares or uniformity."""
MESSAGE_BEFORE_5: Final = (
    "subject <> '' AND (feature = 'weighted' OR (feature = 'partition' AND partitions > 0))"
)
"""A published message of a weighted list or partition mapping before schema 5 (a library's partition
question has no subject, a transform question through an adapter no partition count)."""
ADAPTER_BEFORE_6: Final = "command IS NULL AND detail LIKE 'adapter command: %'"
"""An adapter's case before schema 6: its `detail` began with its command, then `; ` and the adapter's
failure, if any."""
FAILURE_BEFORE_6: Final = "instr(detail, '; adapter ')"
UPGRADES: Final = {
    "oracle": "coalesce(oracle, '')",
    "exact": "coalesce(exact, '')",
    "command": (
        f"CASE WHEN {ADAPTER_BEFORE_6} THEN split_part(substr(detail, 18), '; adapter ', 1) "
        "ELSE coalesce(command, '') END"
    ),
    "detail": (
        f"CASE WHEN NOT ({ADAPTER_BEFORE_6}) THEN detail WHEN {FAILURE_BEFORE_6} > 0 "
        f"THEN substr(detail, {FAILURE_BEFORE_6} + 2) ELSE '' END"
    ),
    "kind": f"coalesce(kind, CASE WHEN {SUMMARY_BEFORE_5} THEN 'summary' ELSE 'case' END)",
    "bucket": "CASE WHEN outcome IS NOT NULL OR bucket >= 0 THEN bucket END",
    "outcome": (
        f"coalesce(outcome, CASE WHEN NOT ({MESSAGE_BEFORE_5}) THEN '' WHEN bucket = -2 THEN 'unchanged' "
        "WHEN bucket >= 0 OR observed <> '' THEN 'delivered' ELSE 'lost' END)"
    ),
}
"""How a column of the current schema is read from the stored one (docs/record-schema.md). Before
schema 4 there was no `oracle`; before schema 5 no `kind` and no `outcome` (null when read), and
`bucket` held -1 for no partition or entry, a lost message included, and -2 for a message delivered
unchanged, and a summary had only its empty subject: a message's outcome follows from its bucket and
whether anything was observed. Before schema 6 an adapter's command began its `detail`
(`ADAPTER_BEFORE_6`); before schema 7 there was no `exact`."""


def upgraded(stored: str) -> str:
    """The query reading the relation `stored` (part files of any version this module reads, a column
    absent from them null) as the current schema (`UPGRADES`)."""
    columns = ", ".join(f"{UPGRADES[name]} AS {name}" if name in UPGRADES else name for name in COLUMNS)
    return f"SELECT {columns} FROM {stored}"


@dataclass(frozen=True, slots=True)
class Run:
    """One run directory: its part files, their row count, its manifest (empty if none) and its release
    bisection (``bisection.json``, when ``python -m nats_conformance.suites bisect`` wrote the run)."""

    path: Path
    parts: tuple[Path, ...]
    rows: int
    manifest: dict[str, Any] = field(default_factory=dict)
    bisection: ReleaseBisection | None = None
    coverage: ReleaseCoverage | None = None
    """Its coverage of nats-server's mapping code (``coverage.json``, from ``nats-conformance coverage``)."""
    paired: Paired = field(default_factory=Paired)
    """Its paired replays (``pairs.json``, ``records.pairs``): the only ground of a change."""
    endings: tuple[Ended, ...] = ()
    """The listed divergences it shows ended (``endings.json``, ``records.expectations.Ended``)."""

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.path.name)

    @property
    def status(self) -> str:
        """How the run ended (`records.writer.run_status`): only `completed` is a whole run, and only
        while the rows on disk are as many as its manifest says it wrote (a part deleted or cut short
        after the run makes it `damaged: ...`)."""
        status = run_status(self.manifest)
        written = self.manifest.get("written")
        if status == "completed" and isinstance(written, int) and written != self.rows:
            return f"damaged: {self.rows:,} rows on disk, the manifest says {written:,} were written"
        return status

    @property
    def complete(self) -> bool:
        return self.status == "completed"


@dataclass(frozen=True, slots=True)
class Records:
    """The checked inputs of one report."""

    runs: tuple[Run, ...]
    mutants: tuple[MutantsRun, ...] = ()
    """The runs of `nats-conformance mutants` among them (``records.mutants``)."""

    @property
    def parts(self) -> list[Path]:
        return [part for run in self.runs for part in run.parts]

    @property
    def rows(self) -> int:
        return sum(run.rows for run in self.runs)

    def check_complete(self) -> None:
        """Raise `ReportError` naming the first run that did not complete (interrupted, crashed, killed
        or still running)."""
        for run in self.runs:
            if not run.complete:
                signal = run.manifest.get("signal")
                how = f"{run.status} by {signal}" if signal else run.status
                raise ReportError(
                    f"run {run.path} is incomplete ({how}); pass --allow-incomplete to use it anyway"
                )


def run_directories(path: Path) -> list[Path]:
    """The run directories ``path`` stands for: itself, or its subdirectories that are runs."""
    if not path.exists():
        raise ReportError(f"run directory {path} does not exist")
    if not path.is_dir():
        raise ReportError(f"{path} is not a run directory (expected a directory holding {CASES}/)")
    if (path / CASES).is_dir():
        return [path]
    children = sorted(child for child in path.iterdir() if (child / CASES).is_dir())
    if not children:
        raise ReportError(
            f"no case records in {path}: expected {path / CASES / PARTS} (an empty run directory?)"
        )
    return children


def check_part(path: Path) -> int:
    """The number of rows in one part file, after checking its footer, schema version and columns."""
    try:
        metadata = pq.read_metadata(path)
        schema = metadata.schema.to_arrow_schema()
    except (OSError, pa.ArrowException) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ReportError(f"corrupt records file {path}: {reason}") from error
    version_text = (schema.metadata or {}).get(SCHEMA_KEY)
    if version_text is None:
        raise ReportError(f"{path} is not a case-records file (no nats_conformance_schema metadata)")
    try:
        version = int(version_text)
    except ValueError as error:
        raise ReportError(f"{path} has an unreadable schema version {version_text!r}") from error
    if version > SCHEMA_VERSION:
        raise ReportError(
            f"{path} holds records of schema version {version}, newer than the {SCHEMA_VERSION} this "
            "report builder reads; update nats-conformance"
        )
    missing = [name for name in COLUMNS if name not in schema.names and version >= ADDED_IN.get(name, 0)]
    if missing:
        raise ReportError(f"{path} lacks the column(s) {', '.join(missing)} of schema version {version}")
    return int(metadata.num_rows)


@contextmanager
def corruption_named(parts: Sequence[Path | str]) -> Iterator[None]:
    """Read `parts` with an engine inside: when it fails and a part is damaged inside (its footer, which
    `check_part` reads, intact), that is one `ReportError` naming the part, never the engine's traceback.
    Only on failure are the parts read whole."""
    try:
        yield
    except ReportError:
        raise
    except Exception as error:
        for part in parts:
            try:
                pq.ParquetFile(part).read()
            except (OSError, pa.ArrowException) as damaged:
                reason = (
                    str(damaged).strip().splitlines()[0] if str(damaged).strip() else type(damaged).__name__
                )
                raise ReportError(f"corrupt records file {part}: {reason}") from error
        raise


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The run's manifest, or an empty dict when it has none (a run that never closed)."""
    path = run_dir / MANIFEST
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ReportError(f"corrupt manifest {path}: {error}") from error
    if not isinstance(data, dict):
        raise ReportError(f"corrupt manifest {path}: not a JSON object")
    for key, known, what in (
        ("manifest_format", MANIFEST_FORMAT, "manifest format"),
        ("schema_version", SCHEMA_VERSION, "schema version"),
    ):
        value = data.get(key, 0)
        if not isinstance(value, int):
            raise ReportError(f"corrupt manifest {path}: {key!r} must be a number (got {value!r})")
        if value > known:
            raise ReportError(
                f"{path} is of {what} {value}, newer than the {known} this report builder reads; "
                "update nats-conformance"
            )
    return data


def load_run(run_dir: Path) -> Run:
    parts = tuple(sorted((run_dir / CASES).glob(PARTS)))
    if not parts:
        raise ReportError(
            f"no case records in {run_dir}: {run_dir / CASES} holds no {PARTS} files "
            "(a campaign that failed before its first case? remove the directory)"
        )
    rows = sum(check_part(part) for part in parts)
    try:
        paired, endings = read_pairs(run_dir), read_endings(run_dir)
    except (PairsError, ExpectationsError) as error:
        raise ReportError(str(error)) from error
    return Run(
        run_dir,
        parts,
        rows,
        read_manifest(run_dir),
        read_bisection(run_dir),
        read_coverage(run_dir),
        paired,
        endings,
    )


def load_records(paths: list[Path], *, mutants: bool = False) -> Records:
    """Check every run directory named by ``paths`` (each once, in the order given); with `mutants`, a
    folder holding ``mutants.json`` is read as a mutants run (a report's input).

    Raises:
        ReportError: a missing or empty directory, or a part file that cannot be read (see the module).
    """
    if not paths:
        raise ReportError("no run directory given")
    seen: dict[Path, None] = {}
    found: dict[Path, MutantsRun] = {}
    for path in paths:
        run = read_mutants(path) if mutants else None
        if run is not None:
            found.setdefault(path.resolve(), run)
            continue
        for run_dir in run_directories(path):
            seen.setdefault(run_dir.resolve(), None)
    return Records(tuple(load_run(run_dir) for run_dir in seen), tuple(found.values()))
