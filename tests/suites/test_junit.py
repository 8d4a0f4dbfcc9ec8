"""suites.junit: a campaign's JUnit XML is well-formed whatever bytes its cases hold."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

from nats_conformance.records.schema import Case
from nats_conformance.suites.junit import FamilyOutcome, junit_xml

CASE = Case(
    run_id="r",
    case_id=0,
    implementation="nats-server",
    server_version="2.14.5",
    backend="process",
    feature="mapping",
    functions="wildcard",
    source="m.*",
    destination="n.{{wildcard(1)}}",
    subject="m.\x01\x1b",
    expected="n.\x01\x1b",
    observed="",
    verdict="diverge",
    difference="lost",
)


def test_control_characters_are_escaped_and_known_divergences_skipped() -> None:
    known = replace(CASE, verdict="expected", expectation="known-id", difference="other")
    root = ET.fromstring(junit_xml([FamilyOutcome("process-2.14.5", "mapping", 9, 1)], [CASE, known]))
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    text = failure.text or ""
    assert "subject:     m.\\x01\\x1b" in text
    assert root.get("tests") == "3"
    assert root.get("failures") == "2"
    assert root.get("skipped") == "1"
    (skipped,) = root.iter("skipped")
    assert skipped.get("message") == "known divergence known-id"
