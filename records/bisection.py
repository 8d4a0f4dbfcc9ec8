"""The release-bisection file: `bisection.json` in the run directory of `python -m nats_conformance.suites
bisect`, which `python -m nats_conformance.reports build` reads. Both sides share the format defined here:
the suites write it (`document`), the reports read it back with the records (`read_bisection`).

A file that is not such a document (bad JSON, another format, a newer version, a missing field) is
refused with one line naming it, before any aggregation starts.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.errors import fields_of, items_of, read_document, value_of

BISECTION_FILE: Final = "bisection.json"
FORMAT: Final = "nats-conformance-bisection"
VERSION: Final = 1
ASSUMPTION: Final = "the releases where the case occurs are contiguous"

OCCURS, ABSENT, UNKNOWN = "occurs", "absent", "unknown"
OUTCOME_TEXT: Final = {OCCURS: "occurs", ABSENT: "does not occur", UNKNOWN: "unknown"}


@dataclass(frozen=True, slots=True)
class Probe:
    """One release tried: `occurs`, `absent` or `unknown`, and why in a few words."""

    release: str
    outcome: str
    detail: str = ""

    def describe(self) -> str:
        text = f"probing {self.release} ... {OUTCOME_TEXT[self.outcome]}"
        return f"{text} ({self.detail})" if self.detail else text


@dataclass(frozen=True, slots=True)
class Bisection:
    """Where a case occurs among `releases` (version order), found from `found_on`.

    `absent_before` is the last release before `first` where it does not occur (None: it occurs from
    the oldest release probed), `absent_after` the first after `last` (None: it still occurs on the
    newest). `unknown_before`/`unknown_after` are the releases between those neighbours and
    `first`/`last` that could not be probed: the true boundary may lie among them.
    """

    releases: tuple[str, ...]
    found_on: str
    first: str
    last: str
    absent_before: str | None
    absent_after: str | None
    unknown_before: tuple[str, ...]
    unknown_after: tuple[str, ...]
    probes: tuple[Probe, ...]


def document(case: CaseFile, result: Bisection, *, backend: str, run_id: str, seconds: float) -> str:
    """`bisection.json`: the case, the result and every probe."""
    body = {
        "format": FORMAT,
        "version": VERSION,
        "run_id": run_id,
        "case": asdict(case),
        "case_class": case.case_class,
        "backend": backend,
        "assumption": ASSUMPTION,
        **asdict(result),
        "seconds": round(seconds, 1),
    }
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True, slots=True)
class ReleaseBisection:
    """One bisection: which case, on which backend, and where it occurs (`result`)."""

    run_id: str
    case_class: str
    feature: str
    source: str
    destination: str
    subject: str
    backend: str
    assumption: str
    result: Bisection

    @property
    def before_text(self) -> str:
        """The release before the first where the case does not occur, or why there is none."""
        return self.result.absent_before or "none: occurs on the oldest release considered"

    @property
    def after_text(self) -> str:
        """The release after the last where the case does not occur, or why there is none."""
        return self.result.absent_after or "none: still occurs on the newest release considered"

    @property
    def gaps_text(self) -> str:
        """The releases near a boundary that could not be probed, or ''."""
        unknown = [*self.result.unknown_before, *self.result.unknown_after]
        return f"could not be probed near a boundary: {', '.join(unknown)}" if unknown else ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReleaseBisection:
        """The bisection of a `bisection.json` object; ValueError on a missing or malformed field."""
        case = data.get("case")
        if not isinstance(case, dict):
            raise ValueError("field 'case' must be an object")
        return cls(
            **fields_of(data, str, "run_id", "case_class", "backend", "assumption"),
            **fields_of(case, str, "feature", "source", "destination", "subject"),
            result=_result(data),
        )


def read_bisection(run_dir: Path) -> ReleaseBisection | None:
    """The run's bisection, or None when it has no `bisection.json`; `ReportError` when the file is not a
    bisection document this builder reads."""
    return read_document(run_dir / BISECTION_FILE, "bisection", FORMAT, VERSION, ReleaseBisection.from_json)


def _result(data: dict[str, Any]) -> Bisection:
    probes = data.get("probes")
    if not isinstance(probes, list):
        raise ValueError("field 'probes' must be a list")
    return Bisection(
        releases=items_of(data, "releases", str),
        **fields_of(data, str, "found_on", "first", "last"),
        absent_before=_optional(data, "absent_before"),
        absent_after=_optional(data, "absent_after"),
        unknown_before=items_of(data, "unknown_before", str),
        unknown_after=items_of(data, "unknown_after", str),
        probes=tuple(_probe(item) for item in probes),
    )


def _probe(item: object) -> Probe:
    if not isinstance(item, dict):
        raise ValueError("every probe must be an object")
    outcome = value_of(item, "outcome", str)
    if outcome not in OUTCOME_TEXT:
        raise ValueError(f"probe outcome must be one of {', '.join(OUTCOME_TEXT)} (got {outcome!r})")
    return Probe(value_of(item, "release", str), outcome, value_of(item, "detail", str))


def _optional(data: dict[str, Any], name: str) -> str | None:
    return None if data.get(name) is None else value_of(data, name, str)
