"""Targets that misbehave: a connection dropped mid-batch, a disk that fills up. Each gives one clear
line, and every case still ends in exactly one verdict."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.fixtures.options import RunConfig, Target
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.local import HOST
from nats_conformance.fixtures.session import Session
from nats_conformance.records.counts import case_counts
from nats_conformance.records.schema import Case
from nats_conformance.records.unknowns import CONNECTION_LOST
from nats_conformance.records.writer import RecordWriter, run_status
from nats_conformance.suites.engine.family import check, record, verdicts
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.strategies import MappingBatch
from tests.live.campaigns import newest_of_session

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]


class DroppingProxy:
    """A TCP relay to a server that closes any connection once it has passed `limit` bytes from the
    server to the client: a network (or a target) that drops connections under load."""

    def __init__(self, upstream: str, limit: int) -> None:
        host, port = upstream.removeprefix("nats://").rsplit(":", 1)
        self.upstream = (host, int(port))
        self.limit = limit
        self.listener = socket.create_server((HOST, 0))
        self.url = f"nats://{HOST}:{self.listener.getsockname()[1]}"
        self.dropped = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pipe, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, self.limit), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        passed = 0
        try:
            while chunk := source.recv(65536):
                if limit is not None and passed + len(chunk) > limit:
                    self.dropped += 1
                    break
                sink.sendall(chunk)
                passed += len(chunk)
        except OSError:
            pass
        for end in (source, sink):  # shutdown first: a close alone leaves the other relay thread's recv
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def close(self) -> None:
        self.listener.close()


class Proxied:
    """A backend reached through a proxy: everything but the URL is the real server's."""

    def __init__(self, backend: Backend, url: str) -> None:
        self.backend = backend
        self.url = url

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


@pytest.fixture
def dropping(server: Backend) -> Iterator[DroppingProxy]:
    proxy = DroppingProxy(server.url, limit=200_000)
    yield proxy
    proxy.close()


def test_a_dropped_connection_makes_cases_unknown_and_every_case_is_counted(
    server: Backend, dropping: DroppingProxy, context: RunContext, recorder: RecordWriter
) -> None:
    subjects = tuple(f"drop.k{index}" for index in range(20_000))
    batch = MappingBatch((("drop.*", "dropped.$1"),), (subjects,))
    target: Any = Proxied(server, dropping.url)
    judged = check(FAMILIES["mapping"], Session.of(target), context, batch)
    record(recorder, judged)
    counts = verdicts(judged)
    assert counts.total() == len(subjects)
    assert dropping.dropped >= 1
    assert counts["diverge"] == 0
    assert 0 < counts["agree"] < len(subjects)
    assert counts["unknown"] == len(subjects) - counts["agree"]
    details = {item.detail for item in judged if isinstance(item, Case)}
    assert details == {"connection-lost: tap connection: the server closed the connection"}
    counted = case_counts(item for item in judged if isinstance(item, Case))
    assert {(item.verdict, item.reason) for item in counted} == {("unknown", CONNECTION_LOST)}


def test_a_campaign_on_a_full_disk_ends_with_one_line_that_counts_every_case(
    target: Target, run_config: RunConfig, tiny_disk: Path
) -> None:
    if target.backend != "process" or not newest_of_session(target, run_config):
        pytest.skip("one backend and release are enough to fill a disk")
    command = [
        sys.executable, "-m", "nats_conformance.suites", "campaign", "--server-version", target.spec.text,
        "--family", "mapping", "--family", "validation", "--cases", "20000", "--budget", "validation=5",
        "--out", str(tiny_disk),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    errors = [line for line in done.stderr.splitlines() if line.startswith("nats-conformance: error:")]
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    line = errors[0]
    assert "No space left on device" in line
    run, recorded, lost = (int(word) for word in _numbers_after(line, ("cases run:", "recorded,", "lost)")))
    assert run == recorded + lost
    assert lost > 0
    manifests = list(tiny_disk.glob("*/manifest.json"))
    if manifests:
        manifest = json.loads(manifests[0].read_text())
        if manifest["status"] == "running":  # no room for the final manifest: the journal before it stands
            assert run_status(manifest) == "killed"
        else:
            assert manifest["cases"] == manifest["written"] + manifest["unwritten"] == run


def test_a_campaign_on_an_unreachable_server_leaves_no_run_directory(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "nats_conformance.suites", "campaign", "--backend", "external",
        "--server-url", f"nats://{HOST}:1", "--cases", "5", "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("nats-conformance: error: no NATS server answers at ")
    assert done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def _numbers_after(line: str, labels: tuple[str, ...]) -> list[str]:
    """The integers just before each label in `line` (e.g. '12 cases run:' -> '12')."""
    numbers = []
    for label in labels:
        before = line[: line.index(label)].rstrip().split(" ")[-1].lstrip("(")
        numbers.append(before)
    return numbers
