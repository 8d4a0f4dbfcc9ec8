"""The changelog between consecutive releases (reports.changes) in summary.json, report.md and
report.html, from hand-made runs of different releases."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from handmade import case, cells, markdown_tables, wrong_split

from records.schema import Case
from reports.build import build_report

RunOf = Callable[[list[Case]], Path]
LEFT = {
    "feature": "validation",
    "functions": "left",
    "destination": "{{left(1,2)}}",
    "subject": "",
    "expected": "accept",
}


def left(version: str, verdict: str, **fields: object) -> Case:
    """A validation case of ``left``: rejected (listed as ``left-right``) or accepted by the server."""
    if verdict == "agree":
        return case(server_version=version, **LEFT, observed="accept", verdict="agree", **fields)
    return case(
        server_version=version,
        **LEFT,
        observed="reject",
        verdict=verdict,
        expectation="left-right" if verdict == "expected" else "",
        difference="reference-accept-server-reject",
        **fields,
    )


def partition(version: str, verdict: str) -> Case:
    fields = {"feature": "partition", "functions": "partition", "destination": "p.{{partition(3)}}"}
    if verdict == "agree":
        return case(server_version=version, **fields, subject="p.x", verdict="agree")
    return case(
        server_version=version, **fields, subject="p.x", verdict=verdict, difference="wrong-partition"
    )


@pytest.fixture
def releases(run_of: RunOf) -> list[Path]:
    """Three runs:

    - 2.14.5: ``left`` rejected as listed (expected); mappings agree; partition diverges;
    - 2.14.6: ``left`` accepted (the listed class ends); ``splitFromLeft`` diverges (a new class); a
      ``left`` case diverging on an adapter (another implementation: no release of nats-server); no
      partition case (the family did not run: its class does not disappear);
    - 2.14.7: ``left`` rejected again, now unexpected; ``splitFromLeft`` still diverges; partition
      runs and agrees (its class disappears, compared with 2.14.5, the last release that ran it).
    """
    return [
        run_of([left("2.14.5", "expected"), case(server_version="2.14.5"), partition("2.14.5", "diverge")]),
        run_of(
            [
                left("2.14.6", "agree"),
                wrong_split("2.14.6"),
                left("1.0.0", "diverge", implementation="adapter:python planted.py"),
            ]
        ),
        run_of(
            [
                left("2.14.7", "diverge"),
                left("2.14.7", "diverge"),
                wrong_split("2.14.7"),
                partition("2.14.7", "agree"),
            ]
        ),
    ]


@pytest.fixture
def built(releases: list[Path], tmp_path: Path) -> Path:
    build_report(releases, tmp_path / "out", engine="duckdb")
    return tmp_path / "out"


def test_summary_lists_what_appeared_disappeared_and_changed(built: Path) -> None:
    changes = json.loads((built / "summary.json").read_text())["changes"]
    assert [(c["from"], c["to"], c["kind"], c["case_class"]) for c in changes] == [
        ("2.14.5", "2.14.6", "appeared", "mapping:splitFromLeft:wrong-subject"),
        ("2.14.5", "2.14.6", "disappeared", "validation:left:reference-accept-server-reject"),
        ("2.14.6", "2.14.7", "appeared", "validation:left:reference-accept-server-reject"),
        ("2.14.5", "2.14.7", "disappeared", "partition:partition:wrong-partition"),
    ]
    ended = changes[1]
    assert ended["expectations"] == ["left-right"]
    assert ended["before"] == {
        "verdict": "expected",
        "diverge": 0,
        "expected": 1,
        "expectations": ["left-right"],
    }
    assert ended["after"] is None
    assert ended["text"] == (
        "2.14.6: left-right (validation: reference-accept-server-reject, left) no longer shows "
        "(ends at 2.14.5)"
    )
    assert changes[0]["text"] == (
        "2.14.6: new divergence mapping:splitFromLeft:wrong-subject, 1 case (not on 2.14.5)"
    )
    assert changes[2]["after"] == {"verdict": "diverge", "diverge": 2, "expected": 0, "expectations": []}
    assert changes[3]["text"] == (
        "2.14.7: divergence partition:partition:wrong-partition no longer shows (ends at 2.14.5)"
    )


def test_a_class_that_changes_verdict_between_releases(run_of: RunOf, tmp_path: Path) -> None:
    runs = [run_of([left("2.14.5", "expected")]), run_of([left("2.14.6", "diverge")])]
    build_report(runs, tmp_path / "out", engine="duckdb")
    (change,) = json.loads((tmp_path / "out" / "summary.json").read_text())["changes"]
    assert (change["kind"], change["before"]["verdict"], change["after"]["verdict"]) == (
        "changed",
        "expected",
        "diverge",
    )
    assert change["text"] == (
        "2.14.6: left-right (validation: reference-accept-server-reject, left) is now unexpected "
        "(1 case), was expected as left-right on 2.14.5"
    )


def test_releases_in_version_order_not_text_order(run_of: RunOf, tmp_path: Path) -> None:
    runs = [run_of([left("2.10.0", "expected")]), run_of([left("2.9.25", "agree")])]
    build_report(runs, tmp_path / "out", engine="duckdb")
    (change,) = json.loads((tmp_path / "out" / "summary.json").read_text())["changes"]
    assert (change["from"], change["to"], change["kind"]) == ("2.9.25", "2.10.0", "appeared")


def test_markdown_section_and_tables_with_as_many_cells_as_headers(built: Path) -> None:
    markdown = (built / "report.md").read_text()
    section = markdown[markdown.index("### Changes between releases") :]
    header, _rule, *rows = markdown_tables(section)[0]
    assert cells(header) == [" release ", " since ", " change ", " what changed ", " class "]
    assert len(rows) == 4
    assert rows[1] == (
        "| 2.14.6 | 2.14.5 | disappeared | 2.14.6: left-right (validation: reference-accept-server-reject, "
        "left) no longer shows (ends at 2.14.5) | `validation:left:reference-accept-server-reject` |"
    )
    for table in markdown_tables(markdown):
        width = len(cells(table[0]))
        assert [len(cells(line)) for line in table] == [width] * len(table), table[0]


def test_html_section(built: Path) -> None:
    html = (built / "report.html").read_text()
    assert "<a href=#changes>changes between releases</a>" in html
    assert "<h2 id=changes>Changes between releases</h2>" in html
    assert (
        "<td>2.14.7: divergence partition:partition:wrong-partition no longer shows (ends at 2.14.5)</td>"
        in html
    )


def test_one_release_has_no_changes(run_of: RunOf, tmp_path: Path) -> None:
    build_report([run_of([left("2.14.5", "expected")])], tmp_path / "out", engine="duckdb")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["changes"] == []
    assert (
        "No divergence class appeared, disappeared or changed" in (tmp_path / "out" / "report.md").read_text()
    )
