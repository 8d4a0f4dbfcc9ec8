"""The Release bisection section: a run directory holding `bisection.json` (suites/bisect.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from handmade import case, write_run

from nats_conformance.records.bisection import (
    ABSENT,
    BISECTION_FILE,
    OCCURS,
    UNKNOWN,
    Bisection,
    Probe,
    document,
)
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.errors import ReportError
from nats_conformance.reports.build import build_report

CLASS = "partition:partition:server-crash"
CASE = CaseFile(
    feature="partition",
    source="a.*",
    destination="b.{{partition(0,1)}}",
    subject="a.x",
    server_version="2.10.27",
    functions="partition",
    difference="server-crash",
    found_on={"implementation": "nats-server", "server_version": "2.10.27"},
)
RESULT = Bisection(
    releases=("2.8.4", "2.9.0", "2.9.25", "2.10.27", "2.11.17", "2.12.15"),
    found_on="2.10.27",
    first="2.9.25",
    last="2.11.17",
    absent_before="2.8.4",
    absent_after=None,
    unknown_before=("2.9.0",),
    unknown_after=(),
    probes=(
        Probe("2.10.27", OCCURS),
        Probe("2.9.0", UNKNOWN, "building nats-server v2.9.0 failed"),
        Probe("2.9.25", OCCURS),
        Probe("2.8.4", ABSENT, "agrees"),
        Probe("2.12.15", OCCURS),
        Probe("2.11.17", OCCURS),
    ),
)


def bisection_run(tmp_path: Path, text: str | None = None) -> Path:
    """A run directory of two cases with a bisection.json (`text`, or one written from RESULT)."""
    run_dir = write_run(
        tmp_path / "bisect-run",
        [case(server_version="2.8.4"), case(server_version="2.10.27", case_id=1)],
    )
    body = text if text is not None else document(CASE, RESULT, backend="process", run_id="r1", seconds=3)
    (run_dir / BISECTION_FILE).write_text(body)
    return run_dir


def built(tmp_path: Path, *run_dirs: Path) -> dict[str, Any]:
    build_report(list(run_dirs), tmp_path / "out", engine="duckdb")
    data: dict[str, Any] = json.loads((tmp_path / "out" / "summary.json").read_text())
    return data


def test_summary_lists_the_bisection(tmp_path: Path) -> None:
    (item,) = built(tmp_path, bisection_run(tmp_path))["bisections"]
    assert item["case_class"] == CLASS
    assert (item["source"], item["destination"], item["subject"]) == ("a.*", "b.{{partition(0,1)}}", "a.x")
    assert (item["found_on"], item["first"], item["last"]) == ("2.10.27", "2.9.25", "2.11.17")
    assert (item["absent_before"], item["absent_after"]) == ("2.8.4", None)
    assert (item["unknown_before"], item["unknown_after"]) == (["2.9.0"], [])
    assert item["probes"][1] == {
        "release": "2.9.0",
        "outcome": "unknown",
        "detail": "building nats-server v2.9.0 failed",
    }
    assert item["releases"] == list(RESULT.releases)
    assert item["assumption"] == "the releases where the case occurs are contiguous"
    assert (item["run_id"], item["backend"]) == ("r1", "process")


def test_html_and_markdown_show_the_section(tmp_path: Path) -> None:
    built(tmp_path, bisection_run(tmp_path))
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<a href=#bisection>release bisection</a>" in html
    section = html[html.index("<h2 id=bisection>Release bisection</h2>") :]
    assert "<b>2.9.25</b>" in section
    assert "<b>2.11.17</b>" in section
    assert "none: still occurs on the newest release considered" in section
    assert "could not be probed near a boundary: 2.9.0" in section
    assert "<li>2.8.4 does not occur (agrees)</li>" in section
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "### Release bisection" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith(f"| `{CLASS}` | 2.10.27"))
    assert "| **2.9.25** | **2.11.17** | 2.8.4 | none: still occurs on the newest" in row
    assert "2.9.0 unknown (building nats-server v2.9.0 failed)" in markdown


def test_runs_without_a_bisection_have_no_section(tmp_path: Path, hand_run: Path) -> None:
    assert built(tmp_path, hand_run)["bisections"] == []
    assert "Release bisection" not in (tmp_path / "out" / "report.html").read_text()
    assert "Release bisection" not in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "corrupt bisection file"),
        ('{"format": "other"}', 'is not a bisection file (no "format": "nats-conformance-bisection")'),
        ('{"format": "nats-conformance-bisection", "version": 99}', "has bisection version 99; this reads 1"),
        (
            '{"format": "nats-conformance-bisection", "version": 1, "case": {}}',
            "field 'run_id' must be a string",
        ),
    ],
)
def test_a_bad_bisection_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    run_dir = bisection_run(tmp_path, text)
    with pytest.raises(ReportError) as caught:
        build_report([run_dir], tmp_path / "out", engine="duckdb")
    assert message in str(caught.value)
    assert str(run_dir / BISECTION_FILE) in str(caught.value)
    assert "\n" not in str(caught.value)
