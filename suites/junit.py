"""The campaign as JUnit XML for CI (`--junit-xml PATH`): what test-report tools read.

Two suites: `divergence classes`, one testcase per class (per implementation and release) whose
smallest case the run kept, a failure with that case and its replay command (a known divergence is
`skipped`, as pytest reports an xfail); and `families`, one testcase per family x target, failed when
it had unexpected divergences, skipped when the target cannot run it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from nats_conformance.records.files import replace_text
from nats_conformance.records.schema import Case
from nats_conformance.suites.reproduce import describe_case

NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot carry (control characters in generated subjects)."""


@dataclass(frozen=True, slots=True)
class FamilyOutcome:
    """How one family went on one target: its cases, unexpected divergences and time, or why skipped."""

    target: str
    family: str
    cases: int = 0
    diverged: int = 0
    seconds: float = 0.0
    skipped: str = ""


def junit_xml(outcomes: Sequence[FamilyOutcome], smallest: Iterable[Case]) -> str:
    """The JUnit XML document of a campaign (module docstring)."""
    classes = sorted(
        (case for case in smallest if case.verdict in ("diverge", "expected")),
        key=lambda case: (case.implementation, case.server_version, case.case_class),
    )
    root = ET.Element("testsuites", name="nats-conformance")
    divergences = _suite(root, "divergence classes")
    for case in classes:
        testcase = ET.SubElement(
            divergences,
            "testcase",
            classname=f"{case.implementation} {case.server_version}",
            name=case.case_class,
        )
        if case.verdict == "diverge":
            failure = ET.SubElement(testcase, "failure", message=_text(case.case_class), type="divergence")
            failure.text = _text(describe_case(case))
        else:
            ET.SubElement(testcase, "skipped", message=_text(f"known divergence {case.expectation}"))
    families = _suite(root, "families")
    for outcome in outcomes:
        testcase = ET.SubElement(
            families,
            "testcase",
            classname=outcome.target,
            name=outcome.family,
            time=f"{outcome.seconds:.3f}",
        )
        if outcome.skipped:
            ET.SubElement(testcase, "skipped", message=_text(outcome.skipped))
        elif outcome.diverged:
            ET.SubElement(
                testcase,
                "failure",
                message=f"{outcome.diverged} unexpected divergences in {outcome.cases} cases",
                type="divergence",
            )
    for suite in (root, divergences, families):
        _count(suite, list(suite.iter("testcase")))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit_xml(path: Path, outcomes: Sequence[FamilyOutcome], smallest: Iterable[Case]) -> None:
    """Write `junit_xml` to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_text(path, junit_xml(outcomes, smallest))


def _suite(root: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(root, "testsuite", name=name)


def _count(element: ET.Element, testcases: list[ET.Element]) -> None:
    element.set("tests", str(len(testcases)))
    element.set("failures", str(sum(1 for t in testcases if t.find("failure") is not None)))
    element.set("errors", "0")
    element.set("skipped", str(sum(1 for t in testcases if t.find("skipped") is not None)))


def _text(text: str) -> str:
    return NOT_XML.sub(lambda found: f"\\x{ord(found.group()):02x}", text)
