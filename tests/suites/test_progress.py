"""A campaign's progress: plain lines without `\\r` on a pipe, a tqdm bar with the campaign's total and ETA on
a terminal (a pty); the total follows what the campaign really runs (suites/engine/progress.py)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from pathlib import Path

import pytest

from nats_conformance.fixtures.provision import resolve_binary
from nats_conformance.suites.engine.progress import SECONDS_ENV, Progress, clock

ROOT = Path(__file__).resolve().parents[2]
# 2 families on one server: mapping 100 cases, matching 10 units (several cases each).
CAMPAIGN = ("campaign", "--family", "mapping", "--family", "matching", "--cases", "100", "--budget")
PLANNED = 100 + 10


def test_the_total_counts_what_each_family_ran_instead_of_its_budget() -> None:
    stream = io.StringIO()
    progress = Progress(total=100 + 50 + 30, stream=stream)
    progress.begin("2.14.5 mapping:", 100)
    progress.add(Counter(agree=60, unknown=2))
    assert (progress.done, progress.planned) == (62, 180)
    progress.add(Counter(agree=48))
    assert (progress.done, progress.planned) == (110, 190)  # past its budget: what it has run counts
    progress.end()
    progress.begin("2.14.5 streams:", 50)
    progress.end(skipped=True)  # a skipped family's budget leaves the total
    assert (progress.done, progress.planned) == (110, 140)
    progress.begin("2.14.5 matching:", 30)
    progress.add(Counter(agree=20, diverge=1))
    progress.end()  # short of its budget: the total is what ran
    assert (progress.done, progress.planned) == (131, 131)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert len(lines) == 2  # one per family that ran; nothing for the skipped one
    assert lines[0].startswith("2.14.5 mapping: 110 cases, agree=108 diverge=0 expected=0 unknown=2; ")
    assert "campaign 110/190 cases (58%)" in lines[0]  # the first family's line: the total it knows
    assert "campaign 131/131 cases (100%)" in lines[1]
    assert re.search(r", ETA \d+:\d\d$", lines[1])


def test_plain_lines_come_at_most_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setenv(SECONDS_ENV, "3600")
    progress = Progress(total=1000, stream=stream)
    progress.begin("x:", 1000)
    for _ in range(100):
        progress.add(Counter(agree=1))
    assert stream.getvalue() == ""
    monkeypatch.setenv(SECONDS_ENV, "0")
    progress.add(Counter(agree=1))
    assert stream.getvalue().startswith("x: 101 cases")


def test_clock() -> None:
    assert (clock(0), clock(65), clock(3725)) == ("0:00", "1:05", "1:02:05")


def _campaign(tmp_path: Path) -> list[str]:
    resolve_binary("2.14.5")  # built, or found in the cache, before the campaign's clock starts
    return [
        *(sys.executable, "-m", "nats_conformance", *CAMPAIGN, "matching=10"),
        *("--server-version", "2.14.5", "--out", str(tmp_path / "runs"), "--max-unknown", "1"),
    ]


@pytest.mark.live
def test_a_campaign_writes_plain_lines_to_a_pipe(tmp_path: Path) -> None:
    result = subprocess.run(
        _campaign(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode in {0, 1}, result.stderr
    assert "\r" not in result.stderr
    mapping, matching = (line for line in result.stderr.splitlines() if " cases, agree=" in line)
    assert mapping.startswith(f"process-2.14.5 mapping: {_cases(mapping)} cases, ")
    assert f"campaign {_cases(mapping)}/" in mapping
    total = _cases(mapping) + _cases(matching)
    assert f"campaign {total}/{total} cases (100%)" in matching  # the total ends as what ran
    assert re.search(r", ETA \d+:\d\d$", matching)


def _cases(line: str) -> int:
    return int(line.split(": ", 1)[1].split(" ", 1)[0])


@pytest.mark.live
def test_a_campaign_on_a_terminal_shows_a_bar_with_the_total_and_an_eta(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    campaign = subprocess.Popen(
        _campaign(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([controller], [], [], 0.5)[0]:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the campaign closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        elif campaign.poll() is not None:
            break
    os.close(controller)
    assert campaign.wait(timeout=30) in {0, 1}
    text = shown.decode(errors="replace")
    frames = [frame for frame in re.split(r"[\r\n]", text) if "|" in frame and "ETA" in frame]
    assert frames, text[-2000:]
    # the plan's total when the family begins (known cases then add theirs), and an ETA once it runs
    totals = re.findall(r"process-2\.14\.5 mapping:\s+\d+%\|.*?\| \d+/(\d+) cases", text)
    assert totals[0] == str(PLANNED), totals
    assert any(
        re.search(r"process-2\.14\.5 mapping:\s+\d+%\|.*\| \d+/\d+ cases, .*ETA \d+:\d\d", frame)
        for frame in frames
    ), frames[:5]
    # each family still ends with its line, as off a terminal
    assert re.search(r"process-2\.14\.5 matching: \d+ cases, agree=", text)
