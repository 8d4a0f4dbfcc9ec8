"""A run of `nats-conformance mutants` the record and report tests share, written by the suite's own
`document_of`: six mutants of two files of 2.14.10, with nats-server's tests run on them.

- 3, `NewSubjectTransformWithStrict`: survived (mapping and validation ran on it); the tests kill it.
- 7, `indexPlaceHolders`: killed by pair (mapping); the tests kill it.
- 9, `indexPlaceHolders`: unreached; the tests let it through.
- 12, `isValidSubject`: listed as equivalent, not run.
- 15, `isValidSubject`: listed as equivalent, named with --mutant, and killed at start: a wrong entry.
- 20, `matchLevel`: survived (matching ran on it), a dropped statement.

Campaign: 6 mutants, 1 equivalent, 2 killed, 2 survived, 1 unreached: 40.0 % (50.0 % of the reached
ones); subject_transform.go 1 of 3 (33.3 %), sublist.go 1 of 2 (50.0 %). The tests: 2 of 5 (40.0 %);
subject_transform.go 2 of 3 (66.7 %), sublist.go 0 of 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nats_conformance.fixtures.mutants import Schemata
from nats_conformance.records.mutants import EQUIVALENT, KILLED, MUTANTS_FILE, SURVIVED, UNREACHED, Mutant
from nats_conformance.suites.mutants import Build, Equivalent, Outcome, document_of

TRANSFORM, SUBLIST = "server/subject_transform.go", "server/sublist.go"
MUTANTS = (
    Mutant(3, TRANSFORM, "NewSubjectTransformWithStrict", 100, "drop-condition", "!sv || n > 0", "!sv"),
    Mutant(7, TRANSFORM, "indexPlaceHolders", 282, "if-false", "len(args) == 1", "false"),
    Mutant(9, TRANSFORM, "indexPlaceHolders", 291, "boundary", "i > math.MaxInt32", "i >= math.MaxInt32"),
    Mutant(12, SUBLIST, "isValidSubject", 1257, "if-false", "subject == _EMPTY_", "false"),
    Mutant(15, SUBLIST, "isValidSubject", 1262, "constant", "0", "1"),
    Mutant(20, SUBLIST, "matchLevel", 1300, "drop-statement", "plen = len(p)", ""),
)  # fmt: skip
REPLAY = "nats-conformance replay runs/m00007/mapping/pairs/mutant-7.json"
SETTINGS = {
    "plan": "quick",
    "families": "plan",
    "seed": 21,
    "sample": None,
    "part": "2/4",
    "master": None,
    "anchor_tests": 42,
    "limit": 138.2,
    "reach": True,
    "original_seconds": 13.8,
    "reach_seconds": 31.0,
    "seconds": 126.6,
}


def outcomes() -> dict[int, Outcome]:
    return {
        3: Outcome(3, SURVIVED, families=["mapping", "validation"], anchor=KILLED, anchor_test="TestMapping"),
        7: Outcome(7, KILLED, "by pair", "mapping", ["mapping"], "a.* -> {{wildcard(1)}}", REPLAY, 0, KILLED),
        9: Outcome(9, UNREACHED, anchor=SURVIVED),
        12: Outcome(12, EQUIVALENT, "no input tells an empty subject apart here"),
        15: Outcome(15, KILLED, "at start", case="nats-server: invalid subject"),
        20: Outcome(20, SURVIVED, families=["matching"], anchor=SURVIVED),
    }  # fmt: skip


def mutants_document(
    mutants: tuple[Mutant, ...] = MUTANTS, found: dict[int, Outcome] | None = None
) -> dict[str, Any]:
    """The document of a run of `mutants` (default `MUTANTS`, with `outcomes()`) as the suite writes it."""
    equivalents = [
        Equivalent(SUBLIST, "isValidSubject", "if-false", "subject == _EMPTY_", "false", "an empty subject"),
        Equivalent(SUBLIST, "isValidSubject", "constant", "0", "1", "wrongly listed"),
    ]
    schemata = Schemata("2.14.10", Path("build"), Path("build/nats-server"), mutants)
    found = outcomes() if found is None else found
    return document_of(Build.of(schemata), mutants, found, equivalents, settings=SETTINGS, anchor=True)


def mutants_folder(path: Path, document: dict[str, Any] | None = None) -> Path:
    """A run folder at `path` holding `document` (default `mutants_document()`) as `mutants.json`."""
    path.mkdir(parents=True, exist_ok=True)
    (path / MUTANTS_FILE).write_text(json.dumps(document or mutants_document(), indent=1) + "\n")
    return path
