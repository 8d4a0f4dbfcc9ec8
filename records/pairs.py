"""Paired evidence: one case run on both sides of a comparison, the only ground on which a change is
claimed (docs/guide/reports.md, "What changed").

A side is a release (or any target) that judged a case. When a divergence class shows on one side of a
comparison and not on the other, the smallest case of that class is replayed on the other side
(`suites.pairing`); a `Pair` records both outcomes. The change is real only when the same case's
outcome differs: its `difference` (`records.schema.Case.difference`, '' when it agrees). A pair whose
replay could not be judged (`unknown`) claims nothing.

A run keeps its pairs in `pairs.json` (replaced whole, never half-written) and each replayed case as a
case file under `pairs/`, so that each pair has a one-line replay on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from nats_conformance.records.casefile import CaseFile, slug
from nats_conformance.records.files import replace_text
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.versions import Version

PAIRS: Final = "pairs.json"
"""The file of a run directory holding its pairs."""
PAIRED_CASES: Final = "pairs"
"""The folder of a run directory holding the case file of each pair."""
FORMAT: Final = "nats-conformance-pairs"
VERSION: Final = 1
WITHIN: Final = "within"
"""The `against` of pairs between the releases of one run (the report's changelog)."""
CHANGED, SAME, UNKNOWN, UNSTABLE = "changed", "same", "unknown", "unstable"
STATISTICAL_FEATURES: Final = frozenset({"weighted"})
"""Features whose every class is a test of shares: one more sample says nothing, so they are compared by
their counts (Fisher's exact test at `records.significance.CHANGE_ALPHA`), never replayed."""
STATISTICAL_DIFFERENCES: Final = frozenset({"distribution"})
"""Differences that are a test of shares in any feature (a partition mapping's uniformity)."""


def statistical(feature: str, difference: str) -> bool:
    """Whether a class is a test of shares (`STATISTICAL_FEATURES`, `STATISTICAL_DIFFERENCES`)."""
    return feature in STATISTICAL_FEATURES or difference in STATISTICAL_DIFFERENCES


class PairsError(ConformanceError):
    """A pairs file that cannot be read or written; the message is one line naming the file."""

    kind = "pairs"


@dataclass(frozen=True, slots=True)
class Pair:
    """One case seen on a side (`seen_on`) and replayed on the other (`replayed_on`), with each side's
    difference and verdict. `against` names the comparison: `WITHIN` one run, or the baseline file or
    previous run the run was compared with."""

    against: str
    implementation: str
    feature: str
    functions: str
    seen_on: str
    seen_difference: str
    seen_verdict: str
    replayed_on: str
    replayed_difference: str
    replayed_verdict: str
    case_file: str
    """The case file's name under the run's `pairs/` folder."""
    seen_again_difference: str = ""
    seen_again_verdict: str = ""
    """The case run once more on `seen_on` when its replay differed ('' when it was not)."""

    @property
    def outcome(self) -> str:
        """`changed` when the replay judged the case with another difference and the case, run again on
        the side it was seen on, showed what it showed there (on a release compared with itself, a
        baseline's: what the replay showed, as both runs are of today); `unstable` when that second run
        did not (a class that depends on timing, which one pair cannot date); `same` when the replay
        gave the same difference; `unknown` when the replay could not be judged."""
        if self.replayed_verdict in ("", UNKNOWN):
            return UNKNOWN
        if self.replayed_difference == self.seen_difference:
            return SAME
        if not self.seen_again_verdict:
            return CHANGED
        if self.seen_again_verdict == UNKNOWN:
            return UNSTABLE
        if self.seen_on == self.replayed_on:  # two runs of one release today: they must agree
            return CHANGED if self.seen_again_difference == self.replayed_difference else UNSTABLE
        return CHANGED if self.seen_again_difference == self.seen_difference else UNSTABLE

    @property
    def gate_class(self) -> str:
        """``feature:functions`` (``literal`` for none), as the gate names a class."""
        return f"{self.feature}:{self.functions or 'literal'}"

    def showing(self, version: str) -> str:
        """The difference on side `version` ('' when the case agrees there)."""
        return self.seen_difference if version == self.seen_on else self.replayed_difference

    def replay_line(self, run_dir: Path) -> str:
        """The one command that runs the case on both sides."""
        path = run_dir / PAIRED_CASES / self.case_file
        return "; ".join(
            f"nats-conformance replay {path} --server-version {version}"
            for version in (self.seen_on, self.replayed_on)
        )

    def text(self) -> str:
        """``mapping:wildcard: transform-match on 2.14.9, agree on 2.14.10``, the older side first."""
        sides = sorted((self.seen_on, self.replayed_on), key=_order)
        shown = ", ".join(
            f"{self.showing(version) or 'agree'} on {version}" for version in dict.fromkeys(sides)
        )
        return f"{self.gate_class}: {shown}"


def case_file_name(case: CaseFile, replayed_on: str) -> str:
    """The name a pair's case file takes: the side it was seen on, the side replayed on, its class."""
    seen = case.found_on.get("server_version") or case.server_version
    return f"{slug(seen)}-to-{slug(replayed_on)}-{slug(case.case_class)}.json"


@dataclass(frozen=True, slots=True)
class Paired:
    """A run's pairs file: the comparisons paired (`against` labels, even those that left no pair) and
    their pairs."""

    compared: frozenset[str] = frozenset()
    pairs: tuple[Pair, ...] = ()

    def of(self, against: str) -> tuple[Pair, ...] | None:
        """The pairs of one comparison, or None when the run was not paired with it."""
        if against not in self.compared:
            return None
        return tuple(pair for pair in self.pairs if pair.against == against)


def write_pairs(
    run_dir: Path, against: str, pairs: Sequence[Pair], cases: Iterable[tuple[str, CaseFile]]
) -> None:
    """Record the comparison `against` with its `pairs` (replacing that comparison's earlier pairs)
    and their case files, by name, in the run directory.

    Raises:
        PairsError: a file cannot be written (a full disk): the run keeps its earlier pairs whole.
    """
    path = run_dir / PAIRS
    earlier = read_pairs(run_dir)
    kept = [pair for pair in earlier.pairs if pair.against != against]
    document = {
        "format": FORMAT,
        "version": VERSION,
        "compared": sorted(earlier.compared | {against}),
        "pairs": [asdict(pair) for pair in (*kept, *pairs)],
    }
    try:
        folder = run_dir / PAIRED_CASES
        folder.mkdir(exist_ok=True)
        for name, case in cases:
            (folder / name).write_text(case.to_json())
        replace_text(path, json.dumps(document, indent=1, sort_keys=True) + "\n")
    except OSError as error:
        raise PairsError(f"cannot write {path}: {error.strerror or error}") from error


def read_pairs(run_dir: Path) -> Paired:
    """The pairs file of a run directory (nothing compared when it has none).

    Raises:
        PairsError: the file is unreadable or not a pairs file.
    """
    path = run_dir / PAIRS
    try:
        document: Any = json.loads(path.read_text())
    except FileNotFoundError:
        return Paired()
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise PairsError(f"cannot read {path}: {error}") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise PairsError(f'{path} is not a pairs file (no "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise PairsError(f"{path} has pairs version {document.get('version')!r}; this reads {VERSION}")
    names = set(Pair.__dataclass_fields__)
    required = names - {"seen_again_difference", "seen_again_verdict"}  # pairs written before them
    pairs = []
    for entry in document.get("pairs", []):
        if (
            not isinstance(entry, dict)
            or not required <= set(entry) <= names
            or not all(isinstance(v, str) for v in entry.values())
        ):
            raise PairsError(f"{path} has a malformed pair: {json.dumps(entry)[:200]}")
        pairs.append(Pair(**entry))
    compared = document.get("compared", [])
    if not isinstance(compared, list) or not all(isinstance(label, str) for label in compared):
        raise PairsError(f'{path} has a malformed "compared" list')
    return Paired(frozenset(compared), tuple(pairs))


def against_label(path: Path) -> str:
    """How a comparison with a baseline file or a previous run directory is named in a pairs file: the
    resolved path."""
    return str(path.resolve())


def counterpart(version: str, releases: Iterable[str]) -> str | None:
    """The release of ``releases`` that a run's ``version`` is compared with: the same, else the newest
    of its line, else None (``version`` or every other is no release)."""
    candidates = set(releases)
    if version in candidates:
        return version
    line = [
        (other, text)
        for text in candidates
        if (other := Version.parse_or_none(text)) and other.line == _line(version)
    ]
    return max(line)[1] if line else None


def _line(text: str) -> object:
    parsed = Version.parse_or_none(text)
    return None if parsed is None else parsed.line


def _order(text: str) -> tuple[bool, Version | None, str]:
    """Versions in order, then anything else by its text."""
    parsed = Version.parse_or_none(text)
    return parsed is None, parsed, text
