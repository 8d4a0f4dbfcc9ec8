"""The coverage section: a run directory holding `coverage.json` (`nats-conformance coverage`), and the
document itself built from a coverage profile (records/coverage.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from handmade import case, write_run
from markdown_it import MarkdownIt

from nats_conformance.fixtures.cover import COVER_DIR, COVER_PACKAGES, engine_counters
from nats_conformance.fixtures.provision import go_environment
from nats_conformance.records.coverage import (
    COVERAGE_FILE,
    Surface,
    coverage_document,
    functions_of,
    parse_profile,
    release_tag,
)
from nats_conformance.records.errors import ReportError
from nats_conformance.reports.build import build_report
from nats_conformance.suites.coverage import COUNTERS, measure

MODULE = "github.com/nats-io/nats-server/v2"
PROFILE = f"""mode: set
{MODULE}/server/subject_transform.go:10.2,12.3 2 1
{MODULE}/server/subject_transform.go:12.3,14.4 1 0
{MODULE}/server/subject_transform.go:20.2,21.3 3 0
{MODULE}/server/accounts.go:5.2,6.3 4 1
{MODULE}/server/accounts.go:8.2,9.3 1 0
{MODULE}/server/accounts.go:30.2,31.3 5 0
{MODULE}/main.go:3.2,4.3 1 1
"""
PROFILE_AGAIN = f"""mode: set
{MODULE}/server/subject_transform.go:12.3,14.4 1 1
"""
FUNCTIONS = [
    (f"{MODULE}/server/subject_transform.go", 9, "NewSubjectTransform"),
    (f"{MODULE}/server/subject_transform.go", 19, "reverse"),
    (f"{MODULE}/server/accounts.go", 4, "AddMapping"),
    (f"{MODULE}/server/accounts.go", 29, "Unrelated"),
    (f"{MODULE}/main.go", 2, "main"),
]
SURFACE = Surface(files=("server/subject_transform.go",), functions=("AddMapping", "RemoveMapping"))


ODD_LINE = "if a || b { return `x|y` }"
"""Line 12 of every file: pipes and backticks, which a Markdown table cell must keep."""


def source(path: str) -> list[str]:
    return [ODD_LINE if number == 12 else f"line {number} of {path}" for number in range(1, 40)]


def document(profile: str = PROFILE, read_source: Callable[[str], list[str]] = source) -> dict[str, Any]:
    return coverage_document(
        run_id="r1",
        release="2.14.5",
        module=MODULE,
        blocks=parse_profile(profile, MODULE),
        functions=functions_of(FUNCTIONS, MODULE),
        read_source=read_source,
        counter_files=2,
        surface=SURFACE,
    )


def test_the_surface_is_its_whole_files_and_named_functions_anywhere() -> None:
    found = document()
    assert (found["statements"], found["covered"]) == (2 + 1 + 3 + 4 + 1, 2 + 4)
    files = {item["path"]: item for item in found["files"]}
    assert files["server/subject_transform.go"] == {
        "path": "server/subject_transform.go",
        "whole": True,
        "statements": 6,
        "covered": 2,
        "file_statements": 6,
        "file_covered": 2,
    }
    assert (files["server/accounts.go"]["statements"], files["server/accounts.go"]["file_statements"]) == (
        5,
        10,
    )
    assert [(f["name"], f["statements"], f["covered"]) for f in found["functions"]] == [
        ("AddMapping", 5, 4),
        ("NewSubjectTransform", 3, 2),
        ("reverse", 3, 0),
    ]
    assert found["missing"] == ["RemoveMapping"]


def test_every_unreached_block_of_the_surface_has_its_source_and_its_link_at_the_tag() -> None:
    unreached = document()["unreached"]
    assert [(b["path"], b["function"], b["start"], b["end"]) for b in unreached] == [
        ("server/accounts.go", "AddMapping", 8, 9),
        ("server/subject_transform.go", "NewSubjectTransform", 12, 14),
        ("server/subject_transform.go", "reverse", 20, 21),
    ]
    assert unreached[1]["url"] == (
        "https://github.com/nats-io/nats-server/blob/v2.14.5/server/subject_transform.go#L12-L14"
    )
    assert unreached[1]["source"].splitlines() == [
        ODD_LINE,
        *(f"line {n} of server/subject_transform.go" for n in (13, 14)),
    ]


def test_a_block_reached_by_any_process_is_reached() -> None:
    merged = document(PROFILE + PROFILE_AGAIN.removeprefix("mode: set\n"))
    assert merged["covered"] == 2 + 4 + 1
    assert ("NewSubjectTransform", 12) not in {(b["function"], b["start"]) for b in merged["unreached"]}


def test_a_pseudo_version_links_to_its_commit() -> None:
    assert release_tag("2.15.0-preview.1.0.20260821135011-1787eee035cf") == "1787eee035cf"
    assert release_tag("2.9.25") == "v2.9.25"


def coverage_run(tmp_path: Path, text: str) -> Path:
    run_dir = write_run(tmp_path / "coverage-run", [case(server_version="2.14.5")])
    (run_dir / COVERAGE_FILE).write_text(text)
    return run_dir


def test_the_report_shows_the_coverage_section(tmp_path: Path) -> None:
    run_dir = coverage_run(tmp_path, json.dumps(document()))
    build_report([run_dir], tmp_path / "out", engine="duckdb")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "### Coverage of nats-server's mapping code" in markdown
    assert "6 of 11 statements of the mapping surface (54.5 %), 3 blocks unreached" in markdown
    assert "| `server/subject_transform.go` | whole file | 6 | 2 | 33.3 % |" in markdown
    assert "| `reverse` | `server/subject_transform.go:19` | 3 | 0 | 0.0 % |" in markdown
    assert (
        "[server/subject_transform.go:20-21](https://github.com/nats-io/nats-server/blob/v2.14.5/"
        "server/subject_transform.go#L20-L21)" in markdown
    )
    section = markdown.split("### Coverage")[1].split("<details>")[0]
    rendered = MarkdownIt("gfm-like", {"linkify": False}).parse(section)
    assert sum(token.type == "table_open" for token in rendered) == 3
    spans = [
        child.content for token in rendered for child in token.children or () if child.type == "code_inline"
    ]
    assert spans.count(ODD_LINE) == 1
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<h2 id=coverage>" in html
    assert "<pre>line 20 of server/subject_transform.go\n" in html
    (summary,) = json.loads((tmp_path / "out" / "summary.json").read_text())["coverage"]
    assert (summary["release"], summary["statements"], summary["covered"]) == ("2.14.5", 11, 6)
    assert [b["start"] for b in summary["unreached"]] == [8, 12, 20]
    assert "source" not in summary["unreached"][0]


def test_a_block_no_configuration_can_reach_says_why_and_leaves_the_reachable_figure(tmp_path: Path) -> None:
    """`reverse` of a transform without indexes (records.coverage.UNREACHABLE): its block says why, and
    the headline counts the statements that can be reached."""

    def reversing(path: str) -> list[str]:
        lines = source(path)
        lines[19] = "\tif len(tr.dtokmftokindexesargs) == 0 {"
        return lines

    found = document(read_source=reversing)
    assert [b["why"] for b in found["unreached"]] == ["", "", "every destination token adds an index"]
    run_dir = coverage_run(tmp_path, json.dumps(found))
    build_report([run_dir], tmp_path / "out", engine="duckdb")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert (
        "3 blocks unreached (3 statements of them unreachable from any configuration or message: "
        "6 of 8 reachable ones, 75.0 %)" in markdown
    )
    assert "| every destination token adds an index |" in markdown
    assert "<td>every destination token adds an index</td>" in (tmp_path / "out" / "report.html").read_text()
    (summary,) = json.loads((tmp_path / "out" / "summary.json").read_text())["coverage"]
    assert summary["unreachable"] == 3


def test_a_version_1_coverage_file_has_no_reasons(tmp_path: Path) -> None:
    old = document()
    old["version"] = 1
    for block in old["unreached"]:
        del block["why"]
    build_report([coverage_run(tmp_path, json.dumps(old))], tmp_path / "out", engine="duckdb")
    (summary,) = json.loads((tmp_path / "out" / "summary.json").read_text())["coverage"]
    assert (summary["unreachable"], [b["why"] for b in summary["unreached"]]) == (0, ["", "", ""])


def test_a_report_without_coverage_has_no_section(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "plain", [case(server_version="2.14.5")])
    build_report([run_dir], tmp_path / "out", engine="duckdb")
    assert "Coverage of" not in (tmp_path / "out" / "report.md").read_text()
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["coverage"] == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "corrupt coverage file"),
        ('{"format": "other"}', "is not a coverage file"),
        ('{"format": "nats-conformance-coverage", "version": 99}', "has coverage version 99"),
        ('{"format": "nats-conformance-coverage", "version": 1, "run_id": "r"}', "field 'release' must be"),
    ],
)
def test_a_bad_coverage_file_is_refused_in_one_line(tmp_path: Path, text: str, says: str) -> None:
    run_dir = coverage_run(tmp_path, text)
    with pytest.raises(ReportError, match=says) as raised:
        build_report([run_dir], tmp_path / "out", engine="duckdb")
    assert "\n" not in str(raised.value)


TINY_MAIN = """package main

import (
	"fmt"
	"os"

	"example.com/tiny/server"
)

func main() { fmt.Println(server.Transform(os.Args[1])) }
"""
TINY_TRANSFORM = """package server

// Transform says what kind of subject it is given.
func Transform(subject string) string {
	if subject == "" {
		return "empty"
	}
	if len(subject) > 10 {
		return "long"
	}
	return subject
}

func reverse(subject string) string {
	out := ""
	for _, r := range subject {
		out = string(r) + out
	}
	return out
}
"""


def tiny_build(tmp_path: Path, *flags: str) -> tuple[Path, Path]:
    """The tiny module's source folder and its -cover build (with `flags`: another build of it)."""
    tiny = tmp_path / "tiny"
    if not tiny.is_dir():
        (tiny / "server").mkdir(parents=True)
        (tiny / "go.mod").write_text("module example.com/tiny\n\ngo 1.22\n")
        (tiny / "main.go").write_text(TINY_MAIN)
        (tiny / "server" / "subject_transform.go").write_text(TINY_TRANSFORM)
    binary = tmp_path / ("tiny-cover" + "".join(flags))
    subprocess.run(
        ["go", "build", "-cover", *flags, f"-coverpkg={COVER_PACKAGES}", "-o", str(binary), "."],
        cwd=tiny,
        env=go_environment(),
        check=True,
    )
    return tiny, binary


def test_counters_of_an_atomic_engine_merge_with_the_servers(tmp_path: Path) -> None:
    """A -cover engine counts in atomic mode, which `go tool covdata` refuses to merge with set-mode
    counters: it writes into its own folder of the run's counters (`engine_counters`) and each folder is
    merged on its own, a block reached when either folder reached it."""
    tiny, server = tiny_build(tmp_path)
    _, engine = tiny_build(tmp_path, "-covermode=atomic")
    run_dir = write_run(tmp_path / "run", [case(server_version="2.14.5")])
    counters = run_dir / COUNTERS
    counters.mkdir(parents=True)
    subprocess.run([str(server), ""], env={**go_environment(), COVER_DIR: str(counters)}, check=True)
    long = "a.b.c.d.e.f"
    environment = {**go_environment(), COVER_DIR: str(engine_counters(counters))}
    subprocess.run([str(engine), long], env=environment, check=True)
    surface = Surface(files=("server/subject_transform.go",), functions=("main",))
    found = measure(run_dir, "2.14.5", engine=True, source=tiny, module="example.com/tiny", surface=surface)
    assert found["counter_files"] == 2
    figures = {item["name"]: (item["covered"], item["statements"]) for item in found["functions"]}
    assert figures == {"main": (1, 1), "Transform": (4, 5), "reverse": (0, 4)}  # "empty" and "long"
    assert all(b["function"] != "Transform" or "return subject" in b["source"] for b in found["unreached"])


def test_counters_of_a_real_cover_program_merge_into_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The merge and the section from real counters, cheaply: a tiny module built with -cover as
    `fixtures.cover` builds a release (its main package and `./server` counted), run twice into the run
    directory's GOCOVERDIR (`nats-conformance coverage` on a real release is
    tests/live/test_coverage_campaign.py, nightly)."""
    tiny, binary = tiny_build(tmp_path)
    run_dir = write_run(tmp_path / "run", [case(server_version="2.14.5")])
    counters = run_dir / COUNTERS
    counters.mkdir(parents=True)
    for subject in ("", "a.b"):
        subprocess.run([str(binary), subject], env={**go_environment(), COVER_DIR: str(counters)}, check=True)
    surface = Surface(files=("server/subject_transform.go",), functions=("main", "AddMapping"))
    monkeypatch.chdir(tmp_path)  # a run directory given relative (`--out runs`), as users give it
    relative = run_dir.relative_to(tmp_path)
    found = measure(relative, "2.14.5", source=tiny, module="example.com/tiny", surface=surface)
    assert found["counter_files"] == 2
    figures = {item["name"]: (item["covered"], item["statements"]) for item in found["functions"]}
    assert figures == {"main": (1, 1), "Transform": (4, 5), "reverse": (0, 4)}
    assert found["missing"] == ["AddMapping"]
    unreached = {(b["function"], b["source"].strip()) for b in found["unreached"]}
    assert ("Transform", 'if len(subject) > 10 {\n\t\treturn "long"\n\t}') in unreached
    assert not any("empty" in text for _, text in unreached)
    assert json.loads((run_dir / COVERAGE_FILE).read_text()) == found
    build_report([run_dir], tmp_path / "out", engine="duckdb")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "5 of 10 statements of the mapping surface (50.0 %)" in markdown
    assert "2 process(es) wrote counters (the servers)" in markdown
    assert (
        "https://github.com/nats-io/nats-server/blob/v2.14.5/server/subject_transform.go#L8-L10" in markdown
    )


def test_servers_restarted_after_a_fault_are_said_to_have_lost_their_counters(tmp_path: Path) -> None:
    found = coverage_document(
        run_id="r1",
        release="2.14.5",
        module=MODULE,
        blocks=parse_profile(PROFILE, MODULE),
        functions=functions_of(FUNCTIONS, MODULE),
        read_source=source,
        counter_files=3,
        restarts=2,
        surface=SURFACE,
    )
    build_report([coverage_run(tmp_path, json.dumps(found))], tmp_path / "out", engine="duckdb")
    assert (
        "2 server(s) restarted after a fault, whose counters are lost"
        in (tmp_path / "out" / "report.md").read_text()
    )
    (summary,) = json.loads((tmp_path / "out" / "summary.json").read_text())["coverage"]
    assert summary["restarts"] == 2


def test_former_names_count_where_a_release_has_them_and_are_never_missing() -> None:
    former = Surface(
        files=SURFACE.files, functions=SURFACE.functions, former=("server/accounts.go:Unrelated", "gone")
    )
    found = coverage_document(
        run_id="r1",
        release="2.9.25",
        module=MODULE,
        blocks=parse_profile(PROFILE, MODULE),
        functions=functions_of(FUNCTIONS, MODULE),
        read_source=source,
        counter_files=1,
        surface=former,
    )
    assert ("Unrelated", 5, 0) in [(f["name"], f["statements"], f["covered"]) for f in found["functions"]]
    assert found["missing"] == ["RemoveMapping"]
    assert found["unreached"][-1]["url"].startswith("https://github.com/nats-io/nats-server/blob/v2.9.25/")
