"""The compatibility site of two hand-made runs (tests/reports/conftest.py `hand_site`)."""

from __future__ import annotations

import re
import signal
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from handmade import SPLIT, case, one_error_line, serve_site

from nats_conformance.records.schema import Case
from nats_conformance.reports.site import build_site
from nats_conformance.reports.site_content import finding_id

LEFT = "validation:left:reference-accept-server-reject"


def pages(site: Path) -> dict[str, str]:
    return {str(path.relative_to(site)): path.read_text() for path in site.rglob("*.html")}


def test_the_site_has_an_index_a_matrix_and_a_page_per_finding_and_release(hand_site: Path) -> None:
    assert sorted(pages(hand_site)) == sorted(
        [
            "index.html",
            "matrix.html",
            "implementations.html",
            f"findings/{finding_id(SPLIT)}.html",
            f"findings/{finding_id(LEFT)}.html",
            "releases/2.9.25.html",
            "releases/2.10.27.html",
        ]
    )


def test_every_link_is_relative_and_lands_on_a_page_and_anchor(hand_site: Path) -> None:
    found = pages(hand_site)
    for name, html in found.items():
        for href in re.findall(r'href="?([^" >]+)', html):
            if href.startswith("https://") or href == "data:,":
                continue
            target, _, anchor = href.partition("#")
            path = (hand_site / name).parent / target if target else hand_site / name
            resolved = str(path.resolve().relative_to(hand_site.resolve()))
            assert resolved in found, f"{name}: {href}"
            if anchor:
                assert re.search(rf"id=\"?{re.escape(anchor)}[\" >]", found[resolved]), f"{name}: {href}"


def test_no_page_names_a_directory_of_the_build_machine(hand_site: Path, tmp_path: Path) -> None:
    for name, html in pages(hand_site).items():
        assert str(tmp_path) not in html, name
        assert "/tmp" not in html, name


def test_the_index_lists_runs_newest_first_with_their_moves(hand_site: Path) -> None:
    html = (hand_site / "index.html").read_text()
    assert html.index("<b id=run-run-2>") < html.index("<b id=run-run-1>")
    # run-2 lost the diverging splitFromLeft cases on both releases: the gate calls them missing
    assert 'gate passed: 2 missing (against <a href="#run-run-1">run-1</a>)' in html  # no regression
    assert "MISSING nats-server 2.10.27 mapping:splitFromLeft: diverge (1 case) in the previous run" in html
    assert "first run of these targets" in html
    assert "2 unexpected divergences, 2 listed, 6 unknown - complete" in html


def test_a_matrix_cell_links_to_its_finding_and_shows_the_share_that_differs(hand_site: Path) -> None:
    html = (hand_site / "matrix.html").read_text()
    cell = f'<a href="findings/{finding_id(SPLIT)}.html" title="{SPLIT}">diverges<small>1 case'
    assert f"{cell}, 1 differ (100.00 %)</small></a>" in html
    # the mapping feature on 2.9.25: 6 wildcard cases agree, 1 splitFromLeft case diverges (2 runs)
    assert f'title="{SPLIT}">diverges<small>7 cases, 1 differ (14.29 %)' in html
    assert '<a href="releases/2.9.25.html#feature-matching" title="no divergence class">agrees' in html


def test_a_finding_page_has_the_smallest_case_replay_natscli_note_and_history(hand_site: Path) -> None:
    html = (hand_site / "findings" / f"{finding_id(SPLIT)}.html").read_text()
    assert (
        "<pre class=replay>nats-conformance replay --server-version 2.10.27 --backend process --feature "
        "mapping --source &#x27;m.*&#x27; --destination &#x27;n.{{splitFromLeft(1,1)}}&#x27; --subject m.ab"
        "</pre>"
    ) in html
    assert "<pre class=natscli>nats server mapping &#x27;m.*&#x27;" in html
    assert '<a href="../releases/2.9.25.html">2.9.25</a>' in html
    history = html[html.index("<h2>History</h2>") :]
    assert re.search(r"run-2</a></td><td>[^<]+</td><td>-</td><td>-</td><td>not shown</td>", history)
    assert re.search(r"run-1</a></td><td>[^<]+</td><td>2</td><td>0</td><td>2.9.25, 2.10.27</td>", history)
    left = (hand_site / "findings" / f"{finding_id(LEFT)}.html").read_text()
    assert "<p>The validator rejects left(). (<a href=" in left
    assert '"https://docs.nats.io/nats-concepts/subject_mapping">&#x27;Subject Mapping&#x27;</a>' in left


def test_a_release_page_lists_each_cell_s_classes_changes_and_runs(hand_site: Path) -> None:
    html = (hand_site / "releases" / "2.10.27.html").read_text()
    assert "<h3 id=function-left>function <code>left</code>:" in html
    assert (
        f'<a href="../findings/{finding_id(LEFT)}.html"><code>{LEFT}</code></a> 2 cases, expected as' in html
    )
    assert "2.10.27: new known divergence left-right" in html
    assert '<li><a href="../index.html#run-run-1">run-1</a>' in html
    assert "<h2 id=unknown>Unknown cases</h2>" in html
    assert "<td>2.10.27</td><td class=n>" in html


def test_the_index_shows_each_release_s_unknown_share_and_its_reasons(hand_site: Path) -> None:
    html = (hand_site / "index.html").read_text()
    assert "<th>unknown share</th>" in html
    assert "<span class=bad>1.07 %</span>" in html  # 3 of 2.10.27's 281 cases, above 1 %
    assert "<th>unlisted</th>" in html


def test_site_needs_out_and_serve_needs_a_built_site(
    hand_site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "--out DIR" in one_error_line(capsys, ["site", str(tmp_path / "runs")])
    assert "no built site" in one_error_line(capsys, ["site", "serve", str(tmp_path / "runs")])
    assert "one built site" in one_error_line(capsys, ["site", "serve", str(hand_site), "x"])


def test_serve_previews_the_site_on_localhost_until_ctrl_c(hand_site: Path) -> None:
    server, url = serve_site(hand_site)
    try:
        with urllib.request.urlopen(f"{url}matrix.html", timeout=10) as response:
            assert "Compatibility matrix" in response.read().decode()
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=10)
    assert server.returncode == 130
    assert err == "nats-conformance: interrupted\n"


def test_spark_site_has_the_same_pages(hand_site: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed")

    out = tmp_path / "spark-site"
    expectations = tmp_path / "expectations.toml"
    build_site([tmp_path / "runs"], out, engine="spark", master="local[2]", expectations=expectations)
    duckdb, spark = pages(hand_site), pages(out)
    assert sorted(spark) == sorted(duckdb)
    for name, html in duckdb.items():
        if name != "index.html":  # its build time differs
            assert spark[name] == html, name


def test_an_adapter_gets_the_same_pages_as_a_server(
    run_of: Callable[[list[Case]], Path], tmp_path: Path
) -> None:
    adapter = {"implementation": "go-transform", "server_version": "0.3.0", "backend": "adapter"}
    diverging = case(**adapter, verdict="diverge", observed="n.b", difference="wrong-subject")
    run = run_of([case(), case(**adapter), diverging])
    build_site([run], tmp_path / "site")
    found = pages(tmp_path / "site")
    assert "releases/go-transform-0.3.0.html" in found
    assert "<h3>go-transform</h3>" in found["matrix.html"]
    assert '<a href="releases/go-transform-0.3.0.html">go-transform 0.3.0</a>' in found["index.html"]
    page = found[f"findings/{finding_id('mapping:wildcard:wrong-subject')}.html"]
    assert "<pre class=replay>nats-conformance replay --target adapter:" in page
