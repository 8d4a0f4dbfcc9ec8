"""`--judge-by engine`: a third party that follows nats-server 2.14.5 (every answer from the release's own
engine) conforms to it, exit 4, in every output; by the documents the same run diverges, exit 1; an
adapter correct by the documents agrees, exit 0 (README, "Exit statuses")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance.reports.present import CONFORMS_COLOUR
from nats_conformance.suites.__main__ import main

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2.14.5"
FOLLOWS = f"adapter:{sys.executable} {ROOT / 'examples' / 'adapters' / 'follows_engine.py'} {RELEASE}"
CORRECT = f"adapter:{sys.executable} {ROOT / 'examples' / 'adapters' / 'correct.py'}"


def campaign(target: str, runs: Path, *options: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    command = [
        sys.executable,
        "-m",
        "nats_conformance.suites",
        "campaign",
        "--target",
        target,
        "--cases",
        "500",
    ]
    command += ["--against", f"engine:{RELEASE}", "--profile", RELEASE, "--out", str(runs), *options]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    (run_dir,) = runs.iterdir()
    return result, run_dir


def test_an_adapter_following_the_engine_conforms_to_its_release(tmp_path: Path) -> None:
    result, run_dir = campaign(FOLLOWS, tmp_path / "runs")
    assert result.returncode == 4, result.stderr[-2000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["settings"]["plan"]["judge_by"] == "engine"  # the default with --against
    (judgement,) = manifest["judgements"]
    assert judgement["verdict"] == f"conforms to nats-server {RELEASE}"
    assert judgement["diverge"] == manifest["verdicts"]["diverge"] == sum(judgement["shared"].values()) > 0
    verdict = f"verdict: example-follows-engine-adapter@{RELEASE} conforms to nats-server {RELEASE}"
    assert verdict in result.stdout
    for name, cases in judgement["shared"].items():
        assert f"the documents differ: {name} ({cases} case" in result.stdout

    out = tmp_path / "report"
    command = [
        sys.executable,
        "-m",
        "nats_conformance.reports",
        "build",
        str(run_dir),
        "--engine",
        "duckdb",
        "--out",
        str(out),
    ]
    report = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert report.returncode == 0, report.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["conforms_to"] == [RELEASE]
    assert summary["banner"].startswith(f"conforms to nats-server {RELEASE}: ")
    assert summary["runs"][0]["judgements"] == [judgement]
    markdown = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert f"**🟦 {summary['banner']}**" in markdown
    assert f'<p class=banner style="background:{CONFORMS_COLOUR}">' in html
    for name in judgement["shared"]:
        assert f"| `{name}` | {judgement['shared'][name]} |" in markdown
        assert f"<code>{name.replace('>', '&gt;')}</code>" in html


def test_by_the_documents_the_same_adapter_diverges(tmp_path: Path) -> None:
    result, run_dir = campaign(FOLLOWS, tmp_path / "runs", "--judge-by", "documents")
    assert result.returncode == 1, result.stderr[-2000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["judgements"] == []
    assert manifest["verdicts"]["diverge"] > 0
    assert "verdict:" not in result.stdout


def test_an_adapter_correct_by_the_documents_agrees(tmp_path: Path) -> None:
    result, run_dir = campaign(CORRECT, tmp_path / "runs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "verdict: example-correct-adapter@2.14.5 agrees with the documents" in result.stdout
    (judgement,) = json.loads((run_dir / "manifest.json").read_text())["judgements"]
    assert judgement["diverge"] == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--target", CORRECT, "--judge-by", "engine"], "--judge-by engine needs --against engine:RELEASE"),
        (
            ["--target", "2.14.5", "--against", f"engine:{RELEASE}", "--judge-by", "engine"],
            "--judge-by engine judges adapter targets",
        ),
        (["--target", CORRECT, "--judge-by", "release"], "argument --judge-by: invalid choice"),
    ],
)
def test_bad_combinations_are_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert main(["campaign", *options, "--out", str(tmp_path / "runs")]) == 2
    error = capsys.readouterr().err
    assert error.strip().splitlines() == [error.strip()]
    assert error.startswith(f"nats-conformance: error: {message}"), error
    assert not (tmp_path / "runs").exists()
