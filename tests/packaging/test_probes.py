"""The probes harness (`python -m tests.probes`): its quick bad-input probes pass through the harness as
the nightly workflow runs them all (one line per probe, probes.json, exit 0), and the docs page lists
every probe the harness has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.probes.harness import load, table

ROOT = Path(__file__).resolve().parents[2]
QUICK = [
    "campaign-unknown-family",
    "campaign-bad-release-spec",
    "campaign-garbled-expectations",
    "sweep-bad-since",
    "replay-garbled-file",
    "replay-null-source",
    "report-not-a-run",
    "gate-garbled-baseline",
    "baseline-not-a-run",
    "bisect-garbled-case-file",
    "expectations-garbled-toml",
    "report-part-deleted",
    "readers-part-garbled",
    "campaign-junit-unwritable",
    "site-serve-bad-port",
]
"""Bad-input probes of every command that start no server (about 2 s each)."""


def probes(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.probes", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_quick_bad_input_probes_pass_through_the_harness(tmp_path: Path) -> None:
    done = probes("--only", ",".join(QUICK), "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split()[:2] for line in done.stdout.splitlines()[: len(QUICK)]] == [
        ["PASS", name] for name in QUICK
    ]
    results = json.loads((tmp_path / "probes.json").read_text())["results"]
    assert [(r["id"], r["status"]) for r in results] == [(name, "pass") for name in QUICK]
    assert (tmp_path / "probes.txt").read_text().startswith(f"{len(QUICK)} probes in ")


def test_the_docs_page_lists_the_57_probes_as_the_harness_has_them() -> None:
    done = probes("--list")
    assert done.returncode == 0, done.stderr
    listed = [line.split(" ", 1)[0] for line in done.stdout.splitlines()]
    assert len(listed) == len(set(listed)) == 57
    load()
    assert table() in (ROOT / "docs" / "guide" / "probes.md").read_text()
