"""What a CI job reads from a campaign: JUnit XML (`--junit-xml`), and `replay DIR` over the run's
divergences folder. One real campaign on 2.9 with no expectations file entries, so that the release's
known divergences are unexpected ones."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nats_conformance.suites.__main__ import main

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def diverging_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, Path]:
    """(exit status, run directory, JUnit file) of validation and stream-transform on 2.9.25."""
    folder = tmp_path_factory.mktemp("ci")
    (folder / "none.toml").write_text("")
    junit = folder / "junit.xml"
    status = main(
        [
            *("campaign", "--target", "2.9", "--family", "validation", "--family", "stream-transform"),
            *("--budget", "validation=30", "--budget", "stream-transform=5"),
            *("--expectations", str(folder / "none.toml"), "--out", str(folder / "runs")),
            *("--junit-xml", str(junit)),
        ]
    )
    (run_dir,) = (folder / "runs").iterdir()
    return status, run_dir, junit


def test_junit_xml_has_a_testcase_per_divergence_class_and_per_family_and_target(
    diverging_run: tuple[int, Path, Path],
) -> None:
    status, run_dir, junit = diverging_run
    assert status == 1
    manifest = json.loads((run_dir / "manifest.json").read_text())
    case_files = sorted((run_dir / "divergences").glob("*.json"))
    assert case_files
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    classes, families = root.findall("testsuite")
    assert classes.get("name") == "divergence classes"
    found = classes.findall("testcase")
    assert len(found) == len(case_files) == int(classes.get("tests", "")) == int(classes.get("failures", ""))
    named = {json.loads(path.read_text())["case_class"] for path in case_files}
    assert {testcase.get("name") for testcase in found} == named
    for testcase in found:
        failure = testcase.find("failure")
        assert failure is not None
        assert testcase.get("classname") == "nats-server 2.9.25"
        assert failure.get("message") == testcase.get("name")
        assert "  replay:      nats-conformance replay --server-version 2.9.25 " in (failure.text or "")
    by_family = {testcase.get("name"): testcase for testcase in families.findall("testcase")}
    assert set(by_family) == {"validation", "stream-transform"}
    assert {testcase.get("classname") for testcase in by_family.values()} == {"process-2.9.25"}
    failure = by_family["validation"].find("failure")
    assert failure is not None
    diverged = manifest["verdicts"]["diverge"]
    assert failure.get("message") == f"{diverged} unexpected divergences in {manifest['cases']} cases"
    skipped = by_family["stream-transform"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "stream subject transforms need nats-server 2.10.0 or later"
    assert (families.get("tests"), families.get("failures"), families.get("skipped")) == ("2", "1", "1")
    assert root.get("tests") == str(len(case_files) + 2)
    assert root.get("failures") == str(len(case_files) + 1)


def test_replay_of_a_divergences_folder_says_which_cases_still_fail(
    diverging_run: tuple[int, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no expectations every case still fails (exit 1); with the repository's, each is expected now
    (fixed); a file that cannot be read is unknown (exit 3 when nothing still fails)."""
    _, run_dir, _ = diverging_run
    folder = tmp_path / "divergences"
    shutil.copytree(run_dir / "divergences", folder)
    files = sorted(path.name for path in folder.glob("*.json"))
    empty = run_dir.parent.parent / "none.toml"

    assert main(["replay", str(run_dir), "--expectations", str(empty)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("still failing: ")] == [
        f"still failing: {name}" for name in files
    ]
    assert out[-1] == f"{len(files)} case files: 0 fixed, {len(files)} still failing, 0 unknown"

    (folder / "zz-broken.json").write_text("{")
    assert main(["replay", str(folder)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[:-2] == [f"fixed: {name}" for name in files]
    assert out[-2].startswith("unknown: zz-broken.json: ")
    assert out[-1] == f"{len(files) + 1} case files: {len(files)} fixed, 0 still failing, 1 unknown"
