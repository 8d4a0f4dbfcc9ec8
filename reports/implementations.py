"""The implementations page: each implementation judged through the adapter protocol (a packaged adapter
over a real library, an engine, any `adapter:COMMAND`), by version and operation.

A row is one operation as the adapter was asked it (`valid_subject` per subject rule, strict or
lenient; `match`; `contains`; `valid_mapping`; `transform`; `partition`; `weighted`), with its cases per
verdict and the agree share of the judged ones (agree, diverge, expected), the library function that
answered it, and its divergence classes, each with its smallest case and the line that replays it.

Everything comes from the records: the verdict counts of the aggregates, the run manifests'
`implementations` (what each adapter's hello and packaged `adapter.toml` said: operations, the function
answering each, language, pinned version, documentation) and the case files of each run's
`divergences/` folder (the smallest case of each class on each implementation).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from nats_conformance.records.aggregates import ClassCount, VerdictCount
from nats_conformance.records.casefile import CaseFile, CaseFileError, read_case_file
from nats_conformance.records.load import Run
from nats_conformance.records.releases import REFERENCE_IMPLEMENTATION, Release, sorted_releases
from nats_conformance.records.replay import replay_command
from nats_conformance.records.schema import NOT_SUPPORTED, Case

RULES: Final = {
    "subject-rule": ("valid_subject", "subscribe", "strict"),
    "subject-rule-lenient": ("valid_subject", "subscribe", "lenient"),
    "publish-rule": ("valid_subject", "publish", "strict"),
    "publish-rule-lenient": ("valid_subject", "publish", "lenient"),
}
"""The subject rules of `valid_subject` questions, by their records' `functions`: (operation, rule, form)."""
ORDER: Final = ("valid_subject", "match", "contains", "valid_mapping", "transform", "partition", "weighted")


def operation_of(feature: str, functions: str) -> tuple[str, str]:
    """(operation, how it was asked) of a library family record: a subject rule and its form for
    `valid_subject`, '' for the others."""
    if feature == "subjects" and functions in RULES:
        op, rule, form = RULES[functions]
        return op, f"{rule}, {form}"
    if feature == "containment":
        return "contains", ""
    if feature == "weighted":
        return ("valid_mapping", "") if functions == "valid-mapping-op" else ("weighted", "")
    if feature == "matching":
        return "match", ""
    if feature == "partition":
        return "partition", ""
    return "transform", ""


@dataclass(frozen=True, slots=True)
class ClassOnImplementation:
    """One divergence class as one implementation showed it."""

    case_class: str
    diverge: int
    expected: int
    expectations: tuple[str, ...]
    question: str
    """The smallest question, as its request's fields (`op`, subject, pattern, mapping)."""
    expected_answer: str
    observed_answer: str
    replay: str


@dataclass(slots=True)
class OperationRow:
    operation: str
    asked: str
    """How it was asked: the subject rule and its form for `valid_subject`, else ''."""
    function: str
    agree: int = 0
    diverge: int = 0
    expected: int = 0
    unknown: int = 0
    classes: tuple[ClassOnImplementation, ...] = ()

    @property
    def judged(self) -> int:
        return self.agree + self.diverge + self.expected

    @property
    def agree_share(self) -> float | None:
        return self.agree / self.judged if self.judged else None

    @property
    def label(self) -> str:
        return f"{self.operation} ({self.asked})" if self.asked else self.operation


@dataclass(frozen=True, slots=True)
class Implementation:
    """One implementation at one version, under one release's rules (`release.version`)."""

    release: Release
    language: str
    package: str
    """The packaged adapter's name (`adapter:NAME`), '' for an adapter command."""
    pinned: str
    docs: str
    rows: tuple[OperationRow, ...]
    not_asked: tuple[str, ...]
    """Operations its hello leaves out (their questions are recorded as not supported)."""

    @property
    def name(self) -> str:
        return self.release.implementation


def declared(runs: Sequence[Run]) -> dict[str, Mapping[str, Any]]:
    """What each implementation's adapter said of itself, by implementation name (the newest run's)."""
    found: dict[str, Mapping[str, Any]] = {}
    for run in runs:
        for entry in run.manifest.get("implementations") or ():
            if isinstance(entry, Mapping) and entry.get("implementation"):
                found[str(entry["implementation"])] = entry
    return found


def function_of(entry: Mapping[str, Any], operation: str, asked: str) -> str:
    """The library function that answered: the hello's `answered_by` for the subject rule (`subscribe`,
    `subscribe-lenient`) or the operation, else a packaged adapter's only function."""
    answered = entry.get("answered_by") or {}
    rule = asked.replace(", strict", "").replace(", ", "-")
    for key in (rule, operation):
        if key and isinstance(answered.get(key), str):
            return str(answered[key])
    functions = list(entry.get("functions") or ())
    return str(functions[0]) if len(functions) == 1 else ""


def smallest_cases(runs: Sequence[Run]) -> dict[tuple[str, str, str], CaseFile]:
    """The smallest case file of each (implementation, release profile, class) the runs wrote."""
    found: dict[tuple[str, str, str], CaseFile] = {}
    for run in runs:
        folder = Path(run.path) / "divergences"
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            try:
                case = read_case_file(path)
            except (OSError, CaseFileError):
                continue
            if case.found_on.get("backend") != "adapter":
                continue
            key = (case.found_on.get("implementation", ""), case.server_version, case.case_class)
            if key not in found or _size(case) < _size(found[key]):
                found[key] = case
    return found


def _size(case: CaseFile) -> int:
    return len(case.source) + len(case.destination) + len(case.subject)


def question_text(case: CaseFile) -> str:
    """The smallest question in a line: its request's fields (`op` first), JSON values."""
    question = case.question()
    if question is None:
        return f"{case.feature}: {case.source} {case.destination} {case.subject}".strip()
    fields = {name: value for name, value in question.wire().items() if name not in ("id", "server_version")}
    return " ".join(f"{name}={_shown(value)}" for name, value in fields.items())


def _shown(value: Any) -> str:
    return value if isinstance(value, str) and value.isprintable() and value else json.dumps(value)


def replay_of(case: CaseFile, command: str) -> str:
    """The line that asks the adapter the smallest question again (`records.replay.replay_command`)."""
    on = case.found_on
    return replay_command(
        Case(
            run_id=on.get("run_id", ""),
            case_id=0,
            implementation=on.get("implementation", ""),
            server_version=case.server_version,
            backend="adapter",
            feature=case.feature,
            functions=case.functions,
            source=case.source,
            destination=case.destination,
            subject=case.subject,
            expected=case.expected,
            observed=case.observed,
            verdict=on.get("verdict", ""),
            difference=case.difference,
            partitions=case.partitions,
            weights=case.weights,
            steps=case.steps,
            command=command,
        )
    )


def implementations(
    runs: Sequence[Run], verdicts: Iterable[VerdictCount], classes: Iterable[ClassCount]
) -> tuple[Implementation, ...]:
    """Every implementation other than nats-server in the records, by name and version."""
    said = declared(runs)
    smallest = smallest_cases(runs)
    rows: dict[Release, dict[tuple[str, str], OperationRow]] = {}
    unsupported: dict[Release, set[str]] = {}
    for item in verdicts:
        if item.release.implementation == REFERENCE_IMPLEMENTATION or item.release.implementation not in said:
            continue
        operation, asked = operation_of(item.feature, item.functions)
        if item.verdict == "unknown" and item.reason == NOT_SUPPORTED:
            unsupported.setdefault(item.release, set()).add(operation)
            continue
        entry = said[item.release.implementation]
        row = rows.setdefault(item.release, {}).setdefault(
            (operation, asked), OperationRow(operation, asked, function_of(entry, operation, asked))
        )
        setattr(row, item.verdict, getattr(row, item.verdict) + item.count)
    shown: dict[tuple[Release, str], tuple[int, int, tuple[str, ...]]] = {}
    for count in classes:
        for tally in count.by_release:
            shown[(tally.release, count.case_class)] = (
                tally.diverge,
                tally.expected,
                (tally.expectation,) if tally.expectation else (),
            )
    found = []
    for release in sorted_releases(rows):
        entry = said[release.implementation]
        command = str(entry.get("command", ""))
        operations = rows[release]
        listed: dict[tuple[str, str], list[ClassOnImplementation]] = {}
        for (implementation, profile, case_class), case in smallest.items():
            if implementation != release.implementation or profile != release.version:
                continue
            diverge, expected, expectations = shown.get((release, case_class), (0, 0, ()))
            listed.setdefault(operation_of(case.feature, case.functions), []).append(
                ClassOnImplementation(
                    case_class,
                    diverge,
                    expected,
                    expectations,
                    question_text(case),
                    case.expected,
                    case.observed,
                    replay_of(case, command),
                )
            )
        for key, row in operations.items():
            row.classes = tuple(
                sorted(listed.get(key, ()), key=lambda c: (-c.diverge - c.expected, c.case_class))
            )
        judged = {op for op, _ in operations}
        found.append(
            Implementation(
                release=release,
                language=str(entry.get("language", "")),
                package=str(entry.get("package", "")),
                pinned=str(entry.get("version", "")),
                docs=str(entry.get("docs", "")),
                rows=tuple(sorted(operations.values(), key=lambda r: (ORDER.index(r.operation), r.asked))),
                not_asked=not_asked(entry, unsupported.get(release, set()) - judged),
            )
        )
    return tuple(found)


def not_asked(entry: Mapping[str, Any], unsupported: set[str]) -> tuple[str, ...]:
    """The operations its hello leaves out (when it lists some), else those recorded as not supported."""
    ops = set(entry.get("ops") or ())
    return tuple(op for op in ORDER if (op not in ops if ops else op in unsupported))


def share_text(row: OperationRow) -> str:
    share = row.agree_share
    return "-" if share is None else f"{share:.1%}"


INTRO: Final = (
    "Each implementation judged through the adapter protocol, by version and operation: the cases "
    "asked, the share of judged cases that agree with the documents (listed divergences count as not "
    "agreeing), the library function that answered, and each divergence class with its smallest case "
    "and the line that asks it again."
)
HEADERS: Final = ("implementation", "language", "operation", "function", "agree", "diverge", "expected")


def judged_by(item: Implementation) -> str:
    """Under which rules it was judged, and its pinned version where its name does not show it."""
    pinned = f"pinned {item.pinned}, " if item.pinned and item.pinned not in item.name else ""
    return f"{pinned}rules of {item.release.version}"


def who(item: Implementation) -> str:
    return f"{item.name}, {judged_by(item)}"


def cases_text(found: ClassOnImplementation) -> str:
    listed = f" listed ({', '.join(found.expectations)})" if found.expectations else ""
    unexpected = f"{found.diverge:,} unexpected" if found.diverge else ""
    return ", ".join(
        part for part in (unexpected, f"{found.expected:,}{listed}" if found.expected else "") if part
    )
