"""The mutants section: a run folder of `nats-conformance mutants` given to the report, alone (no
aggregation) or beside a campaign run; scores per file and function, every survivor with its diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from handmade import case, one_error_line, write_run
from markdown_it import MarkdownIt

import nats_conformance.reports.build
from nats_conformance.records.mutants import MUTANTS_FILE, SURVIVED, Mutant
from nats_conformance.reports.build import build_report
from nats_conformance.reports.render_markdown import MARKDOWN_ROWS
from nats_conformance.suites.mutants import Outcome
from tests.records.mutants_sample import SUBLIST, TRANSFORM, mutants_document, mutants_folder

DIFF = f"{SUBLIST}:1300 (matchLevel)\n- plen = len(p)\n+ (dropped)"


def no_aggregation(*arguments: object) -> None:
    raise AssertionError("a report of mutants runs only aggregates nothing")


def test_a_mutants_folder_alone_is_its_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nats_conformance.reports.build, "aggregate_groups", no_aggregation)
    folder = mutants_folder(tmp_path / "runs" / "mutants-20261129T000000-ab")
    write_run(folder / "runs" / "original" / "mapping", [case(server_version="2.14.10")])
    build_report([folder], tmp_path / "out")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "### Mutants of nats-server's code" in markdown
    assert "Compatibility matrix" not in markdown
    assert "case records" not in markdown
    assert (
        "**nats-server 2.14.10, mutants-20261129T000000-ab: 6 of the 6 mutants in the build (quick plan; "
        "seed 21; part 2/4; each mutant run by the families that reach its line), 1 equivalent, 2 killed: "
        "score 40.0 %; 1 unreached (score of the reached ones 50.0 %); nats-server's tests (42 of them) "
        "2 of 5 killed (40.0 %).**" in markdown
    )
    assert f"| `{TRANSFORM}` | 3 | 0 | 1 | 1 | 1 | 33.3 % | 2 of 3 killed (66.7 %) |" in markdown
    assert f"| `{SUBLIST}` | 3 | 1 | 1 | 1 | 0 | 50.0 % | 0 of 2 killed (0.0 %) |" in markdown
    assert (
        f"| `isValidSubject` | `{SUBLIST}` | 2 | 1 | 1 | 0 | 0 | 100.0 % | 0 of 1 killed (0.0 %) |"
        in markdown
    )
    assert (
        f"**Survivor 20**, line 1300 of `{SUBLIST}` in `matchLevel` (drop-statement), reached by matching:"
        in (markdown)
    )
    rendered = MarkdownIt("gfm-like", {"linkify": False}).parse(markdown)
    assert sum(token.type == "table_open" for token in rendered) == 2
    assert [t.content for t in rendered if t.type == "fence"][1] == DIFF + "\n"
    assert "Unreached (no family runs their line): 9." in markdown
    assert (
        f"**Wrong entry of mutants-equivalent.toml:** mutant 15, line 1262 of `{SUBLIST}` in "
        "`isValidSubject` (constant, `0` → `1`), was killed at start: nats-server: invalid subject."
        in markdown
    )
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<h2 id=mutants>Mutants of nats-server's code</h2>" in html
    assert f"<pre>{DIFF}</pre>" in html
    assert "<td>mapping, validation</td>" in html
    (summary,) = json.loads((tmp_path / "out" / "summary.json").read_text())["mutants"]
    assert (summary["totals"]["killed"], summary["unreached"], summary["survivors"][1]["diff"]) == (
        2,
        [9],
        DIFF,
    )


def test_a_mutants_folder_beside_a_campaign_run_adds_its_section(tmp_path: Path) -> None:
    folder = mutants_folder(tmp_path / "mutants-1")
    write_run(folder / "runs" / "original" / "mapping", [case(server_version="2.14.10")] * 3)
    run_dir = write_run(tmp_path / "campaign", [case(server_version="2.14.5")])
    build_report([run_dir, folder], tmp_path / "out", engine="duckdb")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "### Compatibility matrix" in markdown
    assert markdown.index("### Divergence classes") < markdown.index("### Mutants of nats-server's code")
    assert "nats-server 2.14.10, mutants-1: 6 of the 6 mutants" in markdown
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["rows"], [run["path"] for run in summary["runs"]]) == (1, ["campaign"])
    assert "<a href=#mutants>mutants</a>" in (tmp_path / "out" / "report.html").read_text()


def test_long_tables_are_cut_in_markdown_and_whole_in_html(tmp_path: Path) -> None:
    many = tuple(
        Mutant(n, TRANSFORM, f"f{n:02d}", n, "constant", "1", "2") for n in range(1, MARKDOWN_ROWS + 6)
    )
    found = {m.id: Outcome(m.id, SURVIVED, families=["mapping"]) for m in many}
    document = mutants_document(many, found)
    document["anchor"] = None
    build_report([mutants_folder(tmp_path / "mutants-1", document)], tmp_path / "out")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert markdown.count("_5 more rows in summary.json._") == 2
    assert "**Survivor 40**" in markdown
    assert "**Survivor 41**" not in markdown
    assert "`f45`" not in markdown
    assert "| nats-server's tests |" not in markdown
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.count("<pre>") == MARKDOWN_ROWS + 5


def test_a_newer_mutants_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = mutants_folder(tmp_path / "mutants-1", {**mutants_document(), "version": 2})
    line = one_error_line(capsys, ["build", str(folder), "--out", str(tmp_path / "out")])
    assert line == f"nats-conformance: error: {folder / MUTANTS_FILE} has mutants version 2; this reads 1"
    assert not (tmp_path / "out").exists()
