"""Known divergences as data: which diverging cases are expected, for which implementation and releases.

`expectations.toml` at the repository root (shipped in the wheel as `records/expectations.toml`, a link
to it in the repository) holds `[[divergence]]` tables:

    [[divergence]]
    id = "left-right-unknown"            # stable name, shown in reports
    implementation = "nats-server"       # fnmatch pattern over the target's name ("nats-server*": the
                                         # server and its transform engine, "nats-server engine 2.14.5")
    min_version = "2.10.16"              # inclusive; omit for "since ever"
    max_version = ""                     # inclusive; empty for "still open"
    ended_in = ["2.14.10", "2.15.3"]     # optional: per release line, the first release without it
                                         # (that line's releases from it on are outside the range)
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
entry lists functions, that uses one of them in any combination with others) gets the verdict `expected`
and carries the entry's id. A run remembers per entry the releases it covered and those on which a
divergence confirmed it. An entry that matched nothing in a run that covered its range and feature (for
an entry keeping a known case: that ran its case) is stale (unless it is `intermittent`), and `stale()`
lists it so the file does not rot; one shown on a release and not on a newer one has ended on that
release's line (`ended()`), and `--update-expectations` closes its range on that line there
(`ended_in`, `updated_entries`), editing the file in place
(`write_expectations`); no entry is removed.
Suites classify cases with it; reports read it for the notes and links of the entries they show.

An entry's `case` is the reproduction a campaign's generators found, kept as Hypothesis keeps failing
examples in its database: a campaign runs the known cases first on every target (`known_cases`), so a
listed finding is confirmed (or shown stale) whether or not this run's draws reach it again.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from fnmatch import fnmatchcase
from functools import partial, reduce
from pathlib import Path
from typing import Final, TypeVar

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Item, Table

from nats_conformance.records.casefile import CaseFile, CaseFileError, read_case_file
from nats_conformance.records.files import replace_text
from nats_conformance.records.schema import Case
from nats_conformance.reference.errors import ConformanceError, InvalidVersionError
from nats_conformance.reference.versions import Version

T = TypeVar("T")

DEFAULT_PATH = (Path(__file__).parent / "expectations.toml").resolve()
"""The shipped file: the repository root's in a checkout, the package's in an installed copy."""
PROJECT = "nats-conformance"
"""The project's name in its `pyproject.toml`, by which a checkout is told from an installed copy."""
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
    ended_in: tuple[str, ...] = ()
    """Per release line, the first release on which the divergence no longer shows: from it on, that
    line's releases are outside the range (`2.14.10`: to 2.14.9 on the 2.14 line)."""
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

    def releases_text(self) -> str:
        """The range in words: ``2.10.0 and later, before 2.14.10 on 2.14 and before 2.15.3 on 2.15``."""
        if self.min_version and self.max_version:
            text = f"{self.min_version} to {self.max_version}"
        elif self.max_version:
            text = f"up to {self.max_version}"
        else:
            text = f"{self.min_version} and later" if self.min_version else "every release"
        ends = [f"before {v} on {version_key(v).line}" for v in self.ended_in]
        return f"{text}, {' and '.join(ends)}" if ends else text

    def covers(self, implementation: str, version: str) -> bool:
        if not fnmatchcase(implementation, self.implementation):
            return False
        if not version:
            return not self.min_version
        key = version_key(version)
        if self.min_version and key < version_key(self.min_version):
            return False
        if any(key.line == (end := version_key(text)).line and key >= end for text in self.ended_in):
            return False
        return not (self.max_version and key > version_key(self.max_version))


Evidence = dict[str, set[str]]
"""Per entry id, the releases (`server_version` strings) on which something held."""


@dataclass(frozen=True, slots=True)
class Ending:
    """An entry a run shows has ended on a release line: shown on `last` (of that line or an older
    one), not on `next`, the first release of the line after it that the run tested."""

    entry: Expectation
    last: str
    next: str
    listed: bool = False
    """The entry's `ended_in` already closes its range there: the run confirms a known end."""

    def sentence(self, run_id: str) -> str:
        """What the entry's note gains when its range is closed on `next`'s line."""
        line = version_key(self.next).line
        shown = f"shown on {self.last}, not on {self.next}"
        return f"Ends on the {line} line at {self.next}: {shown} (run {run_id})."


@dataclass(frozen=True, slots=True)
class Beginning:
    """An entry a run shows starting later than its range: shown on `first`, on no release of the run in
    its range before it, `previous` being the last of those."""

    entry: Expectation
    first: str
    previous: str

    def sentence(self, run_id: str) -> str:
        """What the entry's note gains when its range is moved up."""
        return f"Starts at {self.first}: not shown up to {self.previous} (run {run_id})."


@dataclass(slots=True)
class Expectations:
    """The loaded file, and on which releases this run covered and confirmed each entry."""

    entries: tuple[Expectation, ...] = ()
    confirmed: Evidence = field(default_factory=dict)
    """The releases on which a drawn unit's divergence matched the entry."""
    covered: Evidence = field(default_factory=dict)
    """The releases of this run in the entry's range."""
    features: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    """Per release, the (feature, functions) of the cases this run checked on it."""
    known_cases: tuple[CaseFile, ...] = ()
    """The entries' case files, in the file's order: what a campaign runs first."""
    known_confirmed: Evidence = field(default_factory=dict)
    """The releases on which a known case confirmed the entry (`confirmed`: those drawn units did)."""
    known_run: set[str] = field(default_factory=set)
    """The entries whose known case this run ran (`note_known`)."""
    _in_range: dict[tuple[str, str], tuple[Expectation, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Per (implementation, version), the entries whose range holds it, in order (`in_range`)."""

    def classify(
        self, implementation: str, version: str, *, feature: str, functions: str, difference: str
    ) -> Expectation | None:
        """The entry explaining a divergence of this class, or None (an unexpected divergence)."""
        for entry in self.in_range(implementation, version):
            _note(self.covered, entry.id, version)
            if entry.explains(feature, functions, difference):
                _note(self.confirmed, entry.id, version)
                return entry
        return None

    def in_range(self, implementation: str, version: str) -> tuple[Expectation, ...]:
        """The entries covering this implementation and version, in the file's order: worked out once per
        pair, since a run classifies every case that does not agree (parsing the bounds each time took
        half of a weighted campaign's time)."""
        key = (implementation, version)
        if key not in self._in_range:
            self._in_range[key] = tuple(e for e in self.entries if e.covers(implementation, version))
        return self._in_range[key]

    def note_run(self, implementation: str, version: str) -> None:
        """Record that a run covered this implementation and version (for staleness)."""
        for entry in self.in_range(implementation, version):
            _note(self.covered, entry.id, version)

    def note_feature(self, version: str, feature: str, functions: str) -> None:
        """Record that a run checked cases of this feature using these functions on this release (for
        staleness)."""
        self.features.setdefault(version, set()).add((feature, functions))

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
        _merge(self.known_confirmed, part.confirmed)
        _merge(self.covered, part.covered)
        _merge(self.features, part.features)

    def absorb(self, other: Expectations) -> None:
        """Count what another process's run of the same entries confirmed, covered and checked (a task
        of a scaled-out campaign) as this run's."""
        _merge(self.confirmed, other.confirmed)
        _merge(self.known_confirmed, other.known_confirmed)
        _merge(self.covered, other.covered)
        _merge(self.features, other.features)
        self.known_run |= other.known_run

    def evidence(self) -> dict[str, dict[str, list[str]]]:
        """What this run covered, confirmed and checked, as JSON values (a task's journal keeps it, so
        that a resumed campaign counts a task it does not run again)."""
        return {
            name: {key: sorted(map(str, values)) for key, values in getattr(self, name).items()}
            for name in ("confirmed", "known_confirmed", "covered")
        } | {
            "features": {v: sorted("\t".join(pair) for pair in pairs) for v, pairs in self.features.items()},
            "known_run": {"": sorted(self.known_run)},
        }

    def absorb_evidence(self, evidence: Mapping[str, Mapping[str, list[str]]]) -> None:
        """Count evidence that `evidence()` wrote as this run's (as `absorb` does)."""
        for name in ("confirmed", "known_confirmed", "covered"):
            _merge(getattr(self, name), {key: set(values) for key, values in evidence.get(name, {}).items()})
        for version, texts in evidence.get("features", {}).items():
            for text in texts:
                feature, _, functions = text.partition("\t")
                self.note_feature(version, feature, functions)
        self.known_run.update(*evidence.get("known_run", {}).values())

    def by_known_case_alone(self) -> list[Expectation]:
        """Entries that only their known case confirmed in this run: no drawn unit showed them."""
        return [e for e in self.entries if e.id in self.known_confirmed and e.id not in self.confirmed]

    def tested(self, entry: Expectation) -> set[str]:
        """The releases of this run in the entry's range on which cases that could show it ran (their
        feature and, if listed, one of its functions)."""
        return {
            version
            for version in self.covered.get(entry.id, ())
            if any(
                entry.concerns(feature, functions) for feature, functions in self.features.get(version, ())
            )
        }

    def shown(self, entry: Expectation) -> set[str]:
        """The releases on which a divergence of this run, drawn or known, confirmed the entry."""
        return self.confirmed.get(entry.id, set()) | self.known_confirmed.get(entry.id, set())

    def stale(self) -> list[Expectation]:
        """Entries tested on some release of this run but confirmed on none; an intermittent one never
        is. An entry keeping a known case could be shown only if its case ran (a family of the run runs
        it): cases of its feature may be drawn by a family that cannot show it (a refused mapping of the
        mapping family is a validation case, never an operator-mode one)."""
        return [
            e
            for e in self.entries
            if not e.intermittent
            and self.tested(e)
            and not self.shown(e)
            and (e.id in self.known_run or not e.case)
        ]

    def ended(self) -> list[Ending]:
        """Where this run shows entries ended, release line by line: on a line, the first release tested
        without the divergence that is newer than every release of that line showing it, and newer than
        some (older) release showing it; an intermittent entry never ends (a miss is no evidence)."""
        endings = []
        for entry in self.entries:
            shown = sorted(self.shown(entry), key=version_key)
            if entry.intermittent or not shown:
                continue
            missed = sorted((v for v in self.tested(entry) if v not in shown), key=version_key)
            for line in sorted({version_key(v).line for v in missed}):
                here = [v for v in shown if version_key(v).line == line]
                floor = version_key(here[-1] if here else shown[0])
                after = [v for v in missed if version_key(v).line == line and version_key(v) > floor]
                if after:
                    last = [v for v in shown if version_key(v) < version_key(after[0])][-1]
                    endings.append(Ending(entry, last, after[0]))
            endings += self._listed_endings(entry, shown)
        return endings

    def _listed_endings(self, entry: Expectation, shown: list[str]) -> list[Ending]:
        """The ends `entry.ended_in` lists that this run confirms: on a line, the first release tested at
        or after the listed end without the divergence (cases that could show it ran there), after an
        older release that showed it."""
        endings = []
        for end in entry.ended_in:
            line, first = version_key(end).line, version_key(end)
            after = sorted(
                (
                    version
                    for version, pairs in self.features.items()
                    if version_key(version).line == line
                    and version_key(version) >= first
                    and version not in shown
                    and any(entry.concerns(*pair) for pair in pairs)
                ),
                key=version_key,
            )
            before = [v for v in shown if version_key(v) < first]
            if after and before:
                endings.append(Ending(entry, before[-1], after[0], listed=True))
        return endings

    def started(self) -> list[Beginning]:
        """Entries this run shows start later than their range says: confirmed on some release, tested
        without it on every older release of the run in their range, the range's first release among them
        (a run that skipped it says nothing of it); never an intermittent one."""
        beginnings = []
        for entry in self.entries:
            shown = self.shown(entry)
            if entry.intermittent or not shown:
                continue
            first = min(shown, key=version_key)
            earlier = sorted(
                (v for v in self.tested(entry) if version_key(v) < version_key(first)), key=version_key
            )
            if earlier and earlier[0] == entry.min_version:
                beginnings.append(Beginning(entry, first, earlier[-1]))
        return beginnings


def _note(evidence: Evidence, key: str, version: str) -> None:
    evidence.setdefault(key, set()).add(version)


def _merge(into: dict[str, set[T]], other: dict[str, set[T]]) -> None:
    for key, values in other.items():
        into.setdefault(key, set()).update(values)


def in_checkout(path: Path) -> bool:
    """True iff `path` is a file of a writable checkout of this project: a folder above it holds the
    project's `pyproject.toml`, and no folder on the way is an installed packages' one."""
    if {"site-packages", "dist-packages"} & set(path.parts) or not os.access(path.parent, os.W_OK):
        return False
    for folder in path.parents:
        try:
            project = tomllib.loads((folder / "pyproject.toml").read_text()).get("project", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        return bool(project.get("name") == PROJECT)
    return False


def default_to_update() -> Path:
    """The shipped file, which `--update-expectations` may rewrite only in a checkout, never in an
    installed package.

    Raises:
        ExpectationsError: `DEFAULT_PATH` is not in a writable checkout (`in_checkout`).
    """
    if not in_checkout(DEFAULT_PATH):
        raise ExpectationsError(
            f"--update-expectations: the default expectations file {DEFAULT_PATH} is not in a writable "
            "checkout of nats-conformance (an installed copy?); name the file to rewrite with "
            "--expectations PATH"
        )
    return DEFAULT_PATH


def load_expectations(path: Path = DEFAULT_PATH) -> Expectations:
    """Read an expectations file (default the shipped one); a missing file is an error, never "no known
    divergences". Each call gives a fresh `Expectations` (its evidence starts empty); the parsed entries
    are kept while the file's size and modification time stay the same (a mutants run reads the file
    twice per family and mutant)."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if key not in _PARSED:
            _PARSED.clear()
            _PARSED[key] = _parse(path, path.read_text())
    except FileNotFoundError as error:
        raise ExpectationsError(f"no expectations file {path}") from error
    except (OSError, UnicodeDecodeError) as error:
        raise ExpectationsError(f"cannot read expectations {path}: {error}") from error
    entries, known_cases = _PARSED[key]
    return Expectations(entries, known_cases=known_cases)


_PARSED: dict[tuple[str, int, int], tuple[tuple[Expectation, ...], tuple[CaseFile, ...]]] = {}
"""The last file `load_expectations` parsed: its entries and known cases, by path, mtime and size."""


def _parse(path: Path, text: str) -> tuple[tuple[Expectation, ...], tuple[CaseFile, ...]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ExpectationsError(f"cannot read expectations {path}: {error}") from error
    unknown = sorted(set(data) - {TABLE})
    if unknown:
        raise ExpectationsError(f"{path}: unknown key {', '.join(map(repr, unknown))} (known: {TABLE})")
    entries = tuple(_entries(data.get(TABLE, []), path))
    return entries, tuple(_known_cases(entries, path))


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
UNSET = Expectation(id="", feature="", difference="")
"""What an entry's absent keys stand for."""


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
        ended_in = table.pop("ended_in", [])
        if not isinstance(ended_in, list) or not all(isinstance(v, str) for v in ended_in):
            raise ExpectationsError(f"{path}: 'ended_in' of {table['id']!r} must be a list of releases")
        for version in ended_in:
            version_key(version)
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
            ended_in=tuple(ended_in),
        )
        for bound in (entry.min_version, entry.max_version):
            if bound:
                version_key(bound)
        yield entry


@dataclass(frozen=True, slots=True)
class Widening:
    """An entry the run showed beyond its range, on releases next to it: its range now runs from
    `first` to `last` (`last` '' for open-ended)."""

    entry: Expectation
    first: str
    last: str

    def sentence(self, run_id: str) -> str:
        """What the entry's note gains when its range is widened."""
        shown = f"on {self.first} to {self.last}" if self.last else f"from {self.first} on"
        return f"Shown {shown} (run {run_id})."


@dataclass(frozen=True, slots=True)
class Update:
    """The file's entries after a run (none removed), the case each new one keeps (by its `case`
    path), and the ranges the run closed."""

    entries: list[Expectation]
    cases: dict[str, Case]
    closed: list[Ending]
    widened: list[Widening] = field(default_factory=list)
    started: list[Beginning] = field(default_factory=list)


def updated_entries(expectations: Expectations, divergences: Iterable[Case], *, run_id: str) -> Update:
    """The file's entries after run `run_id`: every entry kept, an ended one with its range closed on each
    release line the run shows it ended on (`ended_in`; its note says on which releases); one new entry
    per implementation, feature and difference of the unexpected divergences and per run of consecutive
    releases of the run that showed it (among those that checked its feature), listing every function
    they used (`literal`: none), its range from the lowest to the newest release of that run (open-ended
    when no newer release was checked), keeping the case of its lowest release as its known case."""
    closed = [ending for ending in expectations.ended() if not ending.listed]
    ends: dict[str, list[Ending]] = {}
    for ending in closed:
        ends.setdefault(ending.entry.id, []).append(ending)
    started = expectations.started()
    starts = {beginning.entry.id: beginning for beginning in started}
    kept = [reduce(partial(_closed, run_id=run_id), ends.get(e.id, []), e) for e in expectations.entries]
    for index, entry in enumerate(kept):
        if entry.id in starts:
            beginning = starts[entry.id]
            note = _noted(entry.note, beginning.sentence(run_id))
            kept[index] = replace(entry, min_version=beginning.first, note=note)
    remaining = list(divergences)
    widened = []
    for index, entry in enumerate(kept):
        widening = _widening(expectations, entry, remaining)
        if widening is not None:
            widened.append(widening)
            note = _noted(entry.note, widening.sentence(run_id))
            kept[index] = replace(entry, min_version=widening.first, max_version=widening.last, note=note)
            remaining = [c for c in remaining if not _explained(kept[index], c)]
    taken = {entry.id for entry in kept}
    found: dict[str, Case] = {}
    grouped: dict[tuple[str, str, str], list[Case]] = {}
    for case in remaining:
        grouped.setdefault((case.implementation, case.feature, case.difference), []).append(case)
    for (implementation, feature, difference), cases in sorted(grouped.items()):
        tested = sorted(
            {v for v, pairs in expectations.features.items() if any(f == feature for f, _ in pairs)}
            | {case.server_version for case in cases},
            key=version_key,
        )
        for span in _spans(tested, {case.server_version for case in cases}):
            within = [case for case in cases if case.server_version in span]
            first = min(within, key=lambda case: version_key(case.server_version))
            name = re.sub(r"[^a-z0-9]+", "-", f"{implementation}-{feature}-{difference}".lower()).strip("-")
            unique = name
            for number in itertools.count(2):
                if unique not in taken:
                    break
                unique = f"{name}-{number}"
            taken.add(unique)
            later = tested[tested.index(span[-1]) + 1 :]
            used = {
                name
                for case in within
                for name in (case.functions.split("+") if case.functions else [LITERAL])
            }
            kept_case = f"{KNOWN_CASES}/{unique}.json"
            found[kept_case] = first
            entry = Expectation(
                id=unique,
                feature=feature,
                difference=difference,
                functions=tuple(sorted(used)),
                implementation=implementation,
                min_version=span[0],
                case=kept_case,
                note=f"Recorded by --update-expectations from run {first.run_id}: expected "
                f"{first.expected!r}, observed {first.observed!r} (source {first.source!r}, destination "
                f"{first.destination!r}, subject {first.subject!r}). Review and explain.",
            )
            if later:  # a new finding's range is the span the run showed it on
                sentence = f"Ends at {span[-1]}: not shown from {later[0]} on (run {run_id})."
                entry = replace(entry, max_version=span[-1], note=_noted(entry.note, sentence))
            kept.append(entry)
    return Update(kept, found, closed, widened, started)


def _explained(entry: Expectation, case: Case) -> bool:
    """The entry, as it stands, explains this divergence (its range included)."""
    return entry.covers(case.implementation, case.server_version) and entry.explains(
        case.feature, case.functions, case.difference
    )


def _widening(expectations: Expectations, entry: Expectation, divergences: list[Case]) -> Widening | None:
    """How far the run shows `entry` beyond its range: the releases next to the range, with no release
    between them and the range that checked cases it concerns without showing it, on which divergences it
    explains were seen (those further off make a range of their own, a new entry); None when there are
    none. Never for an intermittent entry."""
    outside = [
        case
        for case in divergences
        if fnmatchcase(case.implementation, entry.implementation)
        and entry.explains(case.feature, case.functions, case.difference)
        and not entry.covers(case.implementation, case.server_version)
    ]
    if entry.intermittent or not outside:
        return None
    shown = {case.server_version for case in outside} | expectations.shown(entry)
    tested = sorted(
        {v for v, pairs in expectations.features.items() if any(entry.concerns(*pair) for pair in pairs)}
        | shown,
        key=version_key,
    )
    first, last = entry.min_version, entry.max_version
    if first:
        for version in sorted((v for v in tested if version_key(v) < version_key(first)), key=version_key)[
            ::-1
        ]:
            if version not in shown:
                break
            first = version
    if last:
        newer = [v for v in tested if version_key(v) > version_key(last)]
        for version in newer:
            if version not in shown:
                break
            last = version
        if newer and last == newer[-1]:
            last = ""  # shown up to the newest release the run checked: open-ended
    if (first, last) == (entry.min_version, entry.max_version):
        return None
    return Widening(entry, first, last)


def _spans(tested: list[str], shown: set[str]) -> list[list[str]]:
    """The runs of consecutive `tested` releases (oldest first) that are all in `shown`."""
    spans: list[list[str]] = []
    previous_shown = False
    for version in tested:
        if version in shown:
            if not previous_shown:
                spans.append([])
            spans[-1].append(version)
        previous_shown = version in shown
    return spans


def _closed(entry: Expectation, ending: Ending, *, run_id: str) -> Expectation:
    """The entry with its range closed on `ending.next`'s line at `ending.next` (`ended_in`), its note
    saying why (a line of its own in a note of many lines)."""
    line = version_key(ending.next).line
    ended = sorted(
        {v for v in entry.ended_in if version_key(v).line != line} | {ending.next}, key=version_key
    )
    return replace(entry, ended_in=tuple(ended), note=_noted(entry.note, ending.sentence(run_id)))


def _noted(note: str, sentence: str) -> str:
    """A note with a sentence added (a line of its own in a note of many lines)."""
    return ("\n" if "\n" in note else " ").join(filter(None, (note, sentence)))


HEADER = """# Known divergences (see records/expectations.py for the format).
# A divergence listed here is reported as `expected`; an entry a run no longer shows gets its range closed.
"""
ORDER = (
    "id",
    "implementation",
    "min_version",
    "max_version",
    "ended_in",
    "feature",
    "difference",
    "functions",
    "intermittent",
    "link",
    "case",
    "note",
)
"""The keys of a table in the order `write_expectations` adds them."""


def write_expectations(
    path: Path, entries: Iterable[Expectation], cases: Mapping[str, Case] | None = None
) -> None:
    """Write `entries` into the expectations file at `path` (begun with `HEADER` when missing), which
    `load_expectations` then reads back as them: the table of an id the file has gets only its changed
    keys rewritten, in place; any other entry is appended as a new table. Comments, order and layout
    are kept, and no table is removed. Each of `cases` is written as the case file at its path relative
    to the file."""
    try:
        document = tomlkit.parse(path.read_text() if path.exists() else HEADER)
    except (OSError, UnicodeDecodeError, TOMLKitError) as error:
        raise ExpectationsError(f"cannot read expectations {path}: {error}") from error
    tables = document.setdefault(TABLE, tomlkit.aot())
    if not isinstance(tables, AoT):
        raise ExpectationsError(f"{path}: {TABLE!r} must be [[{TABLE}]] tables to add entries to")
    listed = {str(table["id"]): table for table in tables}
    for entry in entries:
        if entry.id in listed:
            _edit(listed[entry.id], entry)
        else:
            tables.append(_table(entry))
    try:
        for name, case in (cases or {}).items():
            (path.parent / name).parent.mkdir(parents=True, exist_ok=True)
            replace_text(path.parent / name, CaseFile.of(case).to_json())
        replace_text(path, tomlkit.dumps(document))
    except OSError as error:
        raise ExpectationsError(f"cannot write expectations {path}: {error.strerror or error}") from error


def _table(entry: Expectation) -> Table:
    """A new table of the entry, after a blank line: its required keys and every other one it sets."""
    table = tomlkit.table()
    table.trivia.indent = "\n"
    for name in ORDER:
        value = _plain(getattr(entry, name))
        if value or name in REQUIRED:
            table[name] = _item(value)
    return table


def _edit(table: Table, entry: Expectation) -> None:
    """Set the keys of a listed entry's table whose value differs from the entry's (an absent key
    stands for its default), a new key right after the key before it in `ORDER` (`id` is always set)."""
    current = table.unwrap()
    before = ""
    for name in ORDER:
        value = _plain(getattr(entry, name))
        if current.get(name, _plain(getattr(UNSET, name))) != value:
            if name in current:
                table[name] = _item(value)
            else:
                table.value._insert_after(before, name, _item(value))
        if name in table:
            before = name


def _plain(value: str | bool | tuple[str, ...]) -> str | bool | list[str]:
    """An entry's value as TOML reads it back (a list for a tuple)."""
    return list(value) if isinstance(value, tuple) else value


def _item(value: str | bool | list[str]) -> Item:
    """A TOML value: a string with line breaks (and no carriage return) as a multi-line string."""
    if isinstance(value, str):
        return tomlkit.string(value, multiline="\n" in value and "\r" not in value)
    return tomlkit.item(value)


ENDINGS: Final = "endings.json"
"""The file of a run directory naming the listed divergences the run shows ended (`write_endings`)."""


@dataclass(frozen=True, slots=True)
class Ended:
    """A listed divergence a run shows ended: the releases it no longer shows on (the first of each
    line, inside its listed range), and the known case that replays it, relative to the working
    directory ('' when the entry keeps none)."""

    id: str
    releases: tuple[str, ...]
    case: str = ""

    def headline(self) -> str:
        """``ended on 2.14.10 and 2.15.3: transform-match-star-prefixed-token``."""
        releases = list(self.releases)
        named = " and ".join([", ".join(releases[:-1]), releases[-1]] if len(releases) > 1 else releases)
        return f"ended on {named}: {self.id}"

    def replay_line(self) -> str:
        """The command that shows the end on each release, or '' without a known case."""
        if not self.case:
            return ""
        return "; ".join(f"nats-conformance replay {self.case} --server-version {v}" for v in self.releases)


def ended_entries(endings: Iterable[Ending], expectations_path: Path) -> list[Ended]:
    """The endings of a run by entry, with each entry's known case as a path from the working directory
    (absolute when the file is elsewhere)."""
    by_entry: dict[str, tuple[Expectation, set[str]]] = {}
    for ending in endings:
        by_entry.setdefault(ending.entry.id, (ending.entry, set()))[1].add(ending.next)
    ended = []
    for entry, releases in by_entry.values():
        case = ""
        if entry.case:
            path = (expectations_path.parent / entry.case).resolve()
            case = str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)
        ended.append(Ended(entry.id, tuple(sorted(releases, key=version_key)), case))
    return sorted(ended, key=lambda item: item.id)


def write_endings(run_dir: Path, ended: Sequence[Ended]) -> None:
    """Write the run's endings (replaced whole, never half-written)."""
    path = run_dir / ENDINGS
    try:
        replace_text(path, json.dumps([asdict(item) for item in ended], indent=1) + "\n")
    except OSError as error:
        raise ExpectationsError(f"cannot write {path}: {error.strerror or error}") from error


def read_endings(run_dir: Path) -> tuple[Ended, ...]:
    """A run's endings (none when it has no endings file).

    Raises:
        ExpectationsError: the file is unreadable or malformed.
    """
    path = run_dir / ENDINGS
    try:
        items = json.loads(path.read_text())
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as error:
        raise ExpectationsError(f"cannot read {path}: {error}") from error
    try:
        return tuple(
            Ended(str(item["id"]), tuple(map(str, item["releases"])), str(item.get("case", "")))
            for item in items
        )
    except (TypeError, KeyError) as error:
        raise ExpectationsError(f"{path} is not an endings file ({error})") from error
