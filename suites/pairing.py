"""Paired replays: a divergence class seen on one side of a comparison and not on the other is run again
on the other side, its smallest case (`records.pairs`), so that a change is claimed only where the same
case's outcome differs.

Two comparisons are paired:

- **within one run**, each two consecutive nats-server releases that judged a feature (the report's
  changelog and the site's release pages);
- **against a baseline or a previous run** (`gate`): each release of the run with the release of the
  same line on the other side (the same release when both have it).

A side is a release by its version; a release that is no version (`system`, a binary, a server at a
URL) and an adapter cannot be started again, and are not paired. Classes whose verdict is a test of
shares (weighted lists, `distribution` rows) are not replayed: one more sample says nothing, and the
reports compare their counts by their test statistic instead (`reports.changes`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

import pyarrow.dataset as ds

from nats_conformance.fixtures.options import build_run_config
from nats_conformance.records.casefile import DIVERGENCES, CaseFile, case_file_of, read_case_file
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.pairs import (
    UNKNOWN,
    WITHIN,
    Pair,
    against_label,
    case_file_name,
    counterpart,
    statistical,
    write_pairs,
)
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import CASES
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.versions import Version
from nats_conformance.suites.replay import replay_file_on_server

REFERENCE: Final = "nats-server"


@dataclass(frozen=True, slots=True)
class Side:
    """What one side of a comparison showed: per release, the features it judged and the smallest case
    of each divergence class (by `case_class`)."""

    features: Mapping[str, frozenset[str]]
    cases: Mapping[str, Mapping[str, CaseFile]]

    def releases(self) -> list[str]:
        """The side's releases that are versions, oldest first."""
        return sorted((v for v in self.features if Version.parse_or_none(v) is not None), key=_sort_key)


@dataclass(frozen=True, slots=True)
class Planned:
    """A case seen on release `seen_on` to be run on `replay_on`."""

    case: CaseFile
    seen_on: str
    replay_on: str


def _sort_key(text: str) -> Version:
    version = Version.parse_or_none(text)
    assert version is not None
    return version


def run_side(run_dir: Path) -> Side:
    """A run directory as a side: the features judged on each release (its records, unknown cases left
    out) and its case files (`divergences/`), nats-server's only."""
    features: dict[str, set[str]] = {}
    parts = sorted((run_dir / CASES).glob("*.parquet"))
    if parts:
        table = ds.dataset([str(p) for p in parts], format="parquet").to_table(
            columns=["implementation", "server_version", "feature"],
            filter=(ds.field("verdict") != "unknown") & (ds.field("implementation") == REFERENCE),
        )
        versions, judged = (table[column].to_pylist() for column in ("server_version", "feature"))
        for version, feature in set(zip(versions, judged, strict=True)):
            features.setdefault(version, set()).add(feature)
    cases: dict[str, dict[str, CaseFile]] = {}
    for path in sorted((run_dir / DIVERGENCES).glob("*.json")):
        case = read_case_file(path)
        if case.found_on.get("implementation") == REFERENCE:
            cases.setdefault(case.found_on.get("server_version", ""), {})[case.case_class] = case
    return Side({v: frozenset(f) for v, f in features.items()}, cases)


def baseline_side(document: Mapping[str, Any], where: str) -> Side:
    """A baseline file's side (`reports.baseline`, version 2 on): its classes' features per release and
    the case files it keeps."""
    features: dict[str, set[str]] = {}
    for key in document.get("classes") or {}:
        implementation, _, rest = str(key).rpartition(" ")
        implementation, _, version = implementation.rpartition(" ")
        if implementation == REFERENCE:
            features.setdefault(version, set()).add(rest.partition(":")[0])
    cases: dict[str, dict[str, CaseFile]] = {}
    for number, entry in enumerate(document.get("cases") or []):
        case = case_file_of(entry, f"{where} case {number + 1}")
        cases.setdefault(case.found_on.get("server_version", ""), {})[case.case_class] = case
    return Side({v: frozenset(f) for v, f in features.items()}, cases)


def other_side(path: Path) -> Side:
    """The side of a comparison named by a path: a previous run directory, or a baseline file.

    Raises:
        ConformanceError: a path that is neither, in one line.
    """
    if path.is_dir():
        return run_side(path)
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConformanceError(f"{path} is neither a run directory nor a baseline file ({error})") from error
    if not isinstance(document, dict) or "classes" not in document:
        raise ConformanceError(f"{path} is neither a run directory nor a baseline file")
    return baseline_side(document, str(path))


def one_sided(
    seen: Side, other: Side, seen_on: str, other_on: str, *, features: frozenset[str] | None = None
) -> Iterable[Planned]:
    """The smallest case of each class `seen` shows on `seen_on` and `other` does not on `other_on`,
    for the features both judged (of `features` only, when given), statistical classes left out."""
    both = seen.features.get(seen_on, frozenset()) & other.features.get(other_on, frozenset())
    both = both if features is None else both & features
    theirs = other.cases.get(other_on, {})
    for case_class, case in sorted(seen.cases.get(seen_on, {}).items()):
        if (
            case.feature in both
            and case_class not in theirs
            and not statistical(case.feature, case.difference)
        ):
            yield Planned(case, seen_on, other_on)


def within(side: Side) -> list[Planned]:
    """Replays between each two consecutive releases of one run that judged a class's feature."""
    planned: list[Planned] = []
    for feature in sorted({f for features in side.features.values() for f in features}):
        releases = [v for v in side.releases() if feature in side.features[v]]
        for before, after in pairwise(releases):
            for seen_on, other_on in ((before, after), (after, before)):
                planned += one_sided(side, side, seen_on, other_on, features=frozenset((feature,)))
    return planned


def across(run: Side, other: Side) -> list[Planned]:
    """Replays between a run and a baseline or previous run, release by release of the same line. On
    the same release only the other side's cases are run again: the run judged its own there already,
    with the same code, so its replay could only repeat it."""
    planned: list[Planned] = []
    for version in run.releases():
        theirs = counterpart(version, other.releases())
        if theirs is not None:
            if theirs != version:
                planned += one_sided(run, other, version, theirs)
            planned += one_sided(other, run, theirs, version)
    return planned


Replayer = Callable[[CaseFile, str, Expectations], list[Case]]


def replay_on_release(case: CaseFile, version: str, expectations: Expectations) -> list[Case]:
    """The case on a fresh server of `version`, in the layout it was found in (`suites.replay`)."""
    run = build_run_config([version], [], None, None)
    return replay_file_on_server(case, run, expectations=expectations)


def replay_all(
    planned: Sequence[Planned],
    against: str,
    expectations: Expectations,
    *,
    replay: Replayer = replay_on_release,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Pair], list[tuple[str, CaseFile]]]:
    """Each planned case on its other side: its pair and its case file by name; a case whose outcome
    differs there runs once more on its own side, so that a class that depends on timing is not
    claimed (`records.pairs.UNSTABLE`). A replay that fails to run is a pair of verdict `unknown`."""
    pairs, files = [], []
    step = max(1, len(planned) // 10)
    for number, item in enumerate(planned, 1):
        if progress is not None and (number % step == 0 or number == len(planned)):
            progress(f"paired replays: {number}/{len(planned)}")
        difference, verdict = _replayed(replay, item.case, item.replay_on, expectations)
        again = ("", "")
        if verdict != UNKNOWN and difference != item.case.difference:  # a change: is the seen side stable?
            again = _replayed(replay, item.case, item.seen_on, expectations)
        name = case_file_name(item.case, item.replay_on)
        files.append((name, item.case))
        pairs.append(
            Pair(
                against=against,
                implementation=REFERENCE,
                feature=item.case.feature,
                functions=item.case.functions,
                seen_on=item.seen_on,
                seen_difference=item.case.difference,
                seen_verdict=item.case.found_on.get("verdict", ""),
                replayed_on=item.replay_on,
                replayed_difference=difference,
                replayed_verdict=verdict,
                case_file=name,
                seen_again_difference=again[0],
                seen_again_verdict=again[1],
            )
        )
    return pairs, files


def _replayed(replay: Replayer, case: CaseFile, version: str, expectations: Expectations) -> tuple[str, str]:
    """The case's difference and verdict run on `version` (`unknown` when the run fails: a release that
    cannot be built, a server that does not start)."""
    try:
        cases = replay(case, version, Expectations(entries=expectations.entries))
    except ConformanceError:
        cases = []
    return outcome_of(cases, case)


def outcome_of(cases: Sequence[Case], seen: CaseFile) -> tuple[str, str]:
    """The replayed unit's outcome for the case: its case of the same class if any, else its first
    divergence, else agree; `unknown` when no case of the unit was judged."""
    judged = [case for case in cases if case.verdict != "unknown"]
    if not judged:
        return "", "unknown"
    for case in judged:
        if case.case_class == seen.case_class:
            return case.difference, case.verdict
    diverging = [case for case in judged if case.difference]
    if diverging:
        return diverging[0].difference, diverging[0].verdict
    return "", "agree"


def pair_run(
    run_dir: Path,
    expectations: Expectations,
    *,
    against: Path | None = None,
    replay: Replayer = replay_on_release,
    quiet: bool = False,
) -> list[Pair]:
    """Pair the run's one-sided classes: between its own releases, or with the baseline file or
    previous run `against`; the pairs are written into the run directory (`records.pairs`)."""
    run = run_side(run_dir)
    if against is None:
        planned, label = within(run), WITHIN
    else:
        planned, label = across(run, other_side(against)), against_label(against)

    def say(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    claimable = [item for item in planned if not intermittent(item, expectations)]
    pairs, files = replay_all(claimable, label, expectations, replay=replay, progress=say)
    write_pairs(run_dir, label, pairs, files)
    return pairs


def intermittent(item: Planned, expectations: Expectations) -> bool:
    """Whether the case's class is a listed divergence that shows only now and then (`intermittent`):
    a replay that misses it dates nothing, so it is not replayed, and the class counts as not drawn on
    both."""
    case = item.case
    return any(
        entry.intermittent and entry.explains(case.feature, case.functions, case.difference)
        for entry in expectations.in_range(REFERENCE, item.seen_on)
    )
