"""Known cases: a campaign runs the expectations' case files first, so a listed finding whose draw is
rare (a `$` index past 64 bits in an import's `to`) is confirmed by every run on a release it covers,
and `--no-known-cases` leaves every unit to the draws."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.fixtures.options import Target
from nats_conformance.records.expectations import load_expectations
from nats_conformance.records.writer import CASES
from nats_conformance.suites.__main__ import main

pytestmark = pytest.mark.live
OVERFLOWS = {"stream-import-overflowing-index-crashes", "service-import-overflowing-index-wrong-subject"}


def expectations_shown(
    target: Target, out: Path, capsys: pytest.CaptureFixture[str], *options: str
) -> tuple[set[str], str]:
    """The expectation ids on the records of a one-case import campaign, and what it printed."""
    argv = ["campaign", "--server-version", target.spec.text, "--backend", target.backend]
    status = main([*argv, "--family", "import", "--budget", "import=1", "--out", str(out), *options])
    assert status == 0
    (run_dir,) = out.iterdir()
    shown = set(pq.read_table(run_dir / CASES, columns=["expectation"]).column("expectation").to_pylist())
    return shown - {""}, capsys.readouterr().out


def test_the_known_cases_run_first_and_confirm_their_findings(
    target: Target, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if target.backend != "process":
        pytest.skip("the known cases run the same way on every backend; one is enough here")
    assert {entry.id for entry in load_expectations().entries if entry.case} >= OVERFLOWS
    shown, printed = expectations_shown(target, tmp_path / "known", capsys)
    assert shown >= OVERFLOWS
    assert "known cases confirmed" in printed
    assert "stale expectation: stream-import-overflowing" not in printed
    drawn, printed = expectations_shown(target, tmp_path / "drawn", capsys, "--no-known-cases")
    assert not drawn & OVERFLOWS
    assert "known cases confirmed" not in printed
