"""Case files: one divergence as a small JSON document any language can read (docs/case-file.md).

A run writes the smallest case of each divergence class to `<run>/divergences/`; `python -m
nats_conformance.suites replay FILE --target ...` runs it again against any target, and `python -m
nats_conformance.suites bisect FILE` looks for the releases it occurs in. Besides the case's columns, a file
carries the adapter-protocol request (docs/adapter-protocol.md) that asks a transform library the same
question, when there is one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from nats_conformance.records.schema import Case, case_class_of
from nats_conformance.reference.channels import ServerSpec
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.matching import matching_subject
from nats_conformance.reference.protocol import (
    ContainsQuestion,
    MatchQuestion,
    PartitionQuestion,
    Question,
    TransformQuestion,
    ValidMappingQuestion,
    ValidSubjectQuestion,
    WeightedEntry,
)
from nats_conformance.reference.weighted import WeightedDestination

FORMAT: Final = "nats-conformance-case"
VERSION: Final = 4
"""Version 4 added `difference` (older files: the last part of `case_class`, read once here), version 3
`steps` (version 2 files read with none)."""
OLDEST_VERSION: Final = 2
"""2: the typed fields of records schema 2 (stream subjects, headers-only, weights, layout, partitions);
files of another version are refused, since version 1 kept these in text fields."""
DIVERGENCES: Final = "divergences"
"""The folder of a run directory holding its case files."""

TRANSFORM_FEATURES: Final = frozenset({"mapping", "partition", "validation"})


class CaseFileError(ConformanceError, ValueError):
    """A case file that cannot be read or is not a case file."""


@dataclass(frozen=True, slots=True)
class CaseFile:
    """The question (feature, source, destination, subject, release profile) and where it was seen."""

    feature: str
    source: str
    destination: str
    subject: str
    server_version: str
    functions: str = ""
    difference: str = ""
    """What differed, as the case's `difference` column ('' when nothing did)."""
    expected: str = ""
    observed: str = ""
    detail: str = ""
    partitions: int = 0
    stream_subjects: tuple[str, ...] = ()
    headers_only: bool = False
    weights: tuple[WeightedDestination, ...] = ()
    layout: tuple[ServerSpec, ...] = ()
    steps: tuple[str, ...] = ()
    found_on: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, case: Case) -> CaseFile:
        return cls(
            feature=case.feature,
            source=case.source,
            destination=case.destination,
            subject=case.subject,
            server_version=case.server_version,
            functions=case.functions,
            difference=case.difference,
            expected=case.expected,
            observed=case.observed,
            detail=case.detail,
            partitions=case.partitions,
            stream_subjects=case.stream_subjects,
            headers_only=case.headers_only,
            weights=case.weights,
            layout=case.layout,
            steps=case.steps,
            found_on={
                "implementation": case.implementation,
                "server_version": case.server_version,
                "backend": case.backend,
                "run_id": case.run_id,
                "verdict": case.verdict,
            },
        )

    @property
    def case_class(self) -> str:
        """The divergence class as text (`records.schema.case_class_of`)."""
        return case_class_of(self.feature, self.functions, self.difference)

    def question(self) -> Question | None:
        """The adapter-protocol question asking the same, or None (server-only features). A library's
        `partition` and `valid_subject` questions are the features `partition` (functions
        `partition-op`, the tokens as JSON in `source`, n in `partitions`) and `subjects`."""
        if self.functions == "partition-op":
            return PartitionQuestion(json.loads(self.source), self.partitions)
        if self.functions == "contains-op":
            return ContainsQuestion(self.source, self.destination)
        if self.functions == "valid-mapping-op":
            entries = [
                WeightedEntry(item["destination"], item["weight"], item.get("cluster"))
                for item in json.loads(self.destination)
            ]
            return ValidMappingQuestion(self.source, entries, self.server_version)
        if self.feature == "subjects":
            rule = self.functions
            return ValidSubjectQuestion(self.subject, rule.startswith("publish"), rule.endswith("-lenient"))
        if self.feature in TRANSFORM_FEATURES:
            subject = self.subject or matching_subject(self.source)
            return TransformQuestion(self.source, self.destination, subject, self.server_version)
        if self.feature == "matching":
            return MatchQuestion(self.source, self.subject)
        return None

    def to_json(self) -> str:
        """The case file's text: UTF-8 as written, or all escapes when a token is not valid UTF-8 (a cut
        through a character, kept as lone surrogates), which JSON can state but UTF-8 cannot. Its
        `request` is its question's request object."""
        question = self.question()
        request = None if question is None else question.wire()
        document = {
            "format": FORMAT,
            "version": VERSION,
            **asdict(self),
            "case_class": self.case_class,
            "request": request,
        }
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(document, indent=2) + "\n"
        return text


def slug(case_class: str) -> str:
    """A file-name-safe form of a case class."""
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", case_class).strip("_")[:120] or "case"


def size(case: Case) -> int:
    """How big a case is to read (its steps included): the smallest of a class is the one a file keeps."""
    return len(case.source) + len(case.destination) + len(case.subject) + sum(map(len, case.steps))


def write_case_files(run_dir: Path, cases: Iterable[Case]) -> list[Path]:
    """One file per case, named by release and class; returns the paths written."""
    folder = run_dir / DIVERGENCES
    paths = []
    for case in cases:
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{slug(case.implementation)}-{slug(case.server_version)}-{slug(case.case_class)}.json"
        path = folder / name
        path.write_text(CaseFile.of(case).to_json())
        paths.append(path)
    return paths


def read_case_file(path: Path) -> CaseFile:
    """Read a case file; anything else is a one-line `CaseFileError`."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError as error:
        raise CaseFileError(f"no case file {path}") from error
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise CaseFileError(f"cannot read case file {path}: {error}") from error
    return case_file_of(document, str(path))


def case_file_of(document: Any, where: str) -> CaseFile:
    """The case file a parsed JSON document states (a file's, or one a baseline holds); anything else is a
    one-line `CaseFileError` naming `where`."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CaseFileError(f'{where} is not a case file (no "format": "{FORMAT}")')
    if document.get("version") not in range(OLDEST_VERSION, VERSION + 1):
        raise CaseFileError(
            f"{where} has case-file version {document.get('version')!r}; "
            f"this reads {OLDEST_VERSION} to {VERSION}"
        )
    fields = _Fields(document, where)
    return CaseFile(
        feature=fields.text("feature", required=True),
        source=fields.text("source"),
        destination=fields.text("destination"),
        subject=fields.text("subject"),
        server_version=fields.text("server_version"),
        functions=fields.text("functions"),
        difference=(
            fields.text("difference")
            if document["version"] >= 4
            else fields.text("case_class").rpartition(":")[2]
        ),
        expected=fields.text("expected"),
        observed=fields.text("observed"),
        detail=fields.text("detail"),
        partitions=fields.whole("partitions"),
        stream_subjects=fields.texts("stream_subjects"),
        headers_only=fields.flag("headers_only"),
        weights=tuple(
            WeightedDestination(
                entry.text("destination", required=True),
                entry.whole("weight", required=True),
                entry.text("cluster", nullable=True) or None,
            )
            for entry in fields.objects("weights")
        ),
        layout=tuple(
            ServerSpec(entry.texts("channels", required=True), entry.flag("clustered"))
            for entry in fields.objects("layout")
        ),
        steps=fields.texts("steps"),
        found_on=fields.labels("found_on"),
    )


_MISSING: Final = object()


class _Fields:
    """The fields of a case file's object (`where` names it in errors), each checked for its type: a
    field of the wrong type is a one-line `CaseFileError`, never a value read as another (`null` as
    the text `None`)."""

    __slots__ = ("document", "where")

    def __init__(self, document: dict[str, Any], where: str) -> None:
        self.document = document
        self.where = where

    def _get(self, name: str, required: bool) -> Any:
        value = self.document.get(name, _MISSING)
        if value is _MISSING and required:
            raise CaseFileError(f"{self.where}: field {name!r} is missing")
        return value

    def _wrong(self, name: str, kind: str, value: Any) -> CaseFileError:
        shown = json.dumps(value, ensure_ascii=True)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return CaseFileError(f"{self.where}: field {name!r} must be {kind} (got {shown})")

    def text(self, name: str, *, required: bool = False, nullable: bool = False) -> str:
        value = self._get(name, required)
        if value is _MISSING or (value is None and nullable):
            return ""
        if not isinstance(value, str) or (required and not value):
            raise self._wrong(name, "a non-empty string" if required else "a string", value)
        return value

    def whole(self, name: str, *, required: bool = False) -> int:
        value = self._get(name, required)
        if value is _MISSING:
            return 0
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._wrong(name, "an integer", value)
        return value

    def flag(self, name: str) -> bool:
        value = self._get(name, False)
        if value is _MISSING:
            return False
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false", value)
        return value

    def texts(self, name: str, *, required: bool = False) -> tuple[str, ...]:
        value = self._get(name, required)
        if value is _MISSING:
            return ()
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._wrong(name, "a list of strings", value)
        return tuple(value)

    def labels(self, name: str) -> dict[str, str]:
        value = self._get(name, False)
        if value is _MISSING:
            return {}
        if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
            raise self._wrong(name, "an object of strings", value)
        return dict(value)

    def objects(self, name: str) -> list[_Fields]:
        value = self._get(name, False)
        if value is _MISSING:
            return []
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self._wrong(name, "a list of objects", value)
        return [_Fields(item, f"{self.where}: {name}[{index}]") for index, item in enumerate(value)]
