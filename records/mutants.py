"""The mutants file: `mutants.json` in the run folder of `nats-conformance mutants`, which the report
reads. Both sides share the format defined here: the suites write it (`suites.mutants.document_of`,
with `FORMAT` and `VERSION`), the reports read it back with the records (`read_mutants`; a file that is
not such a document, with bad JSON, another format, a newer version or a missing field, is refused with
one line naming it, before any aggregation starts).

It gives, for one nats-server release, how many mutants of its mapping code the campaign killed: in
total, per file and per function, the same for nats-server's own tests (the anchor) when they ran, each
survivor with its diff and the families that ran on it, the mutants no family reaches, and the mutants
listed as equivalent that were killed all the same (their entries are wrong).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from nats_conformance.records.coverage import percent
from nats_conformance.records.errors import fields_of, items_of, objects_of, read_document, value_of

MUTANTS_FILE: Final = "mutants.json"
FORMAT: Final = "nats-conformance-mutants"
VERSION: Final = 1
KILLED, SURVIVED, UNREACHED, EQUIVALENT = "killed", "survived", "unreached", "equivalent"
"""A mutant's `status` in the file."""


@dataclass(frozen=True, slots=True)
class Figures:
    """Mutants of one file, one function or all, and how they fared (the file's `score` and
    `score_reached` follow from these: `percent`)."""

    mutants: int
    equivalent: int
    killed: int
    unreached: int

    @property
    def judged(self) -> int:
        """The mutants a score counts: all but the equivalent ones."""
        return self.mutants - self.equivalent

    @property
    def survived(self) -> int:
        return self.judged - self.killed - self.unreached

    @property
    def percent(self) -> str:
        """The score, killed / (mutants - equivalent) with unreached mutants as not killed: `61.5 %`, or
        `-` when no mutant is counted."""
        return percent(self.killed, self.judged)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Figures:
        return cls(**fields_of(data, int, "mutants", "equivalent", "killed", "unreached"))


@dataclass(frozen=True, slots=True)
class Scored:
    """One file's figures (`function` ''), or one function's: the campaign's, and nats-server's tests'
    (None when the anchor did not run)."""

    file: str
    function: str
    campaign: Figures
    anchor: Figures | None


@dataclass(frozen=True, slots=True)
class Survivor:
    """A mutant no family that reached it told apart: where, the change as a diff, the families that
    ran on it, and why its run failed ('' when it did not)."""

    id: int
    file: str
    function: str
    line: int
    operator: str
    diff: str
    families: tuple[str, ...]
    error: str


@dataclass(frozen=True, slots=True)
class Mutant:
    """One mutant: an entry of the manifest the mutant tool writes."""

    id: int
    file: str
    function: str
    line: int
    operator: str
    original: str
    mutated: str

    @property
    def diff(self) -> str:
        """``- original`` and ``+ mutated``, the survivor listing's diff."""
        return (
            f"{self.file}:{self.line} ({self.function})\n- {self.original}\n+ {self.mutated or '(dropped)'}"
        )


@dataclass(frozen=True, slots=True)
class WrongEquivalent:
    """A mutant the equivalence file lists, yet killed, and how it was killed (`how`, the family and case
    that did, and the case's replay line)."""

    mutant: Mutant
    how: str
    family: str
    case: str
    replay: str


@dataclass(frozen=True, slots=True)
class Settings:
    """What the mutants ran: the plan, its families (() for every family of the plan), the seed, the
    sample and part of the mutants asked for, how many of nats-server's tests the anchor ran, and
    whether each mutant ran only the families that reach it."""

    plan: str
    families: tuple[str, ...]
    seed: int
    sample: int | None
    part: str | None
    anchor_tests: int
    reach: bool
    then: str | None = None
    """The plan the mutants the first left alive ran again under (`--then`), if any."""


@dataclass(frozen=True, slots=True)
class MutantsRun:
    """One run of `nats-conformance mutants`: its folder's name, the release and how many mutants its
    build holds, the settings, the figures in total, per file and per function, the survivors, the ids
    of unreached mutants and the wrong equivalence entries."""

    folder: str
    release: str
    in_build: int
    settings: Settings
    totals: Figures
    anchor: Figures | None
    by_file: tuple[Scored, ...]
    by_function: tuple[Scored, ...]
    survivors: tuple[Survivor, ...]
    unreached: tuple[int, ...]
    equivalent_killed: tuple[WrongEquivalent, ...]

    @classmethod
    def from_json(cls, data: dict[str, Any], folder: str) -> MutantsRun:
        """The run of a `mutants.json` object; ValueError on a missing or malformed field."""
        anchor = data.get("anchor")
        if anchor is not None and not isinstance(anchor, dict):
            raise ValueError("field 'anchor' must be an object or null")
        outcomes = {value_of(item, "id", int): item for item in objects_of(data, "outcomes")}
        return cls(
            folder=folder,
            release=value_of(data, "release", str),
            in_build=value_of(data, "in_build", int),
            settings=_settings(data),
            totals=Figures.from_json(data),
            anchor=None if anchor is None else Figures.from_json(anchor),
            by_file=_scored(data, anchor, "by_file"),
            by_function=_scored(data, anchor, "by_function"),
            survivors=tuple(_survivor(item, outcomes) for item in objects_of(data, "survivors")),
            unreached=items_of(data, "unreached_mutants", int),
            equivalent_killed=tuple(
                _wrong(outcomes, number) for number in items_of(data, "equivalent_killed", int)
            ),
        )


def read_mutants(folder: Path) -> MutantsRun | None:
    """The mutants run of `folder`, or None when it has no `mutants.json`; `ReportError` when the file is
    not a mutants document this builder reads."""
    return read_document(
        folder / MUTANTS_FILE,
        "mutants",
        FORMAT,
        VERSION,
        lambda data: MutantsRun.from_json(data, folder.name),
    )


def _settings(data: dict[str, Any]) -> Settings:
    settings = value_of(data, "settings", dict)
    families = settings.get("families")
    if families != "plan" and not (isinstance(families, list) and all(isinstance(f, str) for f in families)):
        raise ValueError("field 'families' of 'settings' must be \"plan\" or a list of names")
    sample, part, then = settings.get("sample"), settings.get("part"), settings.get("then")
    return Settings(
        plan=value_of(settings, "plan", str),
        families=() if families == "plan" else tuple(families),
        seed=value_of(settings, "seed", int),
        sample=None if sample is None else value_of(settings, "sample", int),
        part=None if part is None else value_of(settings, "part", str),
        anchor_tests=value_of(settings, "anchor_tests", int),
        reach=value_of(settings, "reach", bool),
        then=None if then is None else value_of(settings, "then", str),
    )


def _scored(data: dict[str, Any], anchor: dict[str, Any] | None, name: str) -> tuple[Scored, ...]:
    """Each file's or function's figures (`name`: `by_file` or `by_function`, whose keys are
    `FILE:FUNCTION`), with the anchor's of the same key."""
    campaign = value_of(data, name, dict)
    tested = {} if anchor is None else value_of(anchor, name, dict)
    found = []
    for key, figures in campaign.items():
        file, _, function = key.partition(":") if name == "by_function" else (key, "", "")
        theirs = tested.get(key)
        found.append(
            Scored(
                file,
                function,
                Figures.from_json(value_of({key: figures}, key, dict)),
                None if anchor is None else Figures.from_json(value_of({key: theirs}, key, dict)),
            )
        )
    return tuple(found)


def _outcome(outcomes: dict[int, dict[str, Any]], number: int) -> dict[str, Any]:
    outcome = outcomes.get(number)
    if outcome is None:
        raise ValueError(f"mutant {number} has no entry in 'outcomes'")
    return outcome


def _survivor(item: dict[str, Any], outcomes: dict[int, dict[str, Any]]) -> Survivor:
    number = value_of(item, "id", int)
    outcome = _outcome(outcomes, number)
    return Survivor(
        **fields_of(item, int, "id", "line"),
        **fields_of(item, str, "file", "function", "operator", "diff"),
        families=items_of(outcome, "families", str),
        error=value_of(outcome, "error", str),
    )


def _wrong(outcomes: dict[int, dict[str, Any]], number: int) -> WrongEquivalent:
    outcome = _outcome(outcomes, number)
    if outcome.get("status") != KILLED:
        raise ValueError(f"mutant {number} of 'equivalent_killed' was not killed")
    mutant = Mutant(
        id=number,
        line=value_of(outcome, "line", int),
        **fields_of(outcome, str, "file", "function", "operator", "original", "mutated"),
    )
    return WrongEquivalent(mutant, **fields_of(outcome, str, "how", "family", "case", "replay"))
