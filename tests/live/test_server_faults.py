"""A campaign outlives its server's faults (a nemesis, as in Jepsen): at a seeded moment of a run, the
target's server is paused past the deadline of every wait, killed with SIGKILL, restarted, or has its
connections dropped, on the process and the container backends. The campaign goes on (restarting the
server where it must), every case it could not observe is `unknown` (never `agree`), the manifest counts
every row on disk, the exit status is a campaign's, and nothing of the run is left running. A server
that dies or hangs in its very first start is started again; one that can never start is one line.
Every change's CI runs one seeded moment of the pause and of the kill on the process backend (`CI_FAULTS`:
a server that hangs past every deadline, one that dies); the scheduled run (`-m nightly`) four seeded
moments of every fault on both backends (a container's faults cost a minute each)."""

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from nats_conformance.fixtures.deadlines import DEADLINE_ENV
from nats_conformance.fixtures.docker import process_daemon
from nats_conformance.fixtures.options import RunConfig, Target
from nats_conformance.fixtures.provision import resolve_binary
from nats_conformance.fixtures.servers.container import CONFIG_DIR
from nats_conformance.fixtures.session import RESTARTED
from nats_conformance.records.counts import part_counts
from nats_conformance.records.owners import process_identity
from nats_conformance.records.unknowns import REASONS, SERVER_DIED, UNLISTED, reason_stated, unstated
from nats_conformance.records.writer import CASES
from nats_conformance.reference.cli import DEFAULT_MAX_UNKNOWN, exit_status, too_many_unknown
from nats_conformance.reference.transform import NOT_DELIVERED
from nats_conformance.suites.engine.progress import SECONDS_ENV
from tests.live.campaigns import arguments, containers_of, newest_of_session

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 1.0
CASES_RUN = 20_000
"""A campaign long enough that the fault lands in its middle: it lands once the campaign shows at most
`LATEST_FAULT` cases, which leaves thousands to run however fast the machine is."""
LATEST_FAULT = 2_000


@dataclass(frozen=True, slots=True)
class Server:
    """The server a campaign runs: its host pid, the work directory of its configuration, and its
    container when it runs in one."""

    pid: int
    workdir: Path
    container: Any = None


def _process_server(campaign: subprocess.Popen[str]) -> Server | None:
    """The nats-server the campaign runs as its child, if it runs one now."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        argv = arguments(int(status.parent.name))
        running = fields.get("State", "").startswith(("R", "S"))
        if fields.get("PPid") == str(campaign.pid) and running and "-c" in argv:
            return Server(int(status.parent.name), Path(argv[argv.index("-c") + 1]).parent)
    return None


def _container_server(campaign: subprocess.Popen[str]) -> Server | None:
    """The nats-server the campaign runs in a container, if one runs now."""
    for container in containers_of(process_identity(campaign.pid)):
        state = container.attrs["State"]
        if state.get("Running") and not state.get("Paused") and state.get("Pid"):
            (mount,) = [m["Source"] for m in container.attrs["Mounts"] if m["Destination"] == CONFIG_DIR]
            return Server(int(state["Pid"]), Path(mount), container)
    return None


def _server_of(campaign: subprocess.Popen[str], backend: str, timeout: float = 30.0) -> Server:
    find = _container_server if backend == "container" else _process_server
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find(campaign)
        if found is not None:
            return found
        assert campaign.poll() is None, "the campaign ended before its fault"
        time.sleep(0.05)
    raise AssertionError("the campaign runs no server")


def _recording(errors: list[str], cases: int, timeout: float = 90.0) -> None:
    """Wait until the campaign's progress line counts at least `cases` cases."""
    deadline = time.monotonic() + timeout
    while not any(int(n) >= cases for n in re.findall(r"mapping: (\d+) cases", "".join(errors))):
        assert time.monotonic() < deadline, f"the campaign records no {cases} cases"
        time.sleep(0.05)


def _campaign(target: Target, out: Path) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "nats_conformance.suites", "campaign", "--server-version", target.spec.text,
        "--backend", target.backend, "--family", "mapping", "--cases", str(CASES_RUN), "--out", str(out),
    ]  # fmt: skip
    # progress lines every 0.2 s (the pipe's are otherwise 30 s apart), for `_recording` to count cases
    environment = {**os.environ, DEADLINE_ENV: str(DEADLINE), SECONDS_ENV: "0.2"}
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _pause(server: Server, rng: random.Random) -> None:
    """SIGSTOP for several deadlines, then SIGCONT (unless the campaign has removed it to restart it)."""
    os.kill(server.pid, signal.SIGSTOP)
    time.sleep(DEADLINE * 6 + rng.uniform(0, DEADLINE))
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, signal.SIGCONT)


def _kill(server: Server, rng: random.Random) -> None:
    os.kill(server.pid, signal.SIGKILL)


def _restart(server: Server, rng: random.Random) -> None:
    """A container is restarted in place by Docker (the server ends cleanly and starts again with the
    same configuration file); a process is ended cleanly with SIGTERM, for the campaign to start again."""
    if server.container is not None:
        server.container.restart(timeout=1)
    else:
        os.kill(server.pid, signal.SIGTERM)


def _drop(server: Server, rng: random.Random) -> None:
    """Reset the server's established client connections (`ss -K`), once one was there to reset."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listening = subprocess.run(
            ["ss", "-Htlnp"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        ports = [line.split()[3].rsplit(":", 1)[1] for line in listening if f"pid={server.pid}," in line]
        if ports:
            chosen = " or ".join(f"sport = :{port}" for port in ports)
            killed = subprocess.run(
                ["ss", "-HK", "-t", "state", "established", f"( {chosen} )"],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            if killed.strip():
                return
        time.sleep(0.02)
    raise AssertionError("the server had no connection to drop")


FAULTS: dict[str, Callable[[Server, random.Random], None]] = {
    "pause": _pause,
    "kill": _kill,
    "restart": _restart,
    "drop": _drop,
}
ALWAYS_RESTARTED = {("pause", "process"), ("pause", "container"), ("kill", "process"),
                    ("kill", "container"), ("restart", "process")}  # fmt: skip
"""The faults after which the campaign must restart the server: a server restarted in place by Docker,
or whose connections were dropped, may be used again as it is (the cases it cut off are unknown)."""
CI_FAULTS = {("pause", "process"), ("kill", "process")}
"""The faults every change's CI acts out (seed 1); the others run in the scheduled run only."""


def _leftovers(campaign: subprocess.Popen[str], owner: str, server: Server) -> list[str]:
    """What the ended campaign left: its work directory, a process run from it, a container it made."""
    left = [f"work directory {server.workdir}"] if server.workdir.exists() else []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        if any(str(server.workdir) in part for part in arguments(int(cmdline.parent.name))):
            left.append(f"process {cmdline.parent.name}")
    if server.container is not None:
        left += [f"container {container.id}" for container in containers_of(owner)]
    return left


NIGHTLY_SEEDS = [pytest.param(seed, marks=pytest.mark.nightly) for seed in range(2, 6)]


@pytest.mark.parametrize("seed", [1, *NIGHTLY_SEEDS])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_campaign_goes_on_after_its_server_hangs_dies_restarts_or_drops_connections(
    target: Target, run_config: RunConfig, tmp_path: Path, fault: str, seed: int
) -> None:
    if target.backend not in ("process", "container"):
        pytest.skip("the nemesis acts on a server the campaign starts")
    if not newest_of_session(target, run_config):
        pytest.skip("the nemesis runs on the session's newest release only, to keep CI short")
    if fault == "drop" and os.geteuid() != 0:
        pytest.skip("dropping a server's connections (ss -K) needs root")
    if seed == 1 and (fault, target.backend) not in CI_FAULTS:
        pytest.skip("every change's CI runs the process backend's pause and kill; the scheduled run the rest")
    rng = random.Random(f"{fault}-{target.backend}-{seed}")
    if target.backend == "container":
        process_daemon()  # this process's daemon, which the campaign shares (and so never stops)
    campaign = _campaign(target, tmp_path)
    owner = process_identity(campaign.pid)
    stream = campaign.stderr
    assert stream is not None
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(iter(lambda: stream.read(1), "")))
    reader.start()
    try:
        _recording(errors, rng.randint(300, LATEST_FAULT))
        server = _server_of(campaign, target.backend)
        FAULTS[fault](server, rng)
        campaign.wait(timeout=300)
    finally:
        campaign.kill()
        campaign.wait()
        reader.join()
    stderr = "".join(errors)
    assert "Traceback" not in stderr
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    # the status its records say: a long pause can leave more than --max-unknown of the cases unknown (3)
    verdicts = manifest["verdicts"]
    status = exit_status(
        diverged=bool(verdicts.get("diverge")), unknown=too_many_unknown(verdicts, DEFAULT_MAX_UNKNOWN)
    )
    assert campaign.returncode == status, stderr[-3000:]
    columns = ["verdict", "detail", "expected", "observed"]
    table = pq.read_table(run_dir / CASES, columns=columns).to_pylist()
    assert manifest["status"] == "completed"
    assert manifest["cases"] == manifest["written"] == len(table) >= CASES_RUN
    assert sum(manifest["verdicts"].values()) == len(table)
    if (fault, target.backend) in ALWAYS_RESTARTED:
        assert f"mapping: {RESTARTED}" in stderr
        assert {restart["family"] for restart in manifest["restarts"]} == {"mapping"}
    # The unit the fault cut short may hold no case (a batch of refused mappings): its restart is in the
    # manifest; every case that says it was cut short is unknown, and no case agrees unobserved.
    assert {row["verdict"] for row in table if unstated(row["detail"]).startswith(RESTARTED)} <= {"unknown"}
    # Every unknown case has a listed reason, as the report's query reads it on both engines; those the
    # fault cut short say what it did.
    parts = sorted((run_dir / CASES).glob("part-*.parquet"))
    reasons = {item.reason for item in part_counts(parts) if item.verdict == "unknown"}
    assert reasons <= set(REASONS) - {UNLISTED}, reasons
    cut = {reason_stated(row["detail"]) for row in table if unstated(row["detail"]).startswith(RESTARTED)}
    if fault == "kill" and target.backend == "process":
        assert cut <= {SERVER_DIED}, cut
    assert not [
        row for row in table
        if row["verdict"] == "agree" and not row["observed"] and row["expected"] != NOT_DELIVERED
    ]  # fmt: skip
    assert _leftovers(campaign, owner, server) == []


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
        sys.executable, "-m", "nats_conformance.suites", "campaign", "--server-version", str(server),
        "--backend", "process", "--family", "mapping", "--cases", "300", "--out", str(out),
    ]  # fmt: skip
    environment = {**os.environ, DEADLINE_ENV: str(START_DEADLINE)}
    return subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=180, check=False
    )


START_DEADLINE = 3.0
"""The deadline of a start in the first-start tests: a hung start is given up on after it."""


@pytest.mark.parametrize("first_start", list(FIRST_START))
def test_a_server_that_dies_or_hangs_in_its_first_start_is_started_again(
    target: Target, run_config: RunConfig, tmp_path: Path, first_start: str
) -> None:
    if target.backend != "process" or not newest_of_session(target, run_config):
        pytest.skip("a wrapper of the binary runs on the process backend, the session's newest release")
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


def test_a_release_that_cannot_start_is_one_line_and_exit_2(
    target: Target, run_config: RunConfig, tmp_path: Path
) -> None:
    if target.backend != "process" or not newest_of_session(target, run_config):
        pytest.skip("a broken binary is tried on the process backend once, the session's newest release")
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


KILLED_FAMILIES = [
    "matching",
    *(
        pytest.param(family, marks=pytest.mark.nightly)
        for family in ("weighted", "partition", "import", "contexts", "validation", "republish")
    ),
]


@pytest.mark.parametrize("family", KILLED_FAMILIES)
def test_a_server_killed_during_a_family_is_restarted_and_journaled(
    target: Target, tmp_path: Path, family: str
) -> None:
    """SIGKILL of the server a family runs on: the campaign starts another (before, the matching family
    went on recording every later case `unknown`, unable to connect) and journals the restart."""
    if target.backend != "process":
        pytest.skip("the server is killed as a child process of the campaign")
    command = [
        *(sys.executable, "-m", "nats_conformance.suites", "campaign", "--server-version", target.spec.text),
        *("--backend", "process", "--family", family, "--budget", f"{family}=100000000"),
        *("--out", str(tmp_path)),
    ]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, DEADLINE_ENV: str(DEADLINE)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def servers() -> set[int]:
        found = subprocess.run(
            ["pgrep", "-x", "-P", str(process.pid), "nats-server"],
            capture_output=True,
            text=True,
            check=False,
        )
        return {int(pid) for pid in found.stdout.split()}

    try:
        deadline = time.monotonic() + 120
        while not (recorded := _recorded(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert recorded, "the campaign recorded nothing in 120 s"
        while len(running := servers()) != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        (killed,) = running
        seen = _recorded(tmp_path)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not servers() - {killed} and time.monotonic() < deadline:
            time.sleep(0.1)
        assert servers() - {killed}, "no server was started again"
        # The restart is journaled once the new server is up: cases recorded since the kill say so (a
        # SIGTERM while it starts ends the campaign before the restart completes).
        while _recorded(tmp_path) <= seen and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr[-2000:]
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [restart["family"] for restart in manifest["restarts"]] == [family]
    assert manifest["restarts"][0]["reason"].startswith(RESTARTED)


def _recorded(out: Path) -> int:
    for manifest in out.glob("*/manifest.json"):
        with contextlib.suppress(OSError, ValueError):
            return int(json.loads(manifest.read_text())["cases"])
    return 0
