"""Debian's nats-server package as a target (issue 58): fetched with apt-get download and unpacked into
the cache (never installed), run on 127.0.0.1, judged by the rules of the release it packages, and
recorded as a distribution build in the records, the report and the replay lines."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from nats_conformance.fixtures.distribution import build_tag, debian_versions
from nats_conformance.fixtures.errors import ProvisionError, VersionSpecError
from nats_conformance.fixtures.provision import parse_version_spec
from nats_conformance.reference.versions import build_note
from nats_conformance.reports.build import build_report
from nats_conformance.suites.__main__ import main

pytestmark = pytest.mark.live


def apt_holds_nats_server() -> bool:
    try:
        debian_versions()
    except ProvisionError:
        return False
    return shutil.which("dpkg-deb") is not None


def test_a_debian_version_names_the_package_build() -> None:
    assert build_tag("2.9.10-1+b3") == "debian.1.b3"
    assert parse_version_spec("debian").distribution == ()
    assert parse_version_spec("2.9.10+debian.1.b3").distribution == ("debian", "1", "b3")
    assert parse_version_spec("2.9.10").distribution is None
    assert build_note("2.9.10+debian.1.b3") == "distribution build (Debian)"
    assert build_note("2.9.10") == ""
    with pytest.raises(VersionSpecError, match="'debian'"):
        parse_version_spec("debian2")


@pytest.mark.skipif(not apt_holds_nats_server(), reason="apt's lists hold no nats-server (apt-get update)")
def test_a_small_plan_on_debians_nats_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    argv = ["campaign", "--target", "debian", "--family", "validation", "--family", "mapping"]
    argv += ["--budget", "validation=100", "--cases", "300", "--out", str(out)]
    assert main(argv) == 0
    (run,) = out.iterdir()
    manifest = json.loads((run / "manifest.json").read_text())
    (settings,) = manifest["settings"]["profiles"].values()
    version = settings["server_version"]
    assert version.startswith("2.9.10+debian.")  # bookworm's 2.9.10-1+b3
    assert settings["profile"] == "2.9.10"
    assert manifest["verdicts"]["agree"] > 300
    assert manifest["verdicts"]["diverge"] == 0
    report = build_report([out], tmp_path / "report", engine="duckdb")
    summary = json.loads(report.summary.read_text())
    assert summary["distribution_builds"] == {version: "distribution build (Debian)"}
    assert f"{version}:** a distribution build (Debian)" in report.markdown.read_text()
    # A listed divergence's replay line names the same package build again, and shows it again (replay
    # judges one case without the expectations: exit 1).
    listed = next(c for c in summary["divergence_classes"] if c["case_class"].startswith("validation:"))
    replay = shlex.split(listed["replay"])
    assert replay[replay.index("--server-version") + 1] == version
    capsys.readouterr()
    assert main(replay[1:]) == 1
    assert f"diverge on nats-server {version} (process): {listed['case_class']}" in capsys.readouterr().out
