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
from fixtures.provision import resolve_binary
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


FIRST_START = {
    "dies": 'kill -9 "$$"',
    "hangs": "exec sleep 60",
}
"""What a wrapper of the target's binary does at its first start instead of running it."""


def _wrapper(tmp_path: Path, binary: Path, first_start: str) -> Path:
    """A `nats-server` that does `first_start` the first time it runs, and is `binary` after that."""
    wrapper = tmp_path / "bin" / "nats-server"
    wrapper.parent.mkdir()
    marker = tmp_path / "bin" / "started"
    wrapper.write_text(
        f'#!/bin/sh\nif [ ! -e "{marker}" ]; then : > "{marker}"; {first_start}; fi\nexec "{binary}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def _short_campaign(server: Path, out: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "suites", "campaign", "--server-version", str(server), "--backend", "process",
        "--family", "mapping", "--cases", "300", "--out", str(out),
    ]  # fmt: skip
    environment = {**os.environ, DEADLINE_ENV: str(START_DEADLINE)}
    return subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=180, check=False
    )


START_DEADLINE = 3.0
"""The deadline of a start in the first-start tests: a hung start is given up on after it."""


@pytest.mark.parametrize("first_start", list(FIRST_START))
def test_a_server_that_dies_or_hangs_in_its_first_start_is_started_again(
    target: Target, tmp_path: Path, first_start: str
) -> None:
    if target.backend != "process" or for_version(target.spec.text) != NEWEST:
        pytest.skip(f"a wrapper of the binary runs on the process backend, newest release ({NEWEST.name})")
    binary = resolve_binary(target.spec)
    out = tmp_path / "runs"
    finished = _short_campaign(_wrapper(tmp_path, binary, FIRST_START[first_start]), out)
    assert finished.returncode in (0, 1), finished.stderr[-3000:]
    assert "Traceback" not in finished.stderr
    (run_dir,) = out.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (restart,) = manifest["restarts"]
    assert restart["family"] == "mapping"
    assert restart["reason"].startswith(RESTARTED)
    assert restart["reason"].endswith("(during its start)")
    assert manifest["cases"] == manifest["written"] >= 300
    assert f"mapping: {restart['reason']}" in finished.stderr


def test_a_release_that_cannot_start_is_one_line_and_exit_2(target: Target, tmp_path: Path) -> None:
    if target.backend != "process" or for_version(target.spec.text) != NEWEST:
        pytest.skip(f"a broken binary is tried on the process backend once ({NEWEST.name})")
    broken = tmp_path / "bin" / "nats-server"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'nats-server: broken build' >&2\nexit 1\n")
    broken.chmod(0o755)
    out = tmp_path / "runs"
    finished = _short_campaign(broken, out)
    assert finished.returncode == 2, finished.stderr[-3000:]
    assert finished.stderr.endswith("nats-server: broken build (3 starts failed)\n")
    assert finished.stderr.count("\n") == 1
    assert not out.exists() or not list(out.iterdir())
