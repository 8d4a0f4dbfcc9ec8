"""A Spark standalone cluster on this machine for the scale-out tests: a master and two one-core workers
started by pyspark's own `sbin/spark-daemon.sh` (what Spark's `start-master.sh` and `start-worker.sh`
run; the pip package ships only the former), every address 127.0.0.1, everything under one directory
that is removed with the cluster."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
WORKERS = 2


@dataclass(frozen=True, slots=True)
class Cluster:
    url: str
    """spark://127.0.0.1:PORT"""
    home: Path
    """Its logs, pid files and the workers' work directories (`work-N`, one per worker)."""
    environment: dict[str, str]
    """What a driver on this machine needs (SPARK_LOCAL_IP)."""

    def pids(self) -> set[int]:
        """The master's and workers' processes."""
        return {int(path.read_text()) for path in (self.home / "pids").glob("*.pid")}

    def worker_dirs(self) -> list[Path]:
        return [self.home / f"work-{number}" for number in range(1, WORKERS + 1)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def alive_workers(ui_port: int) -> int:
    """How many workers the master counts as alive (its web UI's JSON), 0 while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except OSError:
        return 0


@contextmanager
def standalone_cluster() -> Iterator[Cluster]:
    """Start the cluster, wait until both workers registered, and on exit stop every daemon and remove
    its directory."""
    home = Path(tempfile.mkdtemp(prefix="nats-conformance-spark-cluster-"))
    (home / "conf").mkdir()
    (home / "conf" / "spark-defaults.conf").write_text("spark.master.rest.enabled false\n")  # port 6066
    environment = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(home / "conf"),
        "SPARK_LOG_DIR": str(home / "logs"),
        "SPARK_PID_DIR": str(home / "pids"),
        "SPARK_IDENT_STRING": home.name,
    }
    daemon = [str(spark_home() / "sbin" / "spark-daemon.sh")]
    port, ui_port = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    started: list[tuple[str, str]] = []

    def start(kind: str, instance: str, *arguments: str) -> None:
        subprocess.run(
            [*daemon, "start", kind, instance, *arguments], env=environment, check=True, capture_output=True
        )
        started.append((kind, instance))

    try:
        start(MASTER_CLASS, "1", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port))
        for number in range(1, WORKERS + 1):
            start(
                WORKER_CLASS,
                str(number),
                *("--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(free_port())),
                *("--work-dir", str(home / f"work-{number}"), url),
            )
        deadline = time.monotonic() + 120
        while alive_workers(ui_port) < WORKERS:
            if time.monotonic() > deadline:
                logs = "\n".join(path.read_text()[-1500:] for path in (home / "logs").glob("*.out"))
                raise RuntimeError(f"the Spark cluster did not start in 120 s:\n{logs}")
            time.sleep(0.5)
        yield Cluster(url, home, {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    finally:
        pids = {int(path.read_text()) for path in (home / "pids").glob("*.pid")}
        for kind, instance in reversed(started):
            subprocess.run(
                [*daemon, "stop", kind, instance], env=environment, check=False, capture_output=True
            )
        deadline = time.monotonic() + 30
        while any(running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in pids:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(home, ignore_errors=True)


def running(pid: int) -> bool:
    """True iff process `pid` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
