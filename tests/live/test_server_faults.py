"""A campaign outlives its server's faults (a nemesis, as in Jepsen): a server paused past the deadline of
every wait, or killed with SIGKILL, mid-run. The campaign goes on after a restart, its cut-off cases are
`unknown` with the restart in their detail, and the manifest counts every row on disk."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.deadlines import DEADLINE_ENV
from fixtures.options import Target
from fixtures.session import RESTARTED
from records.writer import CASES
from reference.profiles import NEWEST, for_version

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 1.0
CASES_RUN = 40_000
"""A campaign long enough that the fault lands in its middle."""


def _server_of(campaign: subprocess.Popen[str], timeout: float = 30.0) -> int:
    """The pid of the nats-server the campaign runs from its configuration file, once there is one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                fields = dict(
                    line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
                )
                argv = (status.parent / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            running = fields.get("State", "").startswith(("R", "S"))
            if fields.get("PPid") == str(campaign.pid) and running and b"-c" in argv:
                return int(status.parent.name)
        time.sleep(0.05)
    raise AssertionError("the campaign runs no server")


def _recording(errors: list[str], timeout: float = 60.0) -> None:
    """Wait until the campaign's progress line counts cases."""
    deadline = time.monotonic() + timeout
    while not re.search(r"mapping: [1-9]\d* cases", "".join(errors)):
        assert time.monotonic() < deadline, "the campaign records no case"
        time.sleep(0.05)


def _campaign(target: Target, out: Path) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "suites", "campaign", "--server-version", target.spec.text,
        "--backend", "process", "--family", "mapping", "--cases", str(CASES_RUN), "--out", str(out),
    ]  # fmt: skip
    environment = {**os.environ, DEADLINE_ENV: str(DEADLINE)}
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _pause(pid: int, rng: random.Random) -> None:
    """SIGSTOP for several deadlines, then SIGCONT (unless the campaign has killed it to restart it)."""
    os.kill(pid, signal.SIGSTOP)
    time.sleep(DEADLINE * 6 + rng.uniform(0, DEADLINE))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


def _kill(pid: int, rng: random.Random) -> None:
    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("seed", [1])
@pytest.mark.parametrize("fault", [_pause, _kill], ids=["pause", "kill"])
def test_a_campaign_goes_on_after_its_server_hangs_or_dies(
    target: Target, tmp_path: Path, fault: object, seed: int
) -> None:
    if target.backend != "process":
        pytest.skip("the nemesis signals a server process")
    if for_version(target.spec.text) != NEWEST:
        pytest.skip(f"the nemesis runs on the newest release only ({NEWEST.name}), to keep CI short")
    assert callable(fault)
    rng = random.Random(seed)
    campaign = _campaign(target, tmp_path)
    stream = campaign.stderr
    assert stream is not None
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(iter(lambda: stream.read(1), "")))
    reader.start()
    try:
        _recording(errors)
        time.sleep(rng.uniform(0.2, 1.0))
        fault(_server_of(campaign), rng)
        campaign.wait(timeout=240)
    finally:
        campaign.kill()
        reader.join()
    stderr = "".join(errors)
    assert campaign.returncode in (0, 1), stderr[-3000:]
    assert "Traceback" not in stderr
    assert f"mapping: {RESTARTED}" in stderr
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    table = pq.read_table(run_dir / CASES, columns=["verdict", "detail"]).to_pylist()
    assert manifest["cases"] == manifest["written"] == len(table) >= CASES_RUN
    assert {restart["family"] for restart in manifest["restarts"]} == {"mapping"}
    # The unit the fault cut short may hold no case (a batch of refused mappings): its restart is in the
    # manifest; every case that says it was cut short is unknown.
    restarted = [row["verdict"] for row in table if row["detail"].startswith(RESTARTED)]
    assert set(restarted) <= {"unknown"}
