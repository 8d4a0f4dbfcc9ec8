"""Servers of releases the reference has no table entry for: judged by the nearest known release's rules
(or `--profile`), which the campaign states on stderr and records in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.records.writer import CASES
from nats_conformance.reference import profiles
from nats_conformance.reference.versions import Version
from nats_conformance.suites.__main__ import main

pytestmark = pytest.mark.live


def campaign(out: Path, *options: str) -> int:
    budget = ("--family", "validation", "--budget", "validation=20")
    return main(["campaign", *options, *budget, "--out", str(out)])


def manifest_of(out: Path) -> dict[str, object]:
    (run_dir,) = out.iterdir()
    manifest: dict[str, object] = json.loads((run_dir / "manifest.json").read_text())
    return manifest


@pytest.mark.slow
def test_a_new_patch_is_judged_by_the_nearest_known_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the day 2.14.6 came out, before the reference had its rules: the rules stop at 2.14.5."""
    lines = tuple(line for line in profiles.RELEASE_LINES if line.newest < Version(2, 14, 0))
    lines += (profiles.ReleaseLine(Version(2, 14, 5)),)
    monkeypatch.setattr(profiles, "RELEASE_LINES", lines)
    monkeypatch.setattr(profiles, "_LINES", {line.name: line for line in lines})
    status = campaign(tmp_path, "--target", "2.14.6")
    stderr = capsys.readouterr().err
    assert status == 0, stderr
    assert (
        "process-2.14.6: nats-server 2.14.6 judged by the rules of 2.14.5 (the nearest known release; "
        "choose with --profile RELEASE)\n"
    ) in stderr
    manifest = manifest_of(tmp_path)
    settings = manifest["settings"]
    assert isinstance(settings, dict)
    assert settings["profiles"] == {"process-2.14.6": {"server_version": "2.14.6", "profile": "2.14.5"}}
    (run_dir,) = tmp_path.iterdir()
    assert set(pq.read_table(run_dir / CASES, columns=["server_version"]).column(0).to_pylist()) == {"2.14.6"}


def test_profile_names_the_rules_a_server_is_judged_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = campaign(tmp_path, "--target", "2.14.5", "--profile", "2.12")
    stderr = capsys.readouterr().err
    assert status == 0, stderr
    assert "process-2.14.5: nats-server 2.14.5 judged by the rules of 2.12.15 (--profile)\n" in stderr
    settings = manifest_of(tmp_path)["settings"]
    assert isinstance(settings, dict)
    assert settings["profiles"] == {"process-2.14.5": {"server_version": "2.14.5", "profile": "2.12.15"}}


def test_a_server_takes_one_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert campaign(tmp_path, "--target", "2.14", "--profile", "2.12", "--profile", "2.10") == 2
    assert capsys.readouterr().err == (
        "nats-conformance: error: --profile: a server is judged by one release's rules; give it once\n"
    )
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
