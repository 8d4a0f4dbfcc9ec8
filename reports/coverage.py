"""Coverage of nats-server's own code in run directories: the `coverage.json` that `nats-conformance
coverage` writes (format in records/coverage.py), read and checked with the records.

A file that is not such a document (bad JSON, another format, a newer version, a missing field) is
refused with one line naming it, before any aggregation starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from nats_conformance.records.coverage import COVERAGE_FILE, FORMAT, VERSION, percent
from nats_conformance.reports.errors import ReportError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Figure:
    """Statements of one file or function of the surface, and how many a case reached."""

    path: str
    name: str
    """The function's name, '' for a file."""
    statements: int
    covered: int
    line: int = 0
    whole: bool = False
    """A file counted whole (else only the surface's functions in it)."""

    @property
    def percent(self) -> str:
        return percent(self.covered, self.statements)


@dataclass(frozen=True, slots=True)
class Unreached:
    """A block of the surface no case reached: where, in which function, its source and its link."""

    path: str
    function: str
    start: int
    end: int
    statements: int
    url: str
    source: str
    why: str = ""
    """Why no configuration or message can reach it ('' when one can), `records.coverage.UNREACHABLE`."""


@dataclass(frozen=True, slots=True)
class ReleaseCoverage:
    """One run's coverage of the mapping surface of its release."""

    run_id: str
    release: str
    counter_files: int
    engine: bool
    restarts: int
    """Servers restarted after a fault: their counters are lost."""
    statements: int
    covered: int
    files: tuple[Figure, ...]
    functions: tuple[Figure, ...]
    missing: tuple[str, ...]
    unreached: tuple[Unreached, ...]

    @property
    def percent(self) -> str:
        return percent(self.covered, self.statements)

    @property
    def unreachable(self) -> int:
        """Statements of unreached blocks that no configuration or message can reach (`Unreached.why`)."""
        return sum(block.statements for block in self.unreached if block.why)


def read_coverage(run_dir: Path) -> ReleaseCoverage | None:
    """The run's coverage, or None when it has no `coverage.json`.

    Raises:
        ReportError: the file is not a coverage document this builder reads.
    """
    path = run_dir / COVERAGE_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ReportError(f"corrupt coverage file {path}: {error}") from error
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f'{path} is not a coverage file (no "format": "{FORMAT}")')
    if not isinstance(data.get("version"), int) or data["version"] > VERSION:
        raise ReportError(f"{path} has coverage version {data.get('version')!r}; this reads {VERSION}")
    try:
        return ReleaseCoverage(
            run_id=_value(data, "run_id", str),
            release=_value(data, "release", str),
            counter_files=_value(data, "counter_files", int),
            engine=_value(data, "engine", bool),
            restarts=_value(data, "restarts", int),
            statements=_value(data, "statements", int),
            covered=_value(data, "covered", int),
            files=tuple(
                Figure(
                    _value(item, "path", str),
                    "",
                    _value(item, "statements", int),
                    _value(item, "covered", int),
                    whole=_value(item, "whole", bool),
                )
                for item in _objects(data, "files")
            ),
            functions=tuple(
                Figure(
                    _value(item, "path", str),
                    _value(item, "name", str),
                    _value(item, "statements", int),
                    _value(item, "covered", int),
                    line=_value(item, "line", int),
                )
                for item in _objects(data, "functions")
            ),
            missing=tuple(_value({"name": name}, "name", str) for name in _list(data, "missing")),
            unreached=tuple(
                Unreached(
                    _value(item, "path", str),
                    _value(item, "function", str),
                    _value(item, "start", int),
                    _value(item, "end", int),
                    _value(item, "statements", int),
                    _value(item, "url", str),
                    _value(item, "source", str),
                    _value({"why": "", **item}, "why", str),
                )
                for item in _objects(data, "unreached")
            ),
        )
    except ValueError as error:
        raise ReportError(f"{path}: {error}") from error


def _value(data: dict[str, Any], name: str, kind: type[T]) -> T:
    value = data.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"field {name!r} must be a {kind.__name__}")
    return value


def _list(data: dict[str, Any], name: str) -> list[Any]:
    value = data.get(name)
    if not isinstance(value, list):
        raise ValueError(f"field {name!r} must be a list")
    return value


def _objects(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    items = _list(data, name)
    if not all(isinstance(item, dict) for item in items):
        raise ValueError(f"every item of {name!r} must be an object")
    return items


def first_line(block: Unreached) -> str:
    """The block's first line of source, stripped (what a table row shows of it)."""
    lines = [line.strip() for line in block.source.splitlines() if line.strip()]
    return lines[0] if lines else ""


INTRO = (
    "Statements of nats-server's mapping code that the run's cases reached, from the counters of its "
    "-cover build (`nats-conformance coverage`): subject_transform.go whole, and the functions of the "
    "mapping surface elsewhere (account mappings, imports and exports, stream configuration checks, "
    "subject matching; the list is records/coverage.py's `MAPPING_SURFACE`). Each block no case reached "
    "links to its lines at the release's tag."
)


def headline(item: ReleaseCoverage) -> str:
    """One sentence: the release, the surface's figure, and how many processes wrote counters."""
    return (
        f"Run {item.run_id} on nats-server {item.release}: {item.covered:,} of {item.statements:,} "
        f"statements of the mapping surface ({item.percent}), {len(item.unreached):,} blocks unreached "
        f"({item.unreachable:,} statements of them unreachable from any configuration or message: "
        f"{item.covered:,} of {item.statements - item.unreachable:,} reachable ones, "
        f"{percent(item.covered, item.statements - item.unreachable)}); "
        f"{item.counter_files} process(es) wrote counters (the servers"
        + (" and the engine oracle)" if item.engine else ")")
        + (
            f"; {item.restarts} server(s) restarted after a fault, whose counters are lost"
            if item.restarts
            else ""
        )
    )
