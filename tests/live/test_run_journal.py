"""A campaign that ends badly is accounted for: SIGINT and SIGTERM exit 130 and 143 with one line, a
journal marked interrupted and nothing left running (no server, no container, and no dockerd the run
started itself; a daemon that was running before is left alone); after SIGKILL the journal still counts
exactly the rows on disk, the report marks the run incomplete, which the gate refuses unless told
otherwise, and the next run removes the container and work directory the killed one left."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.fixtures.docker import (
    DockerDaemon,
    docker_client,
    ensure_docker,
    is_answering,
    process_daemon,
)
from nats_conformance.fixtures.options import RunConfig, Target
from nats_conformance.fixtures.provision import CACHE_ENV, cache_root
from nats_conformance.fixtures.servers.container import CONFIG_DIR, LABEL
from nats_conformance.records.owners import is_process_alive, process_identity
from nats_conformance.records.writer import CASES, MANIFEST, run_status
from nats_conformance.reports.__main__ import main as reports_main
from tests.live.campaigns import containers_of, newest_of_session

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]


def servers_of(parent: int) -> set[int]:
    """The nats-server processes `parent` started."""
    found = subprocess.run(
        ["pgrep", "-x", "-P", str(parent), "nats-server"], capture_output=True, text=True, check=False
    )
    return {int(pid) for pid in found.stdout.split()}


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def started_campaign(
    target: Target, out: Path, environment: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], Path]:
    """A campaign far longer than the test, once its journal holds recorded cases."""
    command = [
        *(sys.executable, "-m", "nats_conformance.suites", "campaign", "--server-version", target.spec.text),
        *("--backend", target.backend, "--family", "matching", "--budget", "matching=100000000"),
        *("--out", str(out)),
    ]
    process = subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        manifests = list(out.glob(f"*/{MANIFEST}"))
        if manifests and json.loads(manifests[0].read_text() or "{}").get("cases", 0) > 0:
            return process, manifests[0].parent
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"the campaign recorded nothing in 120 s: {process.communicate()[1][-2000:]}")


def rows_on_disk(run_dir: Path) -> int:
    return sum(pq.read_metadata(part).num_rows for part in (run_dir / CASES).glob("*.parquet"))


@pytest.fixture
def signalled(target: Target, run_config: RunConfig) -> Target:
    """The target, skipped on the process backend but for the session's newest release: what these tests
    check (a campaign's signals, its journal, what it leaves) is this product's code, and every release's
    server is started and stopped by the same backend."""
    if target.backend == "process" and not newest_of_session(target, run_config):
        pytest.skip("a campaign's signals are sent on the session's newest release, to keep CI short")
    return target


SIGNALS = pytest.mark.parametrize(
    ("sent", "status", "line"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGHUP, 129, "hung up"),
    ],
)


def interrupted(
    process: subprocess.Popen[str], run_dir: Path, sent: signal.Signals, status: int, line: str
) -> None:
    """Send `sent` to a campaign and check that it says so: its exit status and one line, a journal
    marked interrupted that counts the rows on disk."""
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == status, stderr[-2000:]
    assert stderr.rstrip().endswith(f"nats-conformance: {line}")
    assert "Traceback" not in stderr
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert (manifest["status"], manifest["signal"]) == ("interrupted", sent.name)
    assert manifest["cases"] == rows_on_disk(run_dir) > 0


@SIGNALS
def test_an_interrupted_campaign_says_so_and_leaves_nothing_running(
    signalled: Target, tmp_path: Path, sent: signal.Signals, status: int, line: str
) -> None:
    target = signalled
    if target.backend not in ("process", "container"):
        pytest.skip("signals are sent to a campaign that starts its servers")
    daemon = process_daemon() if target.backend == "container" else None  # running before the campaign
    process, run_dir = started_campaign(target, tmp_path)
    owner = process_identity(process.pid)
    servers = servers_of(process.pid) if daemon is None else {0}
    containers = containers_of(owner) if daemon is not None else []
    assert servers or containers, "the campaign's server was not found"
    interrupted(process, run_dir, sent, status, line)
    assert not [pid for pid in servers if pid and running(pid)]
    if daemon is not None:
        assert containers_of(owner) == []
        assert is_answering(daemon.docker_host)


@pytest.fixture
def own_docker() -> Iterator[dict[str, str]]:
    """The environment of a campaign that finds no Docker daemon and starts its own, under a state
    directory of its own (with a short path: dockerd's sockets live under it); the daemon is stopped
    here should the campaign leave it."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        pytest.skip("a campaign starts its own dockerd only as root, with dockerd installed")
    home = Path(tempfile.mkdtemp(prefix="ncj-", dir="/tmp"))
    state = home / "nats-conformance" / "docker"
    try:
        yield {
            **os.environ,
            "XDG_CACHE_HOME": str(home),
            CACHE_ENV: str(cache_root()),
            "DOCKER_HOST": "unix:///nonexistent/nats-conformance/docker.sock",
        }
    finally:
        with contextlib.suppress(OSError, ValueError):
            pid = int((state / "docker.pid").read_text())
            DockerDaemon(f"unix://{state / 'docker.sock'}", owned=True, pid=pid, state_dir=state).stop()
        shutil.rmtree(home, ignore_errors=True)


@SIGNALS
def test_an_interrupted_container_campaign_stops_the_dockerd_it_started(
    target: Target, own_docker: dict[str, str], sent: signal.Signals, status: int, line: str
) -> None:
    if target.backend != "container":
        pytest.skip("a dockerd is started by a campaign on the container backend")
    home = Path(own_docker["XDG_CACHE_HOME"])
    process, run_dir = started_campaign(target, home / "runs", own_docker)
    state = home / "nats-conformance" / "docker"
    dockerd = process_identity(int((state / "docker.pid").read_text()))
    assert is_process_alive(dockerd)
    interrupted(process, run_dir, sent, status, line)
    assert not is_process_alive(dockerd)
    assert not os.path.ismount(state / "exec" / "netns" / "default")


def test_a_killed_campaign_is_counted_and_refused_by_the_gate(
    signalled: Target, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = signalled
    if target.backend != "process":
        pytest.skip("signals are sent to a campaign on the process backend")
    process, run_dir = started_campaign(target, tmp_path)
    time.sleep(3)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert run_status(manifest) == "killed"
    assert manifest["cases"] == rows_on_disk(run_dir) > 0
    baseline = tmp_path / "baseline.json"
    assert reports_main(["baseline", str(run_dir), "--out", str(baseline)]) == 2
    assert "incomplete (killed)" in capsys.readouterr().err
    assert reports_main(["baseline", str(run_dir), "--out", str(baseline), "--allow-incomplete"]) == 0
    assert json.loads(baseline.read_text())["incomplete"] == [run_dir.name]
    assert reports_main(["gate", str(run_dir), "--baseline", str(baseline)]) == 2
    assert "incomplete (killed)" in capsys.readouterr().err
    assert reports_main(["gate", str(run_dir), "--baseline", str(baseline), "--allow-incomplete"]) == 0
    out = tmp_path / "report"
    assert reports_main(["build", str(run_dir), "--out", str(out), "--engine", "duckdb"]) == 0
    assert json.loads((out / "summary.json").read_text())["complete"] is False
    assert "Incomplete" in (out / "report.md").read_text()


def test_what_a_killed_campaign_left_is_removed_by_the_next_run(signalled: Target, tmp_path: Path) -> None:
    target = signalled
    if target.backend not in ("process", "container"):
        pytest.skip("signals are sent to a campaign that starts its servers")
    process, _ = started_campaign(target, tmp_path / "killed")
    owner = process_identity(process.pid)
    if target.backend == "container":
        (container,) = containers_of(owner)
        (workdir,) = [Path(m["Source"]) for m in container.attrs["Mounts"] if m["Destination"] == CONFIG_DIR]
    else:
        (server,) = servers_of(process.pid)
        config = Path(f"/proc/{server}/cmdline").read_bytes().split(b"\0")[2]
        workdir = Path(config.decode()).parent
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    if target.backend == "container":
        # its reaper (fixtures.reaper) removes the container and the work directory at once
        deadline = time.monotonic() + 60
        while (containers_of(owner) or workdir.exists()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert containers_of(owner) == []
        assert not workdir.exists()
        assert not reapers_of(owner)
        workdir.mkdir()  # as a reaper that could not run would leave it: the next run removes it
        (workdir / ".owner").write_text(owner)
    assert workdir.is_dir()  # a SIGKILL leaves it
    command = [
        *(sys.executable, "-m", "nats_conformance.suites", "campaign", "--server-version", target.spec.text),
        *("--backend", target.backend, "--family", "matching", "--budget", "matching=50"),
        *("--out", str(tmp_path / "next")),
    ]
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert not workdir.exists()
    assert containers_of(owner) == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ctrl_c_just_after_a_server_starts_is_one_line_and_leaves_nothing(
    signalled: Target, tmp_path: Path, seed: int
) -> None:
    """Ctrl-C at a seeded moment of the first second of a family's server, while Hypothesis draws the
    first units, is never swallowed as a server failure: exit 130, one line, nothing left running."""
    target = signalled
    if target.backend != "process":
        pytest.skip("a campaign's server start is watched on the process backend")
    command = [
        *(sys.executable, "-m", "nats_conformance.suites", "campaign", "--server-version", target.spec.text),
        *("--backend", "process", "--family", "mapping", "--out", str(tmp_path)),
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (servers := servers_of(process.pid)):
        assert time.monotonic() < deadline, "the campaign started no server"
        assert process.poll() is None, "the campaign ended before its server started"
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0.0, 1.0))
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr[-2000:]
    assert stderr.rstrip().endswith("nats-conformance: interrupted")
    assert "Traceback" not in stderr
    assert "not running" not in stderr
    assert not [pid for pid in servers if running(pid)]
    for run_dir in tmp_path.iterdir():  # none when nothing was recorded yet
        manifest = json.loads((run_dir / MANIFEST).read_text())
        assert (manifest["status"], manifest["cases"]) == ("interrupted", rows_on_disk(run_dir))


def reapers_of(owner: str, wait: float = 30.0) -> list[int]:
    """The reapers (`fixtures.reaper`) watching `owner` still running after up to `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        found = subprocess.run(
            ["pgrep", "-f", f"nats_conformance.fixtures.reaper --owner {owner} "],
            capture_output=True,
            text=True,
            check=False,
        )
        pids = [int(pid) for pid in found.stdout.split() if running(int(pid))]
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.2)


def test_a_killed_container_campaign_leaves_no_container_and_stops_the_dockerd_it_started(
    target: Target, own_docker: dict[str, str]
) -> None:
    """SIGKILL of a campaign that started its own dockerd: its reaper removes its container, then stops
    that dockerd (and unmounts its network namespace); a daemon started again on the same state
    directory holds no container with the product's labels."""
    if target.backend != "container":
        pytest.skip("a dockerd is started by a campaign on the container backend")
    home = Path(own_docker["XDG_CACHE_HOME"])
    process, _ = started_campaign(target, home / "runs", own_docker)
    owner = process_identity(process.pid)
    state = home / "nats-conformance" / "docker"
    host = f"unix://{state / 'docker.sock'}"
    dockerd = process_identity(int((state / "docker.pid").read_text()))

    def labelled() -> int:
        client = docker_client(host)
        try:
            return len(client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True))
        finally:
            client.close()

    assert labelled() == 1  # the campaign's server
    assert len(reapers_of(owner, wait=0)) == 1
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    deadline = time.monotonic() + 60
    while is_process_alive(dockerd) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not is_process_alive(dockerd)
    assert not reapers_of(owner)  # the reaper unmounts the namespace after dockerd has exited
    assert not os.path.ismount(state / "exec" / "netns" / "default")
    with ensure_docker(docker_host=host, state_dir=state) as again:
        assert again.owned
        assert labelled() == 0
