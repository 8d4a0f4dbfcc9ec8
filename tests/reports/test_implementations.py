"""The implementations page (issue 58): implementation and version x operation, from a real adapter run,
in report.html, report.md, summary.json and the site, with the library function that answered (the
hello's `answered_by`), the agree share, each divergence class's smallest case and a replay line that
asks the adapter the same question again."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.reference.protocol import Greeting, GreetingError
from nats_conformance.reports.build import build_report
from nats_conformance.reports.site import build_site
from nats_conformance.suites.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
PLANTED = f"adapter:{shlex.quote(sys.executable)} {ROOT / 'examples/adapters/planted_bugs.py'}"
NAME = "example-planted-bugs-adapter"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("implementations")
    (folder / "none.toml").write_text("")
    argv = ["campaign", "--target", PLANTED, "--cases", "3000", "--out", str(folder / "runs")]
    assert main([*argv, "--expectations", str(folder / "none.toml")]) == 1
    return folder


def test_the_manifest_journals_what_the_adapter_said(planted: Path) -> None:
    (run,) = (planted / "runs").iterdir()
    (entry,) = json.loads((run / "manifest.json").read_text())["implementations"]
    assert entry["implementation"] == NAME
    assert entry["answered_by"]["match"] == "handle"
    assert "match" in entry["ops"]
    assert entry["protocol"] == 2


def test_the_report_and_the_site_show_each_operation_with_its_function(planted: Path) -> None:
    out = planted / "report"
    build_report([planted / "runs"], out, engine="duckdb")
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    (found,) = summary["implementations"]
    assert found["implementation"] == NAME
    rows = {row["operation"]: row for row in found["operations"]}
    assert {"transform", "match", "partition", "valid_subject"} <= set(rows)
    match = rows["match"]
    assert match["function"] == "handle"
    assert match["diverge"] > 0
    assert match["agree"] > 0
    assert match["agree_share"] == pytest.approx(match["agree"] / (match["agree"] + match["diverge"]))
    (wrong,) = [item for item in match["classes"] if item["case_class"].endswith("unexpected-delivery")]
    assert wrong["replay"].startswith("nats-conformance replay --target 'adapter:")
    assert "pattern=" in wrong["smallest"]
    assert wrong["diverge"] > 0
    assert all(row["agree_share"] == 1.0 for op, row in rows.items() if op == "valid_subject")
    html = (out / "report.html").read_text()
    assert "id=implementations" in html
    assert "<code>handle</code>" in html
    assert "### Implementations" in (out / "report.md").read_text()
    # The replay line asks the adapter the smallest question again and sees the same divergence.
    replay = shlex.split(wrong["replay"])[1:]
    assert main(replay) == 1
    site = build_site([planted / "runs"], planted / "site", engine="duckdb")
    page = (site.parent / "implementations.html").read_text()
    assert NAME in page
    assert "separated_hash" in page
    assert wrong["case_class"] in page


def test_a_hello_naming_functions_of_unknown_operations_is_one_error() -> None:
    assert Greeting.parse({"answered_by": {"match": "f"}}).answered_by == {"match": "f"}
    for wrong in ({"matching": "f"}, {"match": ""}, ["match"]):
        with pytest.raises(GreetingError, match="'answered_by' must map"):
            Greeting.parse({"answered_by": wrong})
