"""The streaming family (`suites.families.streaming`) on live servers: a small budget of drawn layouts,
their nats-streaming-server processes joined to the target's nats-server, records cases that agree (or
diverge as the expectations list); a recorded request replays through the family registry; and without
the nats-streaming-server build the family says in one line how to provision it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nats_conformance.fixtures.clients.streaming import Replies, StreamingClient
from nats_conformance.fixtures.options import Target, build_run_config
from nats_conformance.fixtures.provision import CACHE_ENV, NATS_STREAMING_SERVER, resolve_binary
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.local import HOST
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile, read_case_file
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import case_of
from nats_conformance.suites.engine.family import check
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES, family_of_feature
from nats_conformance.suites.families.streaming import (
    FAILURE_KINDS,
    REQUEST_TIMEOUT,
    StreamingUnit,
    lost_nats,
)
from nats_conformance.suites.replay import replay_file_on_server
from nats_conformance.suites.streaming.layouts import Layout
from tests.families import live_session, run_agreeing

pytestmark = [pytest.mark.live, pytest.mark.streaming]

BUDGET = 20


def test_streaming_family_records_agreeing_cases_that_replay(
    target: Target,
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    assert family_of_feature("streaming") is FAMILIES["streaming"]
    rows = run_agreeing(
        "streaming",
        BUDGET,
        server_factory=server_factory,
        expectations=expectations,
        run_dir=tmp_path / "run",
    )
    assert {row["implementation"] for row in rows} == {"nats-streaming-server"}
    request = next(row for row in rows if row["functions"] == "publish" and row["verdict"] == "agree")
    recorded = CaseFile.of(case_of(request))
    assert recorded.layout
    path = tmp_path / "case.json"
    path.write_text(recorded.to_json())
    run = build_run_config([target.spec.text], [target.backend], None, None)
    replayed = replay_file_on_server(read_case_file(path), run)
    again = [case for case in replayed if case.functions == "publish" and case.subject == request["subject"]]
    assert [case.verdict for case in again] == ["agree"]
    assert {case.functions for case in replayed} >= {"startup", "publish", "subscribe"}


def test_a_missing_build_is_one_line_saying_how_to_provision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    reason = FAMILIES["streaming"].unsupported("2.14.5", "process")
    assert reason == (
        "nats-streaming-server 0.25.6 build missing: "
        "run `python -m nats_conformance.fixtures provision --product nats-streaming-server`"
    )


def test_a_target_that_cannot_host_streaming_servers_is_named() -> None:
    family = FAMILIES["streaming"]
    assert family.unsupported("2.14.5", "container") == (
        "streaming servers join a process-backend nats-server only (not container)"
    )
    assert (
        family.unsupported("1.4.1", "process") == "nats-streaming-server joins a nats-server 2.x (not 1.4.1)"
    )


def failed_start(port: int, folder: Path) -> tuple[int, str]:
    """The exit status and last line of a streaming server started against a NATS server on `port`."""
    binary = resolve_binary("0.25", NATS_STREAMING_SERVER)
    done = subprocess.run(
        [str(binary), "-ns", f"nats://{HOST}:{port}", "-cid", "lost", "-dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()[-1]


def test_a_start_that_lost_its_nats_server_is_a_fault_not_a_refusal(tmp_path: Path) -> None:
    """A streaming server whose NATS server is gone (killed by a fault) fails with words that say so;
    such a start is `unknown`, never a divergence of the layout. Its refusals say otherwise."""
    status, last = failed_start(1, tmp_path)
    assert status != 0
    assert lost_nats(last), last
    assert not any(lost_nats(sign) for sign, _ in FAILURE_KINDS)


@pytest.mark.parametrize(("greets", "resets"), [(False, True), (False, False), (True, True), (True, False)])
def test_a_start_whose_nats_connection_ends_is_a_fault(greets: bool, resets: bool, tmp_path: Path) -> None:
    """A NATS server killed while a streaming server connects: the peer closes the connection, at once
    or after its INFO, with a reset or an end of file; the streaming server's last words say so."""
    peer = socket.create_server((HOST, 0))
    port = peer.getsockname()[1]

    def close_each() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = peer.accept()
                if greets:
                    connection.sendall(
                        f'INFO {{"server_id":"gone","port":{port},"max_payload":1024}}\r\n'.encode()
                    )
                    connection.recv(4096)
                if resets:
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                connection.close()

    threading.Thread(target=close_each, daemon=True).start()
    try:
        status, last = failed_start(port, tmp_path)
    finally:
        peer.close()
    assert status != 0
    assert lost_nats(last.split("Failed to start: ")[-1]), last


@pytest.fixture
def streaming_session(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> Iterator[tuple[Session, RunContext]]:
    """A session on a NATS server that hosts streaming layouts, and a run context recording into
    `tmp_path`; skipped where the target cannot host them."""
    with live_session(
        "streaming", server_factory=server_factory, expectations=expectations, run_dir=tmp_path / "run"
    ) as (session, context, _):
        yield session, context


def test_a_layout_whose_nats_server_died_restarts_it_and_is_unknown(
    streaming_session: tuple[Session, RunContext],
) -> None:
    """The target's NATS server killed under a streaming layout (the soak's kill): the unit's cases are
    `unknown`, the server is restarted and the restart journaled, and the next layout runs on it."""
    session, context = streaming_session
    family, unit = FAMILIES["streaming"], StreamingUnit(Layout.of(["foo"]), ("foo",), 1)
    assert session.server.pid is not None
    os.kill(session.server.pid, signal.SIGKILL)
    judged = check(family, session, context, unit)
    assert {case.verdict for case in judged} == {"unknown"}
    assert len(session.restarts) == 1
    assert session.server.is_running()
    again = check(family, session, context, unit)
    assert {case.verdict for case in again} == {"agree"}


def test_a_layout_whose_nats_server_stalls_while_probed_is_unknown(
    streaming_session: tuple[Session, RunContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target's NATS server stopped (SIGSTOP, the soak's stop) for longer than a request's timeout
    just as a channel is published to, then continued: the publish times out because the server stalled,
    not because of the layout, so the unit's cases are `unknown` (never a divergence), the server is
    restarted and journaled, and the next layout agrees."""
    session, context = streaming_session
    family, unit = FAMILIES["streaming"], StreamingUnit(Layout.of(["foo"]), ("foo",), 1)
    publish, stalls = StreamingClient.publish, [2 * REQUEST_TIMEOUT]

    async def publish_stalled(
        client: StreamingClient, channel: str, data: bytes = b"", **wait: float
    ) -> Replies:
        pid = session.server.pid
        if stalls and pid is not None:
            os.kill(pid, signal.SIGSTOP)
            threading.Timer(stalls.pop(), os.kill, (pid, signal.SIGCONT)).start()
        return await publish(client, channel, data, **wait)

    monkeypatch.setattr(StreamingClient, "publish", publish_stalled)
    judged = check(family, session, context, unit)
    assert not stalls
    assert {case.verdict for case in judged} == {"unknown"}, [case.difference for case in judged]
    assert len(session.restarts) == 1
    assert "took" in session.restarts[0]
    again = check(family, session, context, unit)
    assert {case.verdict for case in again} == {"agree"}
