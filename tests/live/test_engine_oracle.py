"""The engine oracle (`--oracle engine`): a live campaign whose mapping and validation cases are also
asked of the transform engine of the server's release, and the report's three-way diagnosis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.reference.matching import matching_subject
from nats_conformance.reports.report import DIAGNOSES
from nats_conformance.suites.oracle import ORACLE_CLASSES, three_way

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2.14.5"
AGREEING = {"all-agree", "engine-alone", "engine-unanswered"}
DIVERGING = {value for value, _ in DIAGNOSES}


@pytest.mark.parametrize(
    ("reference", "server", "engine", "value"),
    [
        ("a", "a", "a", "all-agree"),
        ("a", "b", "b", "reference-alone"),
        ("a", "b", "a", "target-alone"),
        ("a", "b", "c", "all-differ"),
        ("a", "a", "c", "engine-alone"),
        ("a", "b", None, "engine-unanswered"),
    ],
)
def test_three_way_names_which_answers_agree(
    reference: str, server: str, engine: str | None, value: str
) -> None:
    assert three_way(reference, server, engine) == value
    assert value in ORACLE_CLASSES


def test_the_sample_subject_of_a_source_matches_it() -> None:
    assert matching_subject("a.*.b.>") == "a.o.b.o"


@pytest.mark.live
def test_a_campaign_with_the_engine_oracle_records_and_reports_three_way(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    campaign = subprocess.run(
        [
            sys.executable,
            "-m",
            "nats_conformance.suites",
            "campaign",
            "--server-version",
            RELEASE,
            "--family",
            "validation",
            "--family",
            "mapping",
            "--budget",
            "validation=120",
            "--cases",
            "1500",
            "--oracle",
            "engine",
            "--out",
            str(runs),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert campaign.returncode in (0, 1), campaign.stderr[-2000:]
    (run_dir,) = runs.iterdir()
    cases = pq.read_table(run_dir / "cases").to_pylist()
    judged = [case for case in cases if case["verdict"] != "unknown"]
    assert judged
    for case in judged:
        allowed = AGREEING if case["verdict"] == "agree" else DIVERGING
        assert case["oracle"] in allowed, case
    validation = [case for case in judged if case["feature"] == "validation"]
    # The engine is the server's own code: it takes a mapping iff the server does, all but rarely.
    path = [case for case in validation if case["oracle"] in ("target-alone", "all-differ", "engine-alone")]
    assert len(path) <= len(validation) // 20, path[:3]

    out = tmp_path / "report"
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "nats_conformance.reports",
            "build",
            str(run_dir),
            "--engine",
            "duckdb",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    asked = [item for item in summary["divergence_classes"] if item["oracle"]]
    diverging = [case for case in judged if case["verdict"] != "agree"]
    assert len(asked) == len({(c["feature"], c["functions"], c["difference"]) for c in diverging})
    assert sum(sum(item["oracle"].values()) for item in asked) == len(diverging)
    assert ("### Three-way diagnosis" in (out / "report.md").read_text()) == bool(diverging)


@pytest.mark.live
def test_an_adapter_against_the_engine_of_a_release(tmp_path: Path) -> None:
    """`--against engine:2.14.5`: every answered question of the planted-bug adapter is also asked of the
    real engine; its bugs are differences the engine does not share (the engine agrees with the
    reference), and the three-way value of an agreeing case never names a divergence."""
    runs = tmp_path / "runs"
    adapter = f"adapter:{sys.executable} {ROOT / 'examples' / 'adapters' / 'planted_bugs.py'}"
    command = [
        sys.executable,
        "-m",
        "nats_conformance.suites",
        "campaign",
        "--target",
        adapter,
        "--cases",
        "2000",
    ]
    result = subprocess.run(
        [*command, "--against", f"engine:{RELEASE}", "--out", str(runs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    (run_dir,) = runs.iterdir()
    cases = [case for case in pq.read_table(run_dir / "cases").to_pylist() if case["verdict"] != "unknown"]
    assert all(case["oracle"] for case in cases)
    for case in cases:
        allowed = AGREEING if case["verdict"] == "agree" else DIVERGING
        assert case["oracle"] in allowed, case
    planted = [case for case in cases if case["verdict"] == "diverge"]
    assert planted
    assert sum(case["oracle"] == "target-alone" for case in planted) > len(planted) / 2


def test_against_takes_an_engine_target() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nats_conformance.suites", "campaign", "--against", "2.14.5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("nats-conformance: error: argument --against: --against takes engine:RELEASE")
    ), result.stderr
