"""Baseline gating: each case class's verdict per target, kept in a committed JSON file, and the gate
that compares a run with it.

A gate class is ``{feature}:{functions}`` (``literal`` when a case uses no function), per
implementation and server version. Its verdict is the worst of its cases' (agree < expected <
diverge); ``unknown`` cases (failed infrastructure) are ignored, and a class with only unknown cases is
left out. A **regression** (agree in the baseline, diverge now) fails the gate; a **fix** (diverge or
expected, now agree) and every other move (agree -> expected, expected -> diverge, a new class, a class
missing from the run) never fail. Against a previous run instead of a baseline file (``strict``), a
class that was expected and now diverges, or a new class that diverges, is a regression too.

The verdict is printed first, then the regressions, then the fixes; the other moves go to a details
file (``GateResult.render`` and ``details``).

**Paired.** When the run was paired with the baseline or the previous run (``suites.pairing``: each
divergence class one side shows and the other does not, its smallest case run on the other side), a move
is claimed only when a pair of its class between its two releases shows the same case with another
outcome, or, for a statistical class, when its share of diverging cases differs by Fisher's exact test
at ``records.significance.CHANGE_ALPHA``. Each release of the run then meets the release of its line on
the other side (the same release, else the newest of the line: ``2.14.9..2.14.10``). Every other move
was not drawn on both: counted in the verdict line, listed in the details file, never a regression or a
fix. A baseline of version 2 keeps the smallest case of each divergence class for that replay, and the
number of diverging cases of each class for that test.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NamedTuple

from nats_conformance.records.aggregates import VerdictCount
from nats_conformance.records.casefile import DIVERGENCES
from nats_conformance.records.counts import part_counts
from nats_conformance.records.files import replace_text
from nats_conformance.records.load import Run, load_records
from nats_conformance.records.pairs import CHANGED, Pair, counterpart, statistical
from nats_conformance.records.releases import REFERENCE_IMPLEMENTATION as REFERENCE
from nats_conformance.records.releases import Release, version_key
from nats_conformance.records.significance import CHANGE_ALPHA
from nats_conformance.reference.errors import ConformanceError, InvalidVersionError
from nats_conformance.reference.versions import Version
from nats_conformance.reports.stats import fisher_exact

FORMAT: Final = "nats-conformance-baseline"
VERSION: Final = 2
"""Version 2 added each class's diverging cases (`diverging`) and the case files (`cases`)."""
ORDER: Final = ("agree", "expected", "diverge")
"""Judged verdicts from best to worst; a class takes its worst case's."""
LITERAL: Final = "literal"
DETAILS: Final = "gate-details.txt"
"""The gate's details file, beside the (first) run gated unless ``--details`` names another."""


class BaselineError(ConformanceError):
    """A baseline file cannot be read or written: missing, not a baseline, of a newer version, or a
    record of a verdict the gate does not know. The message is one line naming the file."""

    kind = "baseline"


class ClassKey(NamedTuple):
    """A gate class of one target: ``nats-server 2.14.5 partition:partition``."""

    implementation: str
    server_version: str
    case_class: str

    def __str__(self) -> str:
        return f"{self.implementation} {self.server_version} {self.case_class}"

    @property
    def order(self) -> tuple[Any, ...]:
        """Sort key: targets as the report orders releases (2.9 before 2.10), then the class."""
        return Release(self.implementation, self.server_version).key, self.case_class

    @classmethod
    def parse(cls, text: str) -> ClassKey | None:
        """The key written as ``text`` (the implementation may hold spaces, the rest may not)."""
        parts = text.rsplit(" ", 2)
        if len(parts) != 3 or not all(parts):
            return None
        return cls(*parts)


def gate_class(feature: str, functions: str) -> str:
    """``feature:functions``, or ``feature:literal`` when the case uses no mapping function."""
    return f"{feature}:{functions or LITERAL}"


@dataclass(frozen=True, slots=True)
class ClassVerdict:
    """A class's worst verdict and its judged cases; ``worst`` is how many of them have that verdict
    (None when read from a baseline file, which keeps only the total)."""

    verdict: str
    cases: int
    worst: int | None = None
    diverging: int | None = None
    """Its diverging and expected cases (None when read from a baseline of version 1)."""

    def describe(self) -> str:
        """``diverge (3 of 1000 cases)``, or ``agree (1000 cases)`` when every case has the verdict."""
        if self.worst is None or self.worst == self.cases:
            return f"{self.verdict} ({_count(self.cases, 'case')})"
        return f"{self.verdict} ({self.worst} of {_count(self.cases, 'case')})"


Classes = dict[ClassKey, ClassVerdict]


def fold(counts: Mapping[tuple[ClassKey, str], int]) -> Classes:
    """Class verdicts from case counts per (class, verdict); unknown cases are not counted."""
    per_class: dict[ClassKey, Counter[str]] = {}
    for (key, verdict), count in counts.items():
        if verdict in ORDER and count:
            per_class.setdefault(key, Counter())[verdict] += count
    classes: Classes = {}
    for key, verdicts in per_class.items():
        worst = max(verdicts, key=ORDER.index)
        diverging = verdicts["diverge"] + verdicts["expected"]
        classes[key] = ClassVerdict(worst, sum(verdicts.values()), verdicts[worst], diverging)
    return classes


def aggregated_classes(verdicts: Iterable[VerdictCount]) -> Classes:
    """The gate classes of verdict counts (``records.counts``: a run's, or a report's, which the site
    compares run to run).

    Raises:
        BaselineError: a count of a verdict outside ``records.schema.VERDICTS``.
    """
    counts: Counter[tuple[ClassKey, str]] = Counter()
    for item in verdicts:
        if item.verdict != "unknown" and item.verdict not in ORDER:
            raise BaselineError(f"the records hold {item.count} cases of unknown verdict {item.verdict!r}")
        key = ClassKey(
            item.release.implementation, item.release.version, gate_class(item.feature, item.functions)
        )
        counts[(key, item.verdict)] += item.count
    return fold(counts)


def class_verdicts(paths: Sequence[Path]) -> Classes:
    """The gate classes of every run named by ``paths`` (run directories or directories of them), their
    records checked as the report checks them (``records.load``).

    Raises:
        ReportError: a missing or empty run directory, or a records file that cannot be read.
        BaselineError: a record with a verdict outside ``records.schema.VERDICTS``.
    """
    return aggregated_classes(part_counts(load_records(list(paths)).parts))


def baseline_text(
    classes: Classes, *, incomplete: Sequence[str] = (), cases: Sequence[dict[str, Any]] = ()
) -> str:
    """The baseline file of ``classes``: sorted keys, indented, one trailing newline (diffs well). A
    baseline taken from runs that did not complete names them (their ids) in ``incomplete``; ``cases``
    are the runs' case files (``run_case_files``)."""
    entries = {
        str(key): {"verdict": verdict.verdict, "cases": verdict.cases}
        | ({} if verdict.diverging is None else {"diverging": verdict.diverging})
        for key, verdict in classes.items()
    }
    document: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "classes": entries,
        "cases": list(cases),
    }
    if incomplete:
        document["incomplete"] = sorted(incomplete)
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def write_baseline(
    path: Path, classes: Classes, *, incomplete: Sequence[str] = (), cases: Sequence[dict[str, Any]] = ()
) -> None:
    """Write the baseline file of ``classes`` and ``cases`` to ``path`` (replaced whole, never
    half-written); ``incomplete`` names the runs it was taken from that did not complete."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_text(path, baseline_text(classes, incomplete=incomplete, cases=cases))
    except OSError as error:
        raise BaselineError(f"cannot write baseline {path}: {error.strerror or error}") from error


def read_baseline(path: Path) -> Classes:
    """The classes of the baseline file at ``path``.

    Raises:
        BaselineError: the file is missing or unreadable, is not a baseline, or is of a newer version.
    """
    if not path.exists():
        raise BaselineError(
            f"baseline file {path} does not exist (create it with: python -m nats_conformance.reports "
            f"baseline RUN_DIR... --out {path})"
        )
    try:
        document = json.loads(path.read_text())
    except OSError as error:
        raise BaselineError(f"cannot read baseline {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise BaselineError(f"{path} is not a baseline file (not JSON: {error})") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise BaselineError(f'{path} is not a baseline file (no "format": "{FORMAT}")')
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BaselineError(f"{path} is not a baseline file (unreadable version {version!r})")
    if version > VERSION:
        raise BaselineError(
            f"{path} is a baseline of version {version}, newer than the {VERSION} this gate reads; "
            "update nats-conformance"
        )
    entries = document.get("classes")
    if not isinstance(entries, dict):
        raise BaselineError(f'{path} is not a baseline file (no "classes" object)')
    classes: Classes = {}
    for text, entry in entries.items():
        key = ClassKey.parse(text)
        if (
            key is None
            or not isinstance(entry, dict)
            or entry.get("verdict") not in ORDER
            or not isinstance(entry.get("cases"), int)
            or isinstance(entry.get("cases"), bool)
            or entry["cases"] < 1
            or not isinstance(entry.get("diverging", 0), int)
        ):
            raise BaselineError(f"{path} has a malformed class entry {text!r}: {json.dumps(entry)}")
        classes[key] = ClassVerdict(entry["verdict"], entry["cases"], diverging=entry.get("diverging"))
    return classes


@dataclass(frozen=True, slots=True)
class Move:
    """One class whose verdict differs between the baseline (``before``) and the run (``after``); None
    on one side for a class new in the run or missing from it. ``strict``: gated against a previous run,
    where expected -> diverge and a new diverging class are regressions too."""

    key: ClassKey
    before: ClassVerdict | None
    after: ClassVerdict | None
    strict: bool = False

    @property
    def kind(self) -> str:
        """``regression``, ``fixed``, ``changed``, ``new`` or ``missing``."""
        was = self.before.verdict if self.before else None
        now = self.after.verdict if self.after else None
        if now == "diverge" and (was == "agree" or (self.strict and was in ("expected", None))):
            return "regression"
        if was is None:
            return "new"
        if now is None:
            return "missing"
        if now == "agree":
            return "fixed"
        return "changed"

    def line(self) -> str:
        """``regression: nats-server 2.14.5 partition:partition: agree -> diverge (3 of 1000 cases)``,
        ``fixed: ...``, or ``NEW ...``, ``MISSING ...``, ``CHANGED ...`` for the details file."""
        label = f"{self.kind}: {self.key}" if self.kind in PRINTED else f"{self.kind.upper()} {self.key}"
        earlier = "the previous run" if self.strict else "the baseline"
        if self.before is None:
            assert self.after is not None
            return f"{label}: {self.after.describe()}, not in {earlier}"
        if self.after is None:
            return f"{label}: {self.before.describe()} in {earlier}, no judged case in the run"
        return f"{label}: {self.before.verdict} -> {self.after.describe()}"


PRINTED: Final = ("regression", "fixed")
"""The moves the gate prints; the others go to the details file."""


@dataclass(frozen=True, slots=True)
class GateResult:
    """The moves of a run against a baseline; the gate fails when there is a regression."""

    regressions: tuple[Move, ...]
    improvements: tuple[Move, ...]
    others: tuple[Move, ...]
    unchanged: int
    not_drawn: tuple[Move, ...] = ()
    """Paired gates only: the moves no paired case confirms (not drawn on both sides)."""

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    @property
    def moved(self) -> bool:
        """Whether any class moved (claimed or not drawn on both)."""
        return bool(self.regressions or self.improvements or self.others or self.not_drawn)

    def verdict(self, outcome: str = "") -> str:
        """``gate failed: 1 regression, 0 fixed, 2 other changes, 5 classes unchanged``; `outcome` in place
        of passed or failed (`unknown` when too many cases were, whatever the classes say)."""
        counts = (
            f"{_count(len(self.regressions), 'regression')}, {len(self.improvements)} fixed, "
            f"{_count(len(self.others), 'other change')}, "
            f"{_count(self.unchanged, 'class', 'classes')} unchanged"
        )
        if self.not_drawn:
            counts += f", {len(self.not_drawn)} not drawn on both"
        return f"gate {outcome or ('failed' if self.failed else 'passed')}: {counts}"

    def render(self, details: Path | None = None, outcome: str = "") -> str:
        """Verdict first, then one line per regression, then per fix; the other moves are counted in a
        line naming the ``details`` file that lists them."""
        lines = [self.verdict(outcome), *(move.line() for move in (*self.regressions, *self.improvements))]
        if self.others and details is not None:
            others = _count(len(self.others), "other change")
            lines.append(f"{others} (new, missing or changed classes): {details}")
        return "\n".join(lines)

    def details(self) -> str:
        """Every move, one line each (regressions, fixes, then the others), after the verdict."""
        moves = (*self.regressions, *self.improvements, *self.others)
        lines = [self.verdict(), *(move.line() for move in moves)]
        lines += [f"not drawn on both: {move.line()}" for move in self.not_drawn]
        return "\n".join(lines) + "\n"


def _count(number: int, singular: str, plural: str | None = None) -> str:
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


def by_line(baseline: Classes, run: Classes, against: str) -> tuple[Classes, Classes]:
    """The baseline's classes of release ``against`` and the run's of every release of its line, keyed
    by the line (``2.14``) so that ``gate`` compares them: did 2.14.6 regress against 2.14.5's
    baseline? A line's classes from several releases of the run fold into their worst verdict.

    Raises:
        BaselineError: ``against`` is no release, or the baseline or the run has none of it or its line.
    """
    try:
        release = Version.parse(against)
    except InvalidVersionError as error:
        raise BaselineError(f"--against takes a release such as 2.14.5 (got {against!r})") from error
    kept = {
        key: verdict
        for key, verdict in baseline.items()
        if Version.parse_or_none(key.server_version) == release
    }
    if not kept:
        found = sorted({key.server_version for key in baseline})
        raise BaselineError(f"the baseline has no class of {against} (it has {', '.join(found) or 'none'})")
    of_line = _folded(run, lambda key: _line_label(key, release))
    if not of_line:
        raise BaselineError(f"the run has no class of a {release.line} release to compare with {against}")
    line = {key._replace(server_version=str(release.line)): verdict for key, verdict in kept.items()}
    return line, of_line


def _line_label(key: ClassKey, release: Version) -> str | None:
    version = Version.parse_or_none(key.server_version)
    return str(release.line) if version is not None and version.line == release.line else None


def across_releases(previous: Classes, run: Classes) -> tuple[Classes, Classes]:
    """The classes of a previous run and of a run, made comparable: as they are when both tested the
    same targets; else each implementation's classes folded over its releases into their worst verdict
    and keyed by the releases compared (``2.14.5..2.14.9``), so that a run on 2.14.9 is gated against
    one on 2.14.5 class by class (feature and functions)."""

    def targets(classes: Classes) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for key in classes:
            found.setdefault(key.implementation, set()).add(key.server_version)
        return found

    before, after = targets(previous), targets(run)
    if before == after:
        return previous, run
    labels = {
        implementation: "..".join(
            ",".join(sorted(side.get(implementation, ()), key=version_key)) or "(none)"
            for side in (before, after)
        )
        for implementation in before.keys() | after.keys()
    }
    return (
        _folded(previous, lambda key: labels[key.implementation]),
        _folded(run, lambda key: labels[key.implementation]),
    )


def _folded(classes: Classes, label: Callable[[ClassKey], str | None]) -> Classes:
    """Classes keyed by ``label`` of their key in place of the release (None: left out), the classes
    that fall together folded into their worst verdict."""
    grouped: dict[ClassKey, list[ClassVerdict]] = {}
    for key, verdict in classes.items():
        text = label(key)
        if text is not None:
            grouped.setdefault(key._replace(server_version=text), []).append(verdict)
    return {key: _worst(verdicts) for key, verdicts in grouped.items()}


def _worst(verdicts: list[ClassVerdict]) -> ClassVerdict:
    """One class's verdicts on several releases folded: the worst, over all their cases."""
    worst = max((v.verdict for v in verdicts), key=ORDER.index)
    counts = [v.worst if v.worst is not None else v.cases for v in verdicts if v.verdict == worst]
    diverging = [v.diverging for v in verdicts]
    total = None if None in diverging else sum(n for n in diverging if n is not None)
    return ClassVerdict(worst, sum(v.cases for v in verdicts), sum(counts), total)


def gate(baseline: Classes, run: Classes, *, strict: bool = False) -> GateResult:
    """Compare the run's classes with the baseline's, or with a previous run's when ``strict`` (see
    the module for what fails)."""
    moves: dict[str, list[Move]] = {"regression": [], "fixed": [], "other": []}
    unchanged = 0
    for key in sorted(baseline.keys() | run.keys(), key=lambda key: key.order):
        before, after = baseline.get(key), run.get(key)
        if before is not None and after is not None and before.verdict == after.verdict:
            unchanged += 1
            continue
        move = Move(key, before, after, strict)
        moves.get(move.kind, moves["other"]).append(move)
    return GateResult(tuple(moves["regression"]), tuple(moves["fixed"]), tuple(moves["other"]), unchanged)


def write_details(path: Path, result: GateResult) -> None:
    """Write every move of ``result`` to ``path`` (``GateResult.details``).

    Raises:
        BaselineError: the file cannot be written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_text(path, result.details())
    except OSError as error:
        raise BaselineError(f"cannot write the gate details {path}: {error.strerror or error}") from error


def counterparts(before: Classes, after: Classes) -> tuple[Classes, Classes]:
    """Both sides keyed so that each release of ``after`` (the run) meets the release of its line on
    ``before``: the same release, else the newest of its line, both keyed ``2.14.9..2.14.10``. A
    release of either side that meets none keeps its key."""
    theirs = {key.server_version for key in before}
    label: dict[str, str] = {}
    for version in {key.server_version for key in after}:
        other = counterpart(version, theirs)
        if other is not None and other != version:
            label[version] = label[other] = f"{other}..{version}"
    return (
        _folded(before, lambda key: label.get(key.server_version, key.server_version)),
        _folded(after, lambda key: label.get(key.server_version, key.server_version)),
    )


def paired(result: GateResult, pairs: Sequence[Pair]) -> GateResult:
    """The moves of ``result`` that paired evidence confirms (see the module); the others are moved to
    ``not_drawn``."""
    changed = {
        (pair.implementation, pair.gate_class, frozenset((pair.seen_on, pair.replayed_on)))
        for pair in pairs
        if pair.outcome == CHANGED
    }

    def confirmed(move: Move) -> bool:
        feature = move.key.case_class.partition(":")[0]
        if statistical(feature, ""):
            return (
                move.before is not None and move.after is not None and _shares_differ(move.before, move.after)
            )
        releases = frozenset(move.key.server_version.split(".."))
        return (move.key.implementation, move.key.case_class, releases) in changed

    kept: dict[str, list[Move]] = {"regression": [], "fixed": [], "other": []}
    not_drawn = []
    for move in (*result.regressions, *result.improvements, *result.others):
        if confirmed(move):
            kept.get(move.kind, kept["other"]).append(move)
        else:
            not_drawn.append(move)
    return GateResult(
        tuple(kept["regression"]),
        tuple(kept["fixed"]),
        tuple(kept["other"]),
        result.unchanged,
        tuple(not_drawn),
    )


def _shares_differ(before: ClassVerdict, after: ClassVerdict) -> bool:
    """Whether a statistical class's share of diverging cases differs between the sides."""
    if before.diverging is None or after.diverging is None:
        return False
    return fisher_exact(before.diverging, before.cases, after.diverging, after.cases) < CHANGE_ALPHA


def run_case_files(runs: Iterable[Run]) -> list[dict[str, Any]]:
    """The case files of nats-server releases in the runs (their ``divergences/``, the smallest case of
    each divergence class per release), as a baseline keeps them for the paired replay.

    Raises:
        BaselineError: a case file that cannot be read.
    """
    documents = []
    for run in runs:
        for path in sorted((run.path / DIVERGENCES).glob("*.json")):
            try:
                document = json.loads(path.read_text())
            except (OSError, ValueError) as error:
                raise BaselineError(f"cannot read case file {path}: {error}") from error
            if isinstance(document, dict) and document.get("found_on", {}).get("implementation") == REFERENCE:
                documents.append(document)
    return documents
