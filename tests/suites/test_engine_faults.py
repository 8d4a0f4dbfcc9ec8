"""The engine's answer to a unit its server cut short: the server is restarted through the session and the
unit's cases are `unknown`, saying so; a unit the server took in full is judged as usual. No live server:
a scripted backend stands in."""

from __future__ import annotations

import itertools

import pytest

from nats_conformance.fixtures.clients.wire import SERVER_ERROR, WireError
from nats_conformance.fixtures.config import ServerConfig
from nats_conformance.fixtures.deadlines import DEADLINE_ENV, within
from nats_conformance.fixtures.errors import (
    ConfigRejectedError,
    ReloadTimeoutError,
    ServerDiedError,
    ServerError,
    ServerStartError,
)
from nats_conformance.fixtures.session import RESTART_FAILED, RESTARTED, Session
from nats_conformance.records import unknowns
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.engine.family import cases_of, check, verdicts
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.imports import ImportRun
from nats_conformance.suites.families.matching import Subscriptions
from nats_conformance.suites.families.streams import TransformRun
from nats_conformance.suites.families.weighted import WeightedRun
from nats_conformance.suites.strategies import MappingBatch


class ScriptedServer:
    """A backend that starts and stops on demand, whose `apply` raises the error it is given."""

    name = "process"
    url = "nats://127.0.0.1:1"
    version = "2.14.5"

    def __init__(self, error: ServerError, *, running: bool) -> None:
        self.error = error
        self.running = running
        self.starts = 0
        self.config = ServerConfig()
        self.log = ""

    def start(self, config: ServerConfig) -> None:
        self.starts += 1
        self.running = True

    def apply(self, config: ServerConfig) -> None:
        raise self.error

    def stop(self) -> None:
        self.running = False

    def cleanup(self) -> None:
        self.stop()

    def logs(self) -> str:
        return self.log

    def is_running(self) -> bool:
        return self.running


GONE = unknowns.stated(unknowns.SERVER_DIED, f"{RESTARTED} gone")
"""What a restart tells the cases of a unit its server cut short (`Session.recover`)."""


def _context() -> RunContext:
    counter = itertools.count()
    return RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))


@pytest.mark.parametrize(
    ("error", "running", "reason"),
    [
        (ReloadTimeoutError("configuration generation 3 not in force after 1s"), True, unknowns.TIMEOUT),
        (ServerDiedError("nats-server on port 1 is not running"), False, unknowns.SERVER_DIED),
        (WireError("no PONG from the server in time"), True, unknowns.TIMEOUT),
        (WireError("the server closed the connection"), True, unknowns.CONNECTION_LOST),
        (WireError("the server closed the connection"), False, unknowns.SERVER_DIED),
    ],
)
def test_a_unit_cut_short_by_its_server_restarts_it_and_is_unknown(
    error: ServerError, running: bool, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its cases say why they are unknown: the server died (whatever the unit saw of it), or what the
    error that cut the unit short was."""
    monkeypatch.setenv(DEADLINE_ENV, "0.05")
    server = ScriptedServer(error, running=running)
    batch = MappingBatch((("a.*", "b.{{wildcard(1)}}"), ("c.>", "d.>")), (("a.x", "a.y"), ("c.z",)))
    session = Session.of(server)
    cases = cases_of(check(FAMILIES["mapping"], session, _context(), batch))
    assert server.starts == 1
    assert session.restarts == [unknowns.unstated(cases[0].detail)]
    assert [case.subject for case in cases] == ["a.x", "a.y", "c.z"]
    assert {case.verdict for case in cases} == {"unknown"}
    assert all(case.detail.startswith(f"{reason}: {RESTARTED} {error}") for case in cases)


@pytest.mark.parametrize(
    ("family", "feature"),
    [
        ("validation", "validation"),
        ("partition", "partition"),
        ("import", "stream-import"),
        ("stream-transform", "stream-transform"),
        ("matching", "matching"),
    ],
)
def test_every_family_says_a_cut_off_unit_is_unknown(family: str, feature: str) -> None:
    chosen = FAMILIES[family]
    case = CaseFile(feature, "v.*", "v.{{wildcard(1)}}", "v.x", "2.14.5")
    profile = for_version("2.14.5")
    cases = cases_of(chosen.unknown(_context(), profile, chosen.unit_of(case), GONE))
    assert cases
    assert {case.verdict for case in cases} == {"unknown"}
    assert all(case.detail == GONE for case in cases)


def test_the_deadline_shortens_every_wait_and_never_lengthens_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    assert within(5.0) == 5.0
    monkeypatch.setenv(DEADLINE_ENV, "1.5")
    assert within(5.0) == 1.5
    assert within(0.5) == 0.5


def test_a_server_that_dies_again_while_restarting_is_started_once_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DEADLINE_ENV, "0.05")
    server = FailingStart(ServerDiedError("nats-server on port 1 is not running"), running=False)
    batch = MappingBatch((("a.*", "b.{{wildcard(1)}}"),), (("a.x",),))
    (case,) = cases_of(check(FAMILIES["mapping"], Session.of(server), _context(), batch))
    assert server.starts == 2
    assert case.verdict == "unknown"
    assert "its first restart failed: killed during start" in case.detail


def test_a_restart_that_fails_twice_is_journaled_before_it_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest's `restarts` (written from `Session.restarts`) missed a failed restart."""
    monkeypatch.setenv(DEADLINE_ENV, "0.05")
    server = NeverStarts(ServerDiedError("nats-server on port 1 is not running"), running=False)
    session = Session.of(server)
    batch = MappingBatch((("a.*", "b.{{wildcard(1)}}"),), (("a.x",),))
    with pytest.raises(ServerStartError, match="bad binary"):
        check(FAMILIES["mapping"], session, _context(), batch)
    assert server.starts == 2
    (restart,) = session.restarts
    assert restart.startswith(f"{RESTART_FAILED} nats-server on port 1 is not running (it had died; ")
    assert restart.endswith(
        "its second restart failed: nats-server exited with status 1 during start-up: bad binary)"
    )


class FailingStart(ScriptedServer):
    """Its first start fails, as a server killed while it starts."""

    def start(self, config: ServerConfig) -> None:
        super().start(config)
        if self.starts == 1:
            self.running = False
            raise ServerStartError("killed during start")


@pytest.mark.parametrize(
    "last_words", ["panic: runtime error: index out of range", "fatal error: concurrent map writes"]
)
def test_a_server_dead_of_a_unit_is_a_crash_and_one_killed_from_outside_is_cut_short(last_words: str) -> None:
    server = ScriptedServer(ServerDiedError("unused"), running=False)
    server.log = f"[INF] Server is ready\n{last_words}\n"
    assert Session.of(server).crash_of("the server closed the connection") == last_words
    assert server.starts == 1
    server.running, server.log = False, "[INF] Server is ready\n"
    with pytest.raises(ServerDiedError, match="no panic in its log"):
        Session.of(server).crash_of("the server closed the connection")
    assert server.starts == 1


class NeverStarts(ScriptedServer):
    """Every start fails: a release that cannot start."""

    def start(self, config: ServerConfig) -> None:
        super().start(config)
        self.running = False
        raise ServerStartError("nats-server exited with status 1 during start-up: bad binary")


def test_a_server_that_fails_its_first_start_is_started_again_and_the_restart_kept() -> None:
    server = FailingStart(ServerDiedError("unused"), running=False)
    session = Session.started(server, ServerConfig())
    assert server.starts == 2
    assert server.running
    assert session.restarts == [f"{RESTARTED} killed during start (during its start)"]


def test_a_release_that_never_starts_is_one_error_after_a_few_starts() -> None:
    server = NeverStarts(ServerDiedError("unused"), running=False)
    with pytest.raises(ServerStartError, match=r"bad binary \(3 starts failed\)$"):
        Session.started(server, ServerConfig())
    assert server.starts == 3


def test_a_configuration_refused_at_start_is_not_tried_again() -> None:
    class Refusing(ScriptedServer):
        def start(self, config: ServerConfig) -> None:
            super().start(config)
            raise ConfigRejectedError("server rejected the configuration: bad", "bad")

    server = Refusing(ServerDiedError("unused"), running=False)
    with pytest.raises(ConfigRejectedError):
        Session.started(server, ServerConfig())
    assert server.starts == 1


SHARES = (WeightedDestination("w.a.$1", 60), WeightedDestination("w.b.$1", 40))


@pytest.mark.parametrize(
    ("family", "unit", "planned"),
    [
        ("mapping", MappingBatch((("a.*", "b.$1"), ("c.>", "d.>")), (("a.x", "a.y"), ("c.z",))), 3),
        ("matching", Subscriptions(("a.*", "b.>"), ("a.x", "b.y.z", "c")), 2 * 3),
        ("weighted", WeightedRun("w.*", SHARES, ("w.x", "w.y", "w.z"), 7), 3 + 1),  # messages, shares
        ("stream-transform", TransformRun("stream", "t.*", "t.$1.x", ("t.a", "t.b", "t.c")), 1 + 3),
        ("import", ImportRun("stream", "e.*", "i.{{wildcard(1)}}", ("e.a", "e.b")), 1 + 2),
        ("import", ImportRun("service", "e.*", "i.{{wildcard(1)}}", ("i.a",)), 1 + 1),
    ],
)
def test_a_cut_off_unit_counts_every_case_it_would_have_recorded_as_unknown(
    family: str, unit: object, planned: int
) -> None:
    """Every generated case ends in exactly one verdict: a unit its server cut short is not one unknown
    case standing for several, but each of the cases the unit would have recorded (the creation's or
    configuration's, then every subject's)."""
    chosen = FAMILIES[family]
    judged = chosen.unknown(_context(), for_version("2.14.5"), unit, GONE)
    assert verdicts(judged) == {"unknown": planned}
    assert {case.detail for case in cases_of(judged)} == {GONE}


class CountedServer(ScriptedServer):
    """A server that keeps running and counts how often it is asked whether it does."""

    def __init__(self) -> None:
        super().__init__(ServerDiedError("unused"), running=True)
        self.asked = 0

    def is_running(self) -> bool:
        self.asked += 1
        return super().is_running()


def test_a_server_that_answered_an_error_is_running_without_waiting_for_it_to_die(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A -ERR (a refused authorization) came from a running server: no grace for a death, so that a
    target that refuses every connection is judged unknown at once; a dropped connection waits."""
    monkeypatch.setenv(DEADLINE_ENV, "0.05")
    answered = CountedServer()
    error = WireError(f"{SERVER_ERROR}Authorization Violation")
    assert Session.of(answered).crash_of(str(error)) == ""
    assert answered.asked == 1
    dropped = CountedServer()
    assert Session.of(dropped).crash_of("the server closed the connection") == ""
    assert dropped.asked > 1
