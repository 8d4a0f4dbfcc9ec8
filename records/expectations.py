"""Known divergences as data: which diverging cases are expected, for which implementation and releases.

`expectations.toml` at the repository root (shipped in the wheel as `records/expectations.toml`, a link
to it in the repository) holds `[[divergence]]` tables:

    [[divergence]]
    id = "left-right-unknown"            # stable name, shown in reports
    implementation = "nats-server"       # fnmatch pattern over the target's name ("nats-server*": the
                                         # server and its transform engine, "nats-server engine 2.14.5")
    min_version = "2.10.16"              # inclusive; omit for "since ever"
    max_version = ""                     # inclusive; empty for "still open"
    feature = "validation"               # fnmatch pattern over the case's feature
    difference = "reference-accept-server-reject"   # fnmatch pattern over what differed
    functions = ["left", "right"]        # optional: the case uses any of these ("literal": none)
    link = "https://..."                 # upstream issue or public document
    intermittent = false                 # true: shows only now and then, so a run that misses it is
                                         # not evidence that it went away (never listed as stale)
    case = "known-cases/left-right-unknown.json"   # optional: a case file (records.casefile) showing it,
                                         # relative to this file; a campaign runs it first (never for
                                         # an intermittent entry: its verdict varies from run to run)
    note = "why this differs"

A diverging case whose implementation, version, feature and difference match an entry (and, when the
entry lists functions, that uses one of them in any combination with others) gets the verdict
`expected` and carries the entry's id. An entry that matched nothing in a run that covered its range
and feature (for an entry keeping a known case: that ran its case) is stale (unless it is
`intermittent`), and `stale()` lists it so the file does not rot.
Suites classify cases with it; reports read it for the notes and links of the entries they show.

An entry's `case` is the reproduction a campaign's generators found, kept as Hypothesis keeps failing
examples in its database: a campaign runs the known cases first on every target (`known_cases`), so a
listed finding is confirmed (or shown stale) whether or not this run's draws reach it again.
"""

from __future__ import annotations

import itertools
import json
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from fnmatch import fnmatchcase
from pathlib import Path

from records.casefile import CaseFile, CaseFileError, read_case_file
from records.schema import Case
from reference.errors import ConformanceError, InvalidVersionError
from reference.versions import Version

DEFAULT_PATH = (Path(__file__).parent / "expectations.toml").resolve()
"""The shipped file: the repository root's in a checkout, the package's in an installed copy."""
LITERAL = "literal"
"""The function name of a case that uses none (as the class text shows it)."""
KNOWN_CASES = "known-cases"
"""The folder, beside the expectations file, of the case files its entries keep."""


class ExpectationsError(ConformanceError, ValueError):
    """The expectations file cannot be read or has an invalid entry."""


def version_key(text: str) -> Version:
    """The version a bound or a case names (a line such as 2.10 sorts before its releases)."""
    try:
        return Version.parse(text)
    except InvalidVersionError as error:
        raise ExpectationsError(f"'version' must look like 2.10.16 (got {text!r})") from error


@dataclass(frozen=True, slots=True)
class Expectation:
    """One known divergence."""

    id: str
    feature: str
    difference: str
    implementation: str = "nats-server"
    min_version: str = ""
    max_version: str = ""
    link: str = ""
    note: str = ""
    functions: tuple[str, ...] = ()
    intermittent: bool = False
    case: str = ""
    """A case file showing this divergence, relative to the expectations file ('' when none is kept)."""

    def explains(self, feature: str, functions: str, difference: str) -> bool:
        """True iff a divergence of `feature` and `difference`, using `functions` (the `+`-joined
        column, empty for none), is this entry's: both patterns match and, when the entry lists
        functions, the case uses one of them (a case using none uses `literal`)."""
        return fnmatchcase(difference, self.difference) and self.concerns(feature, functions)

    def concerns(self, feature: str, functions: str) -> bool:
        """True iff cases of `feature` using `functions` could show this divergence: the feature pattern
        matches and, when the entry lists functions, the case uses one of them."""
        if not fnmatchcase(feature, self.feature):
            return False
        if not self.functions:
            return True
        used = {name.lower() for name in (functions.split("+") if functions else [LITERAL])}
        return any(name.lower() in used for name in self.functions)

    def covers(self, implementation: str, version: str) -> bool:
        if not fnmatchcase(implementation, self.implementation):
            return False
        if not version:
            return not self.min_version
        key = version_key(version)
        if self.min_version and key < version_key(self.min_version):
            return False
        return not (self.max_version and key > version_key(self.max_version))


@dataclass(slots=True)
class Expectations:
    """The loaded file, and which entries this run has confirmed."""

    entries: tuple[Expectation, ...] = ()
    confirmed: set[str] = field(default_factory=set)
    covered: set[str] = field(default_factory=set)
    features: set[tuple[str, str]] = field(default_factory=set)
    """The (feature, functions) of the cases this run checked."""
    known_cases: tuple[CaseFile, ...] = ()
    """The entries' case files, in the file's order: what a campaign runs first."""
    known_confirmed: set[str] = field(default_factory=set)
    """The entries a known case confirmed (`confirmed`: those drawn units did)."""
    known_run: set[str] = field(default_factory=set)
    """The entries whose known case this run ran (`note_known`)."""

    def classify(
        self, implementation: str, version: str, *, feature: str, functions: str, difference: str
    ) -> Expectation | None:
        """The entry explaining a divergence of this class, or None (an unexpected divergence)."""
        for entry in self.entries:
            if entry.covers(implementation, version):
                self.covered.add(entry.id)
                if entry.explains(feature, functions, difference):
                    self.confirmed.add(entry.id)
                    return entry
        return None

    def note_run(self, implementation: str, version: str) -> None:
        """Record that a run covered this implementation and version (for staleness)."""
        for entry in self.entries:
            if entry.covers(implementation, version):
                self.covered.add(entry.id)

    def note_feature(self, feature: str, functions: str = "") -> None:
        """Record that a run checked cases of this feature using these functions (for staleness)."""
        self.features.add((feature, functions))

    def note_known(self, cases: Iterable[CaseFile]) -> None:
        """Record that a run ran these of `known_cases` (for staleness: the evidence an entry keeping a
        known case has gone is its case run without it)."""
        ran = set(map(id, cases))
        kept = (entry.id for entry in self.entries if entry.case)
        self.known_run.update(
            entry for entry, case in zip(kept, self.known_cases, strict=False) if id(case) in ran
        )

    @contextmanager
    def known_part(self) -> Iterator[Expectations]:
        """The same entries with nothing confirmed yet, to judge the known cases against; afterwards what
        they confirmed counts as this run's `known_confirmed`, told apart from what drawn units confirm."""
        part = Expectations(self.entries, known_cases=self.known_cases)
        yield part
        self.known_confirmed |= part.confirmed
        self.covered |= part.covered
        self.features |= part.features

    def absorb(self, other: Expectations) -> None:
        """Count what another process's run of the same entries confirmed, covered and checked (a task
        of a scaled-out campaign) as this run's."""
        self.confirmed |= other.confirmed
        self.known_confirmed |= other.known_confirmed
        self.known_run |= other.known_run
        self.covered |= other.covered
        self.features |= other.features

    def by_known_case_alone(self) -> list[Expectation]:
        """Entries that only their known case confirmed in this run: no drawn unit showed them."""
        return [e for e in self.entries if e.id in self.known_confirmed - self.confirmed]

    def stale(self) -> list[Expectation]:
        """Entries whose range this run covered, with cases that could show them, but which no divergence
        confirmed; an intermittent one never is. An entry keeping a known case could be shown only if its
        case ran (a family of the run runs it): cases of its feature may be drawn by a family that cannot
        show it (a refused mapping of the mapping family is a validation case, never an operator-mode
        one). Of another entry, the run checked cases of its feature and, if listed, one of its functions."""
        return [
            e
            for e in self.entries
            if not e.intermittent
            and e.id in self.covered
            and e.id not in self.confirmed | self.known_confirmed
            and (e.id in self.known_run if e.case else self._checked(e))
        ]

    def _checked(self, entry: Expectation) -> bool:
        return any(entry.concerns(feature, functions) for feature, functions in self.features)


def load_expectations(path: Path = DEFAULT_PATH) -> Expectations:
    """Read an expectations file (default the shipped one); a missing file is an error, never "no known
    divergences"."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as error:
        raise ExpectationsError(f"no expectations file {path}") from error
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ExpectationsError(f"cannot read expectations {path}: {error}") from error
    unknown = sorted(set(data) - {TABLE})
    if unknown:
        raise ExpectationsError(f"{path}: unknown key {', '.join(map(repr, unknown))} (known: {TABLE})")
    entries = tuple(_entries(data.get(TABLE, []), path))
    return Expectations(entries, known_cases=tuple(_known_cases(entries, path)))


def _known_cases(entries: Iterable[Expectation], path: Path) -> Iterable[CaseFile]:
    for entry in entries:
        if entry.case:
            try:
                yield read_case_file(path.parent / entry.case)
            except CaseFileError as error:
                raise ExpectationsError(f"{path}: the case of {entry.id!r}: {error}") from error


TABLE = "divergence"
"""The file's one top-level key: an array of `[[divergence]]` tables."""
REQUIRED = ("id", "feature", "difference")
KEYS = frozenset(item.name for item in fields(Expectation))


def _entries(tables: Iterable[object], path: Path) -> Iterable[Expectation]:
    seen: set[str] = set()
    for index, table in enumerate(tables):
        if not isinstance(table, dict) or any(key not in table for key in REQUIRED):
            raise ExpectationsError(f"{path}: divergence #{index + 1} needs {', '.join(map(repr, REQUIRED))}")
        unknown = set(table) - KEYS
        if unknown:
            raise ExpectationsError(
                f"{path}: divergence {table['id']!r} has unknown keys {sorted(unknown)} "
                f"(known: {', '.join(sorted(KEYS))})"
            )
        if table["id"] in seen:
            raise ExpectationsError(f"{path}: divergence id {table['id']!r} appears twice")
        seen.add(table["id"])
        functions = table.pop("functions", [])
        if not isinstance(functions, list):
            raise ExpectationsError(f"{path}: 'functions' of {table['id']!r} must be a list of names")
        intermittent = table.pop("intermittent", False)
        if not isinstance(intermittent, bool):
            raise ExpectationsError(f"{path}: 'intermittent' of {table['id']!r} must be true or false")
        if intermittent and table.get("case"):
            raise ExpectationsError(
                f"{path}: {table['id']!r} is intermittent and keeps no case "
                "(its verdict varies from run to run)"
            )
        entry = Expectation(
            **{key: str(value) for key, value in table.items()},
            functions=tuple(map(str, functions)),
            intermittent=intermittent,
        )
        for bound in (entry.min_version, entry.max_version):
            if bound:
                version_key(bound)
        yield entry


def updated_entries(
    expectations: Expectations, divergences: Iterable[Case]
) -> tuple[list[Expectation], dict[str, Case]]:
    """The file's entries after a run: stale ones dropped, one new entry per implementation, feature and
    difference of the unexpected divergences, listing every function they used (`literal`: none); its
    range starts at the lowest release it was seen on, open-ended. Also the case each new entry keeps as
    its known case (by its `case` path), the one of that lowest release."""
    stale = {entry.id for entry in expectations.stale()}
    kept = [entry for entry in expectations.entries if entry.id not in stale]
    taken = {entry.id for entry in kept}
    found: dict[str, Case] = {}
    grouped: dict[tuple[str, str, str], list[Case]] = {}
    for case in divergences:
        grouped.setdefault((case.implementation, case.feature, case.difference), []).append(case)
    for (implementation, feature, difference), cases in sorted(grouped.items()):
        first = min(cases, key=lambda case: version_key(case.server_version))
        name = re.sub(r"[^a-z0-9]+", "-", f"{implementation}-{feature}-{difference}".lower()).strip("-")
        unique = name
        for number in itertools.count(2):
            if unique not in taken:
                break
            unique = f"{name}-{number}"
        taken.add(unique)
        note = (
            f"Recorded by --update-expectations from run {first.run_id}: expected {first.expected!r}, "
            f"observed {first.observed!r} (source {first.source!r}, destination {first.destination!r}, "
            f"subject {first.subject!r}). Review and explain."
        )
        used = {
            name for case in cases for name in (case.functions.split("+") if case.functions else [LITERAL])
        }
        kept_case = f"{KNOWN_CASES}/{unique}.json"
        found[kept_case] = first
        kept.append(
            Expectation(
                id=unique,
                feature=feature,
                difference=difference,
                functions=tuple(sorted(used)),
                implementation=implementation,
                min_version=first.server_version,
                case=kept_case,
                note=note,
            )
        )
    return kept, found


HEADER = """# Known divergences (see records/expectations.py for the format).
# A divergence listed here is reported as `expected`; an entry no run confirms any more is flagged stale.
"""


def write_expectations(
    path: Path, entries: Iterable[Expectation], cases: Mapping[str, Case] | None = None
) -> None:
    """Write `entries` as an expectations file (what `load_expectations` reads back unchanged), and each
    of `cases` as the case file at its path relative to it."""
    blocks = [HEADER]
    for entry in entries:
        lines = ["[[divergence]]"]
        for name in ("id", "implementation", "min_version", "max_version", "feature", "difference"):
            value = getattr(entry, name)
            if value or name in REQUIRED:
                lines.append(f"{name} = {_toml_string(value)}")
        if entry.functions:
            lines.append(f"functions = [{', '.join(_toml_string(name) for name in entry.functions)}]")
        if entry.intermittent:
            lines.append("intermittent = true")
        for name in ("link", "case", "note"):
            value = getattr(entry, name)
            if value:
                lines.append(f"{name} = {_toml_string(value)}")
        blocks.append("\n".join(lines) + "\n")
    try:
        for name, case in (cases or {}).items():
            (path.parent / name).parent.mkdir(parents=True, exist_ok=True)
            (path.parent / name).write_text(CaseFile.of(case).to_json())
        path.write_text("\n".join(blocks))
    except OSError as error:
        raise ExpectationsError(f"cannot write expectations {path}: {error.strerror or error}") from error


def _toml_string(text: str) -> str:
    """A TOML string: multi-line when it holds line breaks and nothing needing escapes, else escaped."""
    plain = all(ch == "\n" or (ch.isprintable() and ch not in '\\"') for ch in text)
    if "\n" in text and plain:
        return f'"""\n{text}"""'
    return json.dumps(text, ensure_ascii=False)
