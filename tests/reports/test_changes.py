"""The changelog between consecutive releases (reports.changes) in summary.json, report.md and
report.html, from hand-made runs of different releases and the pairs (records.pairs) that show a change:
only a class whose same case gave another outcome on the other release is listed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from handmade import case, cells, markdown_tables, pair, paired, wrong_split

from nats_conformance.records.expectations import Ended, write_endings
from nats_conformance.records.schema import Case
from nats_conformance.reports.__main__ import main
from nats_conformance.reports.build import build_report

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

    Paired: ``splitFromLeft``'s case agrees on 2.14.5 and ``left``'s agrees on 2.14.6 (two changes);
    2.14.7's ``left`` case is rejected on 2.14.6 too (not drawn on both there), and partition's was
    not replayed (not drawn on both): neither is a change.
    """
    split, ended, again = wrong_split("2.14.6"), left("2.14.5", "expected"), left("2.14.7", "diverge")
    first = run_of([ended, case(server_version="2.14.5"), partition("2.14.5", "diverge")])
    paired(
        first,
        (split, pair(split, "2.14.5", "")),
        (ended, pair(ended, "2.14.6", "")),
        (again, pair(again, "2.14.6", again.difference)),
    )
    return [
        first,
        run_of(
            [
                left("2.14.6", "agree"),
                wrong_split("2.14.6"),
                left("1.0.0", "diverge", implementation="adapter:python planted.py"),
            ]
        ),
        run_of(
            [
                again,
                again,
                wrong_split("2.14.7"),
                partition("2.14.7", "agree"),
            ]
        ),
    ]


@pytest.fixture
def built(releases: list[Path], tmp_path: Path) -> Path:
    build_report(releases, tmp_path / "out", engine="duckdb")
    return tmp_path / "out"


def test_summary_lists_only_paired_changes(built: Path) -> None:
    summary = json.loads((built / "summary.json").read_text())
    changes = summary["changes"]
    assert [(c["from"], c["to"], c["kind"], c["case_class"]) for c in changes] == [
        ("2.14.5", "2.14.6", "appeared", "mapping:splitFromLeft:wrong-subject"),
        ("2.14.5", "2.14.6", "disappeared", "validation:left:reference-accept-server-reject"),
    ]
    assert (summary["changes_paired"], summary["changes_not_drawn"]) == (True, 2)
    assert changes[0]["evidence"] == "mapping:splitFromLeft: agree on 2.14.5, wrong-subject on 2.14.6"
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


def test_a_class_on_both_releases_with_another_verdict_is_no_change(run_of: RunOf, tmp_path: Path) -> None:
    """Expected on one release and unexpected on the next: the same behaviour under other ranges."""
    runs = [run_of([left("2.14.5", "expected")]), run_of([left("2.14.6", "diverge")])]
    paired(runs[0])
    build_report(runs, tmp_path / "out", engine="duckdb")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["changes"], summary["changes_not_drawn"]) == ([], 0)


def test_unpaired_runs_claim_no_change(run_of: RunOf, tmp_path: Path) -> None:
    runs = [run_of([left("2.14.5", "expected")]), run_of([left("2.14.6", "agree")])]
    build_report(runs, tmp_path / "out", engine="duckdb")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["changes"], summary["changes_paired"]) == ([], False)
    assert "The runs were not paired" in (tmp_path / "out" / "report.md").read_text()


def test_releases_in_version_order_not_text_order(run_of: RunOf, tmp_path: Path) -> None:
    newer = left("2.10.0", "expected")
    runs = [run_of([newer]), run_of([left("2.9.25", "agree")])]
    paired(runs[0], (newer, pair(newer, "2.9.25", "")))
    build_report(runs, tmp_path / "out", engine="duckdb")
    (change,) = json.loads((tmp_path / "out" / "summary.json").read_text())["changes"]
    assert (change["from"], change["to"], change["kind"]) == ("2.9.25", "2.10.0", "appeared")


def weighted(version: str, diverging: int, cases: int) -> list[Case]:
    """A weighted list's summary rows on `version`: `diverging` of `cases` reject its shares."""
    fields = {"feature": "weighted", "functions": "", "kind": "summary", "server_version": version}
    return [case(**fields, verdict="diverge", difference="distribution") for _ in range(diverging)] + [
        case(**fields, verdict="agree") for _ in range(cases - diverging)
    ]


@pytest.mark.parametrize(
    ("before", "after", "listed"),
    [((3, 400), (0, 400), False), ((120, 400), (0, 400), True), ((0, 400), (40, 400), True)],
)
def test_a_statistical_class_changes_only_by_its_test(
    run_of: RunOf, tmp_path: Path, before: tuple[int, int], after: tuple[int, int], listed: bool
) -> None:
    """A test of shares is compared by Fisher's exact test at CHANGE_ALPHA, never by presence: 3 of 400
    rejected lists on one release and none on the next is chance (p = 0.25)."""
    runs = [run_of(weighted("2.14.5", *before)), run_of(weighted("2.14.6", *after))]
    paired(runs[0])
    build_report(runs, tmp_path / "out", engine="duckdb")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [c["case_class"] for c in summary["changes"]] == (
        ["weighted:literal:distribution"] if listed else []
    )
    assert summary["changes_not_drawn"] == (0 if listed else 1)
    if listed:
        assert summary["changes"][0]["evidence"].startswith("Fisher's exact test p = ")


def test_markdown_section_and_tables_with_as_many_cells_as_headers(built: Path) -> None:
    markdown = (built / "report.md").read_text()
    section = markdown[markdown.index("### Changes between releases") :]
    header, _rule, *rows = markdown_tables(section)[0]
    assert cells(header) == [" release ", " since ", " change ", " what changed ", " evidence ", " class "]
    assert len(rows) == 2
    assert rows[1] == (
        "| 2.14.6 | 2.14.5 | disappeared | 2.14.6: left-right (validation: reference-accept-server-reject, "
        "left) no longer shows (ends at 2.14.5) | validation:left: reference-accept-server-reject on "
        "2.14.5, agree on 2.14.6 | `validation:left:reference-accept-server-reject` |"
    )
    assert "2 one-sided classes were not drawn on both releases" in section
    for table in markdown_tables(markdown):
        width = len(cells(table[0]))
        assert [len(cells(line)) for line in table] == [width] * len(table), table[0]


def test_html_section(built: Path) -> None:
    html = (built / "report.html").read_text()
    assert "<a href=#changes>changes between releases</a>" in html
    assert "<h2 id=changes>Changes between releases</h2>" in html
    assert (
        "<td>2.14.6: new divergence mapping:splitFromLeft:wrong-subject, 1 case (not on 2.14.5)</td>" in html
    )
    assert "partition:partition:wrong-partition" not in html[html.index("<h2 id=changes>") :]


def test_one_release_has_no_changes(run_of: RunOf, tmp_path: Path) -> None:
    build_report([paired(run_of([left("2.14.5", "expected")]))], tmp_path / "out", engine="duckdb")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["changes"] == []
    assert "No divergence class appeared or disappeared" in (tmp_path / "out" / "report.md").read_text()


def test_an_ended_divergence_leads_the_report_and_the_gate(
    run_of: RunOf, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A campaign writes the listed divergences it shows ended (records.expectations.write_endings); the
    report shows them first, and the gate prints them before its verdict."""
    run = run_of([left("2.14.10", "agree")])
    ended = Ended("transform-match-star-prefixed-token", ("2.14.10", "2.15.3"), "known-cases/t.json")
    write_endings(run, [ended])
    build_report([run], tmp_path / "out", engine="duckdb")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "**Ended:** ended on 2.14.10 and 2.15.3: transform-match-star-prefixed-token (`" in markdown
    assert markdown.index("**Ended:**") < markdown.index("Compatibility matrix")
    assert "ended on 2.14.10 and 2.15.3" in (tmp_path / "out" / "report.html").read_text()
    baseline = tmp_path / "baseline.json"
    assert main(["baseline", str(run), "--out", str(baseline)]) == 0
    capsys.readouterr()
    assert main(["gate", str(run), "--baseline", str(baseline)]) == 0
    first, replay, verdict = capsys.readouterr().out.splitlines()[:3]
    assert first == "ended on 2.14.10 and 2.15.3: transform-match-star-prefixed-token"
    assert replay == f"  replay: {ended.replay_line()}"
    assert verdict.startswith("gate passed")
