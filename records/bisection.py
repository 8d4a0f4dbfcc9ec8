"""The release-bisection file: `bisection.json` in the run directory of `python -m nats_conformance.suites
bisect`, which `python -m nats_conformance.reports build` reads (reports/bisection.py). Both sides share the
format defined here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Final

from nats_conformance.records.casefile import CaseFile

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
