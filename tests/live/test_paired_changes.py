"""Paired evidence on real servers (suites.pairing): two campaigns of one release with different seeds
differ class by class only by what each drew, and the paired gate finds no change; between two releases,
each claimed change is the same case with another outcome, which its replay line shows again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance.records.pairs import CHANGED, WITHIN, read_pairs
from nats_conformance.reports.__main__ import main as reports_main
from nats_conformance.suites.__main__ import main as suites_main

pytestmark = pytest.mark.live

FAMILIES = ("validation", "partition", "republish")
BUDGETS = ("--budget", "validation=150", "--budget", "partition=60", "--budget", "republish=40")


def campaign(out: Path, seed: int, *versions: str) -> Path:
    """A small campaign of `FAMILIES` on `versions` into a new run directory under `out`."""
    before = set(out.glob("*")) if out.exists() else set()
    targets = [part for version in versions for part in ("--target", version)]
    families = [part for name in FAMILIES for part in ("--family", name)]
    status = suites_main(
        [
            "campaign",
            *targets,
            *families,
            *BUDGETS,
            "--seed",
            str(seed),
            "--out",
            str(out),
            "--no-known-cases",
        ]
    )
    assert status in (0, 1)
    (run_dir,) = set(out.glob("*")) - before
    return run_dir


def test_two_seeds_of_one_release_show_no_paired_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = campaign(tmp_path, 1, "2.14.5"), campaign(tmp_path, 2, "2.14.5")
    capsys.readouterr()
    reports_main(["gate", str(second), "--against", str(first)])
    unpaired = capsys.readouterr().out.splitlines()
    # the draws differ: class by class, the gate sees moves that are sampling alone
    assert unpaired[-1].startswith("unpaired: ")
    assert " 0 fixed, 0 other changes" not in unpaired[0], unpaired[0]
    assert suites_main(["pair", str(second), "--with", str(first)]) == 0
    pairs = read_pairs(second).of(str(first.resolve()))
    assert pairs, "no one-sided class was replayed"
    assert [pair.text() for pair in pairs if pair.outcome == CHANGED] == []
    capsys.readouterr()
    assert reports_main(["gate", str(second), "--against", str(first)]) == 0
    verdict = capsys.readouterr().out.splitlines()[0]
    assert verdict.startswith("gate passed: 0 regressions, 0 fixed, 0 other changes"), verdict
    assert verdict.endswith("not drawn on both"), verdict


def test_changes_between_releases_replay_as_claimed(tmp_path: Path) -> None:
    run_dir = campaign(tmp_path, 3, "2.9.25", "2.14.5")
    paired = read_pairs(run_dir).of(WITHIN)
    assert paired is not None
    changed = [pair for pair in paired if pair.outcome == CHANGED]
    assert changed, "2.9.25 and 2.14.5 differ in left/right and partition rules; no change was paired"
    assert reports_main(["build", str(run_dir), "--out", str(tmp_path / "report"), "--engine", "duckdb"]) == 0
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["changes_paired"]
    claimed = {(c["case_class"], c["evidence"]) for c in summary["changes"]}
    assert claimed, "the report lists no change"
    texts = {pair.text() for pair in changed}
    for case_class, evidence in claimed:
        assert evidence in texts or evidence.startswith("Fisher's exact test"), (case_class, evidence)
    # the replay line of a claimed change shows each side's outcome again
    pair = changed[0]
    for version in (pair.seen_on, pair.replayed_on):
        line = pair.replay_line(run_dir).split("; ")[(pair.seen_on, pair.replayed_on).index(version)]
        arguments = line.split()[2:]
        replayed = subprocess.run(
            [sys.executable, "-m", "nats_conformance.suites", "replay", *arguments],
            capture_output=True,
            text=True,
            check=False,
        )
        shown = pair.showing(version)
        if shown:
            assert (replayed.returncode, f":{shown}\n" in replayed.stdout) == (1, True), replayed.stdout
        else:
            assert replayed.returncode == 0, replayed.stdout + replayed.stderr
