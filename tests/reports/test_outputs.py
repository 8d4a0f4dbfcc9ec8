"""The three outputs of `python -m nats_conformance.reports build` on hand-built records
(tests/reports/handmade.py)."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from handmade import PARTITION_DESTINATION, cells, markdown_tables

from nats_conformance.records.unknowns import REASONS, UNLISTED
from nats_conformance.reports.__main__ import main
from nats_conformance.reports.build import build_report
from nats_conformance.reports.figures import MISSING
from nats_conformance.reports.present import BANNER_COLOURS, STATE_COLOURS


def no_constants(name: str) -> object:
    raise AssertionError(f"summary.json holds {name}")


def summary_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(), parse_constant=no_constants)
    return data


@pytest.fixture
def built(hand_run: Path, tmp_path: Path) -> Path:
    build_report([hand_run], tmp_path / "out", engine="duckdb")
    return tmp_path / "out"


def test_command_line_writes_three_files_with_progress(
    hand_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["build", str(hand_run), "--out", str(tmp_path / "out"), "--engine", "duckdb"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(tmp_path / "out" / "report.html")
    assert "290 case records in 2 part file(s) of 1 run(s)" in err
    assert all(line.startswith("reports: [") for line in err.splitlines())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "report.html",
        "report.md",
        "summary.json",
    ]


def test_summary_json(built: Path) -> None:
    summary = summary_of(built / "summary.json")
    assert summary["rows"] == 290
    # agree: 2.9.25 3 + 2 + 2 + 1, 2.10.27 2 + 1 + 72 + 201; unknown: one mapping, partition, weighted case
    assert summary["verdicts"] == {"agree": 284, "diverge": 2, "expected": 1, "unknown": 3}
    assert summary["releases"] == ["2.9.25", "2.10.27"]
    first, second = summary["divergence_classes"]
    assert first["case_class"] == "mapping:splitFromLeft:wrong-subject"  # unexpected ones first
    assert (first["first_release"], first["last_release"], first["diverge"]) == ("2.9.25", "2.10.27", 2)
    assert first["not_on"] == []
    assert first["replay"] == (
        "nats-conformance replay --server-version 2.10.27 --backend process --feature mapping "
        "--source 'm.*' --destination 'n.{{splitFromLeft(1,1)}}' --subject m.ab"
    )
    assert second["expectations"] == ["left-right"]
    (partition,) = summary["partition"]
    assert partition["destination"] == PARTITION_DESTINATION
    assert partition["counts"] == {"0": 10, "1": 20, "2": 30}
    assert (partition["keys"], partition["outside"], partition["max_min_ratio"]) == (60, 1, 3.0)
    assert partition["chi_square"] == pytest.approx(10.0)
    assert partition["p_value"] == pytest.approx(math.exp(-5))
    lists = {item["source"]: item for item in summary["weighted"]}
    assert lists["w.l"]["loss_rate"] == 0.6
    assert [(s["label"], s["expected"], s["count"]) for s in lists["w.s"]["shares"]] == [
        ("w.a", 0.6, 55),
        ("w.b", 0.3, 35),
        ("(lost)", pytest.approx(0.1), 0),
        ("w.s (unchanged)", 0.0, 10),
    ]
    # the remainder is lost by the document; delivered unchanged, the shares do not fit
    assert {item["source"]: item["consistent"] for item in summary["weighted"]} == {"w.s": False, "w.l": True}
    (matrix,) = summary["matrix"]
    rows = {row["name"] if row["kind"] == "feature" else "fn:" + row["name"]: row for row in matrix["rows"]}
    assert {name: row["first_documented"] for name, row in rows.items()} == {
        "mapping": None,
        "validation": None,
        "matching": "2.9.25",
        "partition": "2.10.27",
        "weighted": "2.10.27",
        "fn:wildcard": "2.9.25",
        "fn:partition": "2.10.27",
        "fn:splitFromLeft": None,
        "fn:left": None,
        "fn:random": None,
    }
    assert [cell["state"] for cell in rows["fn:left"]["cells"].values()] == [
        "not supported",
        "known divergence",
    ]
    assert rows["fn:random"]["cells"]["2.10.27"] == {
        "state": "not supported",
        "agree": 1,
        "diverge": 0,
        "expected": 0,
        "unknown": 0,
    }


def test_html_is_self_contained_with_plots_matrix_and_replay_links(built: Path) -> None:
    html = (built / "report.html").read_text()
    assert "<script" not in html
    assert "<link" not in html
    assert " src=" not in html
    assert set(re.findall(r'href="?([^" >]*)', html)) <= {
        f"#{a}" for a in re.findall(r"id=\"?([\w-]+)", html)
    }
    assert html.count("<svg") == 2  # the partition histograms and the weighted plots
    for colour in ("agrees", "known divergence", "not supported"):
        assert f"background:{STATE_COLOURS[colour]}" in html
    assert "<a href=#class-1>replay</a>" in html
    assert "--destination &#x27;n.{{splitFromLeft(1,1)}}&#x27; --subject m.ab</pre>" in html


def test_markdown_has_the_same_sections_and_replay_commands(built: Path) -> None:
    markdown = (built / "report.md").read_text()
    for heading in (
        "Compatibility matrix",
        "Divergence classes",
        "Partition distributions",
        "Weighted mappings",
    ):
        assert f"### {heading}" in markdown
    assert "| `left` | ⛔ not supported | 🟨 known divergence | none |" in markdown
    assert "[replay](#replay-1)" in markdown
    assert "--source 'm.*' --destination 'n.{{splitFromLeft(1,1)}}' --subject m.ab\n```" in markdown


def test_markdown_tables_have_as_many_cells_in_every_row_as_in_the_header(built: Path) -> None:
    """GitHub renders a row with more cells than its header without the extra ones."""
    tables = markdown_tables((built / "report.md").read_text())
    assert len(tables) >= 6
    for table in tables:
        width = len(cells(table[0]))
        assert [len(cells(line)) for line in table] == [width] * len(table), table[0]


@pytest.mark.spark
def test_spark_build_writes_the_same_report(spark: Any, hand_run: Path, built: Path, tmp_path: Path) -> None:
    build_report([hand_run], tmp_path / "spark", engine="spark")
    assert spark.getActiveSession() is not None  # the shared session is left running
    with_spark = summary_of(tmp_path / "spark" / "summary.json")
    with_duckdb = summary_of(built / "summary.json")
    with_spark.pop("generated")
    with_duckdb.pop("generated")
    assert with_spark == with_duckdb


def test_a_server_judged_by_another_release_s_rules_is_named_in_every_output(
    tmp_path: Path, hand_run: Path
) -> None:
    """A release newer than every rule set runs and is judged by the nearest rules (the manifest's
    `settings.profiles`, which the campaign writes): the report, its Markdown and summary.json say so."""
    manifest_path = hand_run / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["settings"]["profiles"] = {
        "process-2.15.9": {"server_version": "2.15.9", "profile": "2.15.2"},
        "process-2.14.5": {"server_version": "2.14.5", "profile": "2.14.5"},
    }
    manifest_path.write_text(json.dumps(manifest))
    build_report([hand_run], tmp_path / "out", engine="duckdb")
    sentence = "judged nats-server 2.15.9 by the rules of 2.15.2"
    assert sentence in (tmp_path / "out" / "report.md").read_text()
    assert sentence in (tmp_path / "out" / "report.html").read_text()
    (run,) = summary_of(tmp_path / "out" / "summary.json")["runs"]
    assert run["judged_by"] == [["2.15.9", "2.15.2"]]


def test_every_output_opens_with_the_verdict_banner(built: Path) -> None:
    line = "2 unexpected divergences, 1 listed, 3 unknown - complete"
    html = (built / "report.html").read_text()
    assert f'<p class=banner style="background:{BANNER_COLOURS[False]}">{line}</p>' in html
    assert html.index("class=banner") < html.index("<table")
    assert (built / "report.md").read_text().splitlines()[2] == f"**❌ {line}**"
    assert summary_of(built / "summary.json")["banner"] == line


def test_matrix_cells_show_the_share_that_differs_and_link_to_their_classes(built: Path) -> None:
    html = (built / "report.html").read_text()
    # mapping on 2.9.25: 3 wildcard cases agree, 1 splitFromLeft case diverges (class 1)
    cell = '<a href="#class-1" title="mapping:splitFromLeft:wrong-subject">diverges<small>4 cases, 1 differ'
    assert f"{cell} (25.00 %)</small></a>" in html
    assert (
        '<a href="#class-2" title="validation:left:reference-accept-server-reject">known divergence' in html
    )
    assert '<td class=cell style="background:#9fd89a">agrees<small>2 cases</small></td>' in html


def test_no_output_names_the_build_machine_s_directories(built: Path, hand_run: Path) -> None:
    for name in ("report.html", "report.md", "summary.json"):
        assert str(hand_run.parent) not in (built / name).read_text(), name
    assert [run["path"] for run in summary_of(built / "summary.json")["runs"]] == ["run-1"]


def test_report_md_renders_every_cell_with_a_gfm_renderer(built: Path) -> None:
    """Rendered by markdown-it's GitHub-flavoured preset (tables as GitHub draws them: the cells of a row
    beyond its header's are dropped), every table of report.md keeps each of its cells."""
    from markdown_it import MarkdownIt

    source = (built / "report.md").read_text()
    rendered = MarkdownIt("gfm-like", {"linkify": False}).parse(source)
    heads = sum(token.type == "th_open" for token in rendered)
    data = sum(token.type == "td_open" for token in rendered)
    tables = markdown_tables(source)
    assert sum(token.type == "table_open" for token in rendered) == len(tables) >= 6
    assert heads == sum(len(cells(table[0])) for table in tables)
    assert data == sum(len(cells(line)) for table in tables for line in table[2:])


def test_without_matplotlib_the_report_keeps_its_tables_and_says_how_to_get_the_plots(
    hand_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # a core install: the `figures` extra is absent
    assert main(["build", str(hand_run), "--out", str(tmp_path / "out"), "--engine", "duckdb"]) == 0
    err = capsys.readouterr().err
    assert "reports: no plots: matplotlib is not installed (pip install 'nats-conformance[figures]')" in err
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<svg" not in html
    assert html.count(MISSING) == 2  # in place of the partition histograms and the weighted plots
    assert f"<code>{PARTITION_DESTINATION}</code>" in html  # the partition table is whole


def test_every_output_shows_each_release_s_unknown_share_and_reasons(built: Path) -> None:
    """The hand-made records' 3 unknown cases of 2.10.27 state no reason (as runs recorded before reasons
    were stated): unlisted, 3 of 281 cases, above the 1 % the issue allows."""
    summary = summary_of(built / "summary.json")
    assert summary["unknown"] == [
        {"release": "2.9.25", "cases": 9, "unknown": 0, "share": 0.0, "reasons": {}},
        {"release": "2.10.27", "cases": 281, "unknown": 3, "share": 3 / 281, "reasons": {UNLISTED: 3}},
    ]
    assert list(summary["unknown_reasons"]) == list(REASONS)
    markdown = (built / "report.md").read_text()
    assert "| release | cases | unknown | share | `unlisted` |" in markdown
    assert "| 2.10.27 | 281 | 3 | 1.07 % (above 1 %) | 3 |" in markdown
    assert f"- `unlisted`: {REASONS[UNLISTED]}" in markdown
    html = (built / "report.html").read_text()
    assert "<h2 id=unknown>Unknown cases</h2>" in html
    assert "<td class=n><span class=bad>1.07 % (above 1 %)</span></td>" in html
