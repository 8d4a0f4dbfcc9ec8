"""A -cover server writes its counters only when it exits on SIGTERM: one that panics writes none, and every
unit it ran since it started is lost to the coverage figures. The validation family's probe message is
where servers panic (an empty destination from 2.10, 53 of 600 units of a default campaign on 2.14.9), so
before it a -cover server is stopped and started again with the configuration in force. No live server:
a recording backend stands in."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.fixtures.config import Mapping, ServerConfig
from nats_conformance.fixtures.cover import COVER_DIR
from nats_conformance.fixtures.servers.process import ProcessBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.reference.profiles import for_version
from nats_conformance.suites.families import validation
from nats_conformance.suites.families.validation import EDGE_CALLS, ValidationFamily
from nats_conformance.suites.strategies import Enough, run_batches


class RecordingServer:
    """A backend that notes every start, stop and apply, and takes every configuration."""

    name = "process"
    url = "nats://127.0.0.1:1"
    version = "2.14.9"

    def __init__(self, *, writes_counters: bool | None) -> None:
        if writes_counters is not None:
            self.writes_counters = writes_counters
        self.config = ServerConfig()
        self.events: list[tuple[str, ServerConfig | None]] = []

    def start(self, config: ServerConfig) -> None:
        self.events.append(("start", config))
        self.config = config

    def apply(self, config: ServerConfig) -> None:
        self.events.append(("apply", config))
        self.config = config

    def stop(self) -> None:
        self.events.append(("stop", None))

    def cleanup(self) -> None:
        self.stop()

    def logs(self) -> str:
        return ""

    def is_running(self) -> bool:
        return True


def _probe(monkeypatch: pytest.MonkeyPatch, server: RecordingServer) -> list[str]:
    """The validation family's execution of one accepted mapping on `server`; the events in order, the
    probe's publication among them."""

    def publish(url: str, subjects: list[str], **_: Any) -> Any:
        server.events.append(("probe", None))
        return _Observed()

    monkeypatch.setattr(validation, "publish_and_observe", publish)
    base = ValidationFamily().base_config(server)  # type: ignore[arg-type]
    validation.execute_validation(Session.of(server, base), [("v.*", "")])  # type: ignore[arg-type]
    return [event for event, _ in server.events]


class _Observed:
    failure = ""


def test_a_cover_server_is_restarted_with_its_configuration_before_the_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = RecordingServer(writes_counters=True)
    assert _probe(monkeypatch, server) == ["apply", "stop", "start", "probe"]
    applied, restarted = server.events[0][1], server.events[2][1]
    assert restarted == applied
    assert restarted is not None
    assert restarted.accounts[1].mappings == (Mapping("v.*", ""),)


@pytest.mark.parametrize("writes_counters", [False, None])
def test_any_other_server_is_left_running(
    monkeypatch: pytest.MonkeyPatch, writes_counters: bool | None
) -> None:
    assert _probe(monkeypatch, RecordingServer(writes_counters=writes_counters)) == ["apply", "probe"]


def test_a_process_writes_counters_only_with_gocoverdir(tmp_path: Path) -> None:
    binary = tmp_path / "nats-server"
    assert ProcessBackend(binary, workdir=tmp_path, environment={COVER_DIR: str(tmp_path)}).writes_counters
    assert not ProcessBackend(binary, workdir=tmp_path).writes_counters


def test_the_default_validation_budget_draws_every_edge_call() -> None:
    """The three malformed calls that reach refusals of their own in nats-server's parser are drawn within
    the default campaign's validation units (600, seed 0, drawn as `suites.engine.run.run_family` draws
    them when no unit diverges)."""
    family = ValidationFamily()
    budget = family.description.budget
    units = family.units(for_version("2.14.9"))
    seen: dict[tuple[str, str], None] = {}

    def collect(drawn: list[tuple[str, str]]) -> float:
        if len(seen) >= budget:
            raise Enough
        seen.update(dict.fromkeys(drawn))
        return 0.0

    rng = random.Random(0)
    while len(seen) < budget:
        before = len(seen)
        run_batches(lambda data: [data.draw(units)], budget - len(seen), rng.randrange(2**32), collect)
        if len(seen) == before:  # as run_family: a round that drew nothing new ends the drawing
            break
    for call in EDGE_CALLS:
        assert any(destination.startswith(call) for _, destination in seen), call
