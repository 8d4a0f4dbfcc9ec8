"""`nats-conformance coverage` on the pinned 2.14.5: its -cover build (cached beside the ordinary build),
a small campaign of the mapping family whose servers write their counters when stopped with SIGTERM,
the merge with `go tool covdata`, and the report's section read from the run directory; with `--oracle
engine`, the release's -cover engine too, asked to exit so that it writes its counters.

Nightly: a cold -cover build of a release took 75 s to 2 min on the shared 2 cores (35 s of CPU), more
than a change's CI can spend; CI checks the merge and the section with a tiny -cover program
(tests/reports/test_coverage.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from fixtures.cover import cover_binary, module_source
from fixtures.provision import cached_binary, go_environment
from records.coverage import SOURCE_LINES
from reports.build import build_report
from suites.__main__ import main

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
    assert len(list((run_dir / "coverage" / "counters").glob("covmeta.*"))) == 2  # the server and the engine
    document = json.loads((run_dir / "coverage.json").read_text())
    assert document["engine"]
    assert document["counter_files"] >= 2
    profile = (run_dir / "coverage" / "profile.txt").read_text().splitlines()
    assert all(line.startswith(("mode:", "github.com/nats-io/nats-server/v2/")) for line in profile)
    build_report([run_dir], tmp_path / "out", engine="duckdb")
    assert "(the servers and the engine oracle)" in (tmp_path / "out" / "report.md").read_text()
