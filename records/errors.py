"""Errors of reading records into a report (`records.load`, the query engines, a Spark session) and of the
report builder: each is one line for the user, naming the file or option at fault; `read_document` reads
a run's versioned JSON file with them, its fields checked by `value_of`, `list_of` and `objects_of`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

from nats_conformance.reference.errors import ConformanceError

T = TypeVar("T")


class ReportError(ConformanceError):
    """A report cannot be built: a missing or empty run directory, a corrupt or newer records file, or
    a Spark failure. The message is one line and names what is wrong and where."""

    kind = "report"


def read_document(
    path: Path, kind: str, form: str, version: int, build: Callable[[dict[str, Any]], T]
) -> T | None:
    """What `build` makes of the JSON object in a run's `kind` file (`coverage`, `bisection`, `mutants`)
    of format `form` and at most `version`, or None when there is no such file; `build` raises
    ValueError on a missing or malformed field.

    Raises:
        ReportError: the file is not such a document.
    """
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ReportError(f"corrupt {kind} file {path}: {error}") from error
    if not isinstance(data, dict) or data.get("format") != form:
        raise ReportError(f'{path} is not a {kind} file (no "format": "{form}")')
    if not isinstance(data.get("version"), int) or data["version"] > version:
        raise ReportError(f"{path} has {kind} version {data.get('version')!r}; this reads {version}")
    try:
        return build(data)
    except ValueError as error:
        raise ReportError(f"{path}: {error}") from error


KIND_WORDS: Final[dict[type, str]] = {str: "a string", int: "a whole number", dict: "an object"}
"""How an error names a JSON type."""


def value_of(data: dict[str, Any], name: str, kind: type[T]) -> T:
    """The field `name` of a document's object, of type `kind` (a bool is no int); ValueError if not."""
    value = data.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"field {name!r} must be {KIND_WORDS.get(kind, f'a {kind.__name__}')}")
    return value


def fields_of(data: dict[str, Any], kind: type, *names: str) -> dict[str, Any]:
    """The fields `names` of a document's object by name, each of type `kind` (`value_of`)."""
    return {name: value_of(data, name, kind) for name in names}


def list_of(data: dict[str, Any], name: str) -> list[Any]:
    """The field `name`, a list; ValueError if not."""
    value = data.get(name)
    if not isinstance(value, list):
        raise ValueError(f"field {name!r} must be a list")
    return value


def items_of(data: dict[str, Any], name: str, kind: type[T]) -> tuple[T, ...]:
    """The field `name`, a list whose every item is of type `kind` (a bool is no int); ValueError if not."""
    items = list_of(data, name)
    if not all(isinstance(item, kind) and not (kind is int and isinstance(item, bool)) for item in items):
        raise ValueError(f"every item of {name!r} must be {KIND_WORDS.get(kind, f'a {kind.__name__}')}")
    return tuple(items)


def objects_of(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The field `name`, a list of objects; ValueError if not."""
    items = list_of(data, name)
    if not all(isinstance(item, dict) for item in items):
        raise ValueError(f"every item of {name!r} must be an object")
    return items
