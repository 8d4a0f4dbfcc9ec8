"""Known divergences as data: which diverging cases are expected, for which implementation and releases.

`expectations.toml` at the repository root holds `[[divergence]]` tables:

    [[divergence]]
    id = "left-right-unknown"            # stable name, shown in reports
    implementation = "nats-server"       # or a third-party target's name; "*" for any
    min_version = "2.10.16"              # inclusive; omit for "since ever"
    max_version = ""                     # inclusive; empty for "still open"
    case_class = "validation:*:reference-accept-server-reject"   # fnmatch pattern over a case's class
    functions = ["left", "right"]        # optional: the case must use one of these functions
    link = "https://..."                 # upstream issue or document section
    note = "why this differs"

A diverging case whose implementation, version and class match an entry gets the verdict `expected`
and carries the entry's id. An entry that matched nothing in a run that covered its range is stale,
and `stale()` lists it so the file does not rot.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from reference.errors import ConformanceError

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "expectations.toml"


class ExpectationsError(ConformanceError, ValueError):
    """The expectations file cannot be read or has an invalid entry."""


def version_key(text: str) -> tuple[int, ...]:
    parts = text.strip().lstrip("v").split(".")
    try:
        return tuple(int(part) for part in parts if part)
    except ValueError as error:
        raise ExpectationsError(f"'version' must look like 2.10.16 (got {text!r})") from error


@dataclass(frozen=True, slots=True)
class Expectation:
    """One known divergence."""

    id: str
    case_class: str
    implementation: str = "nats-server"
    min_version: str = ""
    max_version: str = ""
    link: str = ""
    note: str = ""
    functions: tuple[str, ...] = ()

    def explains(self, case_class: str) -> bool:
        """True iff a divergence of `case_class` (`feature:fn1+fn2:difference`) is this entry's."""
        if not fnmatchcase(case_class, self.case_class):
            return False
        if not self.functions:
            return True
        used = {name.lower() for name in case_class.split(":")[1].split("+")}
        return any(name.lower() in used for name in self.functions)

    def covers(self, implementation: str, version: str) -> bool:
        if self.implementation not in ("*", implementation):
            return False
        key = version_key(version) if version else ()
        if self.min_version and key < version_key(self.min_version):
            return False
        return not (self.max_version and key > version_key(self.max_version))


@dataclass(slots=True)
class Expectations:
    """The loaded file, and which entries this run has confirmed."""

    entries: tuple[Expectation, ...] = ()
    confirmed: set[str] = field(default_factory=set)
    covered: set[str] = field(default_factory=set)
    features: set[str] = field(default_factory=set)

    def classify(self, implementation: str, version: str, case_class: str) -> Expectation | None:
        """The entry explaining a divergence of this class, or None (an unexpected divergence)."""
        for entry in self.entries:
            if entry.covers(implementation, version):
                self.covered.add(entry.id)
                if entry.explains(case_class):
                    self.confirmed.add(entry.id)
                    return entry
        return None

    def note_run(self, implementation: str, version: str) -> None:
        """Record that a run covered this implementation and version (for staleness)."""
        for entry in self.entries:
            if entry.covers(implementation, version):
                self.covered.add(entry.id)

    def note_feature(self, feature: str) -> None:
        """Record that a run checked cases of this feature (for staleness)."""
        self.features.add(feature)

    def stale(self) -> list[Expectation]:
        """Entries whose range and feature this run covered but which no divergence confirmed."""
        return [
            e
            for e in self.entries
            if e.id in self.covered
            and e.id not in self.confirmed
            and any(fnmatchcase(feature, e.case_class.split(":")[0]) for feature in self.features)
        ]


def load_expectations(path: Path = DEFAULT_PATH) -> Expectations:
    """Read the expectations file; a missing file means no known divergences."""
    if not path.exists():
        return Expectations()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ExpectationsError(f"cannot read expectations {path}: {error}") from error
    return Expectations(tuple(_entries(data.get("divergence", []), path)))


def _entries(tables: Iterable[object], path: Path) -> Iterable[Expectation]:
    seen: set[str] = set()
    allowed = set(Expectation.__slots__)
    for index, table in enumerate(tables):
        if not isinstance(table, dict) or "id" not in table or "case_class" not in table:
            raise ExpectationsError(f"{path}: divergence #{index + 1} needs 'id' and 'case_class'")
        unknown = set(table) - allowed
        if unknown:
            raise ExpectationsError(f"{path}: divergence {table['id']!r} has unknown keys {sorted(unknown)}")
        if table["id"] in seen:
            raise ExpectationsError(f"{path}: divergence id {table['id']!r} appears twice")
        seen.add(table["id"])
        functions = table.pop("functions", [])
        if not isinstance(functions, list):
            raise ExpectationsError(f"{path}: 'functions' of {table['id']!r} must be a list of names")
        entry = Expectation(
            **{key: str(value) for key, value in table.items()}, functions=tuple(map(str, functions))
        )
        for bound in (entry.min_version, entry.max_version):
            if bound:
                version_key(bound)
        yield entry
