"""`nats-conformance coverage` on the pinned 2.14.5: its -cover build (cached beside the ordinary build),
a small campaign of the mapping family whose servers write their counters when stopped with SIGTERM,
the merge with `go tool covdata`, and the report's section read from the run directory; with `--oracle
engine`, the release's -cover engine too, asked to exit so that it writes its counters; an `engine:`
target's coverage, its questions drawn guided by the engine's `coverage` answers.

Nightly: a cold -cover build of a release took 75 s to 2 min on the shared 2 cores (35 s of CPU), more
than a change's CI can spend; CI checks the merge and the section with a tiny -cover program
(tests/reports/test_coverage.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.fixtures.cover import (
    COVER_DIR,
    ENGINE_COUNTERS,
    STOP_GRACE,
    cover_binary,
    merge_counters,
    module_source,
)
from nats_conformance.fixtures.engine import engine_command
from nats_conformance.fixtures.provision import cached_binary, go_environment
from nats_conformance.records.coverage import SOURCE_LINES
from nats_conformance.reference.protocol import CoverageQuestion, Covered, TransformQuestion
from nats_conformance.reports.build import build_report
from nats_conformance.suites.__main__ import main

pytestmark = [pytest.mark.live, pytest.mark.nightly]

RELEASE = "2.14.5"


@pytest.fixture(scope="module")
def covered_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    """(exit status, run directory) of a coverage run of 40 mapping cases on the release."""
    folder = tmp_path_factory.mktemp("coverage")
    status = main(
        [
            *("coverage", "--server-version", RELEASE, "--family", "mapping", "--cases", "40"),
            *("--out", str(folder / "runs")),
        ]
    )
    (run_dir,) = (folder / "runs").iterdir()
    return status, run_dir


def test_the_cover_build_is_cached_beside_the_ordinary_build(covered_run: tuple[int, Path]) -> None:
    assert cover_binary(RELEASE).is_file()
    assert cover_binary(RELEASE).parent.parent == cached_binary(RELEASE).parent.parent
    assert cover_binary(RELEASE).parent.name == f"{RELEASE}-cover"


def test_stopped_servers_wrote_counters_that_merge_into_coverage_json(covered_run: tuple[int, Path]) -> None:
    status, run_dir = covered_run
    assert status == 0
    assert list((run_dir / "coverage" / "counters").glob("covcounters.*"))
    document = json.loads((run_dir / "coverage.json").read_text())
    assert (document["release"], document["tag"], document["counter_files"] >= 1) == (
        RELEASE,
        "v2.14.5",
        True,
    )
    (transform,) = [item for item in document["files"] if item["path"] == "server/subject_transform.go"]
    assert transform["whole"]
    assert 0 < transform["covered"] < transform["statements"] == transform["file_statements"]
    assert not {"server/subject_transform.go", "AddWeightedMappings", "checkStreamCfg"} & set(
        document["missing"]
    )


def test_each_unreached_block_is_the_release_source_at_its_link(covered_run: tuple[int, Path]) -> None:
    _, run_dir = covered_run
    document = json.loads((run_dir / "coverage.json").read_text())
    source = module_source(RELEASE)
    assert document["unreached"]
    for block in document["unreached"]:
        lines = (source / block["path"]).read_text().splitlines()[block["start"] - 1 : block["end"]]
        assert block["source"] == "\n".join(lines[:SOURCE_LINES])
        assert block["url"] == (
            f"https://github.com/nats-io/nats-server/blob/v{RELEASE}/{block['path']}"
            f"#L{block['start']}-L{block['end']}"
        )


def test_per_function_figures_are_those_of_go_tool_cover(covered_run: tuple[int, Path]) -> None:
    _, run_dir = covered_run
    document = json.loads((run_dir / "coverage.json").read_text())
    listing = subprocess.run(
        ["go", "tool", "cover", f"-func={run_dir / 'coverage' / 'profile.txt'}"],
        cwd=module_source(RELEASE),
        env=go_environment(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    percents = {
        (match[1], int(match[2])): float(match[3])
        for match in re.finditer(r"/v2/(\S+\.go):(\d+):\s+\S+\s+([\d.]+)%", listing)
    }
    for function in document["functions"]:
        ours = round(100 * function["covered"] / function["statements"], 1) if function["statements"] else 0.0
        assert ours == percents[(function["path"], function["line"])], function


def test_the_report_of_the_run_shows_its_coverage(covered_run: tuple[int, Path], tmp_path: Path) -> None:
    _, run_dir = covered_run
    document = json.loads((run_dir / "coverage.json").read_text())
    build_report([run_dir], tmp_path, engine="duckdb")
    markdown = (tmp_path / "report.md").read_text()
    assert (
        f"{document['covered']:,} of {document['statements']:,} statements of the mapping surface" in markdown
    )
    (summary,) = json.loads((tmp_path / "summary.json").read_text())["coverage"]
    assert (summary["covered"], len(summary["unreached"])) == (
        document["covered"],
        len(document["unreached"]),
    )
    assert document["unreached"][0]["url"] in (tmp_path / "report.html").read_text()


def test_the_engine_oracle_writes_counters_merged_with_the_servers(tmp_path: Path) -> None:
    status = main(
        [
            *("coverage", "--server-version", RELEASE, "--family", "mapping", "--cases", "20"),
            *("--oracle", "engine", "--out", str(tmp_path / "runs")),
        ]
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert status == 0
    counters = run_dir / "coverage" / "counters"
    assert len(list(counters.glob("covmeta.*"))) == 1  # the server's (set mode)
    assert len(list((counters / ENGINE_COUNTERS).glob("covmeta.*"))) == 1  # the engine's (atomic)
    document = json.loads((run_dir / "coverage.json").read_text())
    assert document["engine"]
    assert document["counter_files"] >= 2
    profile = (run_dir / "coverage" / "profile.txt").read_text().splitlines()
    assert all(line.startswith(("mode:", "github.com/nats-io/nats-server/v2/")) for line in profile)
    build_report([run_dir], tmp_path / "out", engine="duckdb")
    assert "(the servers and the engine oracle)" in (tmp_path / "out" / "report.md").read_text()


def test_the_cover_engine_answers_the_blocks_its_questions_ran_and_keeps_its_counters(tmp_path: Path) -> None:
    """`coverage` of a -cover engine: a question's blocks are new once, asked again they run but are not
    new, another function's are; the counters it writes at exit still hold every question's blocks (the
    operation never clears them)."""
    question = TransformQuestion("a.*", "b.$1", "a.x")
    split = TransformQuestion("a.*", "b.{{split(1,-)}}", "a.x-y")
    counters = tmp_path / "counters"
    counters.mkdir()
    with AdapterProcess(
        engine_command(RELEASE, cover=True), environment={COVER_DIR: str(counters)}, close_grace=STOP_GRACE
    ) as engine:
        assert CoverageQuestion.op in engine.ops
        engine.ask([CoverageQuestion()])
        # asked a second time, the engine takes the transform from its cache: the third asking runs
        # what the second did
        first, second, again, other = (
            engine.ask([asked, CoverageQuestion()])[1] for asked in (question, question, question, split)
        )
    assert isinstance(first, Covered)
    assert isinstance(second, Covered)
    assert isinstance(again, Covered)
    assert isinstance(other, Covered)
    assert first.new > 0
    assert again.new == 0 < again.blocks
    assert other.new > 0
    assert other.reached == first.reached + second.new + other.new
    profile = tmp_path / "profile.txt"
    merge_counters(counters, module_source(RELEASE), profile)
    lines = profile.read_text().splitlines()
    once = [line for line in lines if "subject_transform.go" in line and line.endswith(" 1")]
    assert once  # blocks run once (by the split question) are counted at exit: nothing was cleared


@pytest.mark.parametrize("guided", [True, False])
def test_coverage_of_an_engine_target_draws_guided_unless_told(guided: bool, tmp_path: Path) -> None:
    status = main(
        [
            *("coverage", "--target", f"engine:{RELEASE}", "--cases", "600", "--out", str(tmp_path / "runs")),
            *(() if guided else ("--unguided",)),
        ]
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert status == 0
    document = json.loads((run_dir / "coverage.json").read_text())
    assert document["engine"]
    (shown,) = (item for item in document["files"] if item["path"] == "server/subject_transform.go")
    assert shown["covered"] > shown["statements"] // 2
    settings = json.loads((run_dir / "manifest.json").read_text())["settings"]
    assert settings["plan"]["guided"] is guided


def test_the_validation_servers_counters_survive_the_probes_that_crash_them(tmp_path: Path) -> None:
    """On 2.10 and later a message through an empty destination kills the server, and a server that panics
    writes no counters: before each probe a -cover server is stopped with SIGTERM and started again, so
    every accepted unit's process wrote its counters (the known cases alone crash it)."""
    status = main(
        [
            *("coverage", "--server-version", RELEASE, "--family", "validation"),
            *("--budget", "validation=40", "--out", str(tmp_path / "runs")),
        ]
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert status == 0
    document = json.loads((run_dir / "coverage.json").read_text())
    assert document["counter_files"] > 10
    (shown,) = (item for item in document["files"] if item["path"] == "server/subject_transform.go")
    assert shown["covered"] > 100
