"""Units run side by side on one server (`check_many`): each is judged in order from its own execution; a
unit the server cut short runs again alone after a restart, so every unit ends in exactly one judged set
of cases. No live server: a scripted family and backend stand in."""

from __future__ import annotations

import io
import itertools
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import strategies as st

from nats_conformance.fixtures.errors import ServerDiedError
from nats_conformance.fixtures.session import RESTARTED, Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.profiles import ReleaseProfile, for_version
from nats_conformance.suites.engine import run
from nats_conformance.suites.engine.family import (
    Description,
    Schedule,
    TargetServer,
    beside,
    cases_of,
    check_many,
)
from nats_conformance.suites.engine.progress import Progress
from nats_conformance.suites.engine.rolling import Rolling
from nats_conformance.suites.engine.run import Sink
from nats_conformance.suites.engine.verdicts import RunContext, make_case


class Backend:
    name = "process"
    url = "nats://127.0.0.1:1"
    version = "2.14.5"

    def __init__(self) -> None:
        self.running = True
        self.starts = 0

    def start(self, config: object) -> None:
        self.starts += 1
        self.running = True

    def stop(self) -> None:
        self.running = False

    def is_running(self) -> bool:
        return self.running

    def logs(self) -> str:
        return ""


@dataclass
class Family(TargetServer):
    """Executes a unit (an int) by waiting a little; unit `crash` kills the server on its first run."""

    crash: int = -1
    schedule: Schedule[Session] = Schedule(beside, 4)
    name: str = "scripted"
    description: Description = Description("an int, waited on", 10)
    features: tuple[str, ...] = ("mapping",)
    runs: list[tuple[int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    meet: threading.Barrier | None = None
    """When set, each unit waits there for the others: units run one after another break it."""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[int]:
        return st.integers(0, 9)

    def unit_of(self, case: CaseFile) -> int:
        return int(case.subject)

    def execute(self, session: Session, unit: int) -> str:
        with self.lock:
            self.runs.append((unit, threading.current_thread().name))
            first = [run for run, _ in self.runs].count(unit) == 1
        if self.meet is not None:
            self.meet.wait(timeout=30)
        else:
            time.sleep(0.05)
        if unit == self.crash and first:
            session.server.stop()
            raise ServerDiedError("nats-server on port 1 is not running")
        return f"seen {unit}"

    def judge(self, context: RunContext, profile: ReleaseProfile, unit: int, observed: str) -> list[Case]:
        return [_case(context, str(unit), observed, "")]

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: int, reason: str) -> list[Case]:
        return [_case(context, str(unit), "", reason)]


def _case(context: RunContext, subject: str, observed: str, reason: str) -> Case:
    return make_case(
        context,
        feature="mapping",
        functions=(),
        source="",
        destination="",
        subject=subject,
        expected=f"seen {subject}",
        observed=observed,
        difference="unknown" if reason else "",
        detail=reason,
    )


def _run(family: Family, units: list[int]) -> tuple[list[Case], Session, Backend]:
    counter = itertools.count()
    context = RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))
    backend = Backend()
    session = Session(backend, for_version("2.14.5"))  # type: ignore[arg-type]
    judged = check_many(family, session, context, units)
    assert len(judged) == len(units)
    return [case for unit in judged for case in cases_of(unit)], session, backend


def test_units_run_at_once_and_are_judged_in_their_order() -> None:
    family = Family(meet=threading.Barrier(4))  # all four must be running at once to pass it
    cases, _, backend = _run(family, [3, 1, 2, 0])
    assert [case.subject for case in cases] == ["3", "1", "2", "0"]
    assert {case.verdict for case in cases} == {"agree"}
    assert len({thread for _, thread in family.runs}) == 4
    assert backend.starts == 0


def test_a_unit_that_stops_the_server_runs_again_alone_after_a_restart() -> None:
    family = Family(crash=2)
    cases, session, backend = _run(family, [1, 2, 3])
    assert [case.subject for case in cases] == ["1", "2", "3"]
    assert [case.verdict for case in cases] == ["agree", "agree", "agree"]
    assert [unit for unit, _ in family.runs].count(2) == 2  # once side by side, once alone
    assert backend.starts == 1
    assert backend.running
    assert len(session.restarts) == 1
    assert session.restarts[0].startswith(RESTARTED)


def test_more_units_at_once_than_the_family_has_room_for_are_refused_before_any_runs() -> None:
    family = Family()
    with pytest.raises(ValueError, match="6 units at once, where scripted has room for 4"):
        _run(family, [5, 6, 7, 8, 9, 0])
    assert family.runs == []


def _campaign(family: Family, backend: Backend) -> tuple[int, list[Case]]:
    """`run_family` of `family` on a scripted server: the cases it counted, and those it judged in order."""
    counter = itertools.count()
    context = RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))
    session = Session(backend, for_version("2.14.5"))  # type: ignore[arg-type]
    judged: list[Case] = []
    sink = Sink(None, Progress(stream=io.StringIO()), [], also=lambda unit: judged.extend(cases_of(unit)))
    done = run.run_family(family, session, context, budget=10, seed=1, sink=sink)
    return done, judged


@dataclass
class Holding(Family):
    """`Family` whose unit `held` waits until `others` units have ended (in a batch of four it would
    wait for ever: the other three are all that runs beside it)."""

    held: int = 0
    others: int = 6
    ended: list[int] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)

    def execute(self, session: Session, unit: int) -> str:
        with self.lock:
            self.runs.append((unit, threading.current_thread().name))
        if unit == self.held:
            assert self.released.wait(10), "no other unit ended while the held one ran"
        with self.lock:
            self.ended.append(unit)
            if len(self.ended) >= self.others:
                self.released.set()
        return f"seen {unit}"


def test_rolling_slots_take_the_next_unit_while_a_slow_one_runs() -> None:
    """Side by side without batches (`suites.engine.rolling`): while unit 0 runs, the three other slots
    take unit after unit (unit 0 ends only once six others have); every unit is judged once."""
    family = Holding()
    counter = itertools.count()
    context = RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))
    session = Session(Backend(), for_version("2.14.5"))  # type: ignore[arg-type]
    judged: list[Case] = []
    with Rolling(family, session, context, 4, lambda unit: judged.extend(cases_of(unit))) as rolling:
        for unit in range(10):
            rolling.submit(unit)
        rolling.finish()
    assert family.ended.index(0) >= family.others
    assert sorted(int(case.subject) for case in judged) == list(range(10))


def test_a_campaign_of_a_rolling_family_runs_every_drawn_unit_once() -> None:
    family = Holding(held=-1, others=0)
    done, judged = _campaign(family, Backend())
    assert done == 10
    assert sorted(int(case.subject) for case in judged) == sorted(unit for unit, _ in family.runs)
    assert sorted(unit for unit, _ in family.runs) == list(range(10))


def test_a_crash_among_rolling_units_goes_to_the_unit_that_causes_it() -> None:
    """A server error stops new units until the running ones have ended; then, as after a batch, the
    server is restarted once and each cut unit runs again alone, where the one that kills the server is
    told so."""
    family = Crashing(crash=2)
    backend = Backend()
    backend.logs = lambda: "" if backend.running else "panic: runtime error"  # type: ignore[method-assign]
    done, judged = _campaign(family, backend)
    assert done == 10
    observed = {case.subject: case.observed for case in judged}
    assert observed.pop("2") == "crashed: panic: runtime error"
    assert observed == {subject: f"seen {subject}" for subject in observed}
    assert backend.running


def test_a_campaign_fills_every_batch_with_units_not_run_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hypothesis draws some units again (its mutations copy a unit into its neighbour); the units not run
    before wait until a whole batch of them can run side by side (a family whose batch shares server
    actions: not `rolling`)."""
    family = Family(schedule=Schedule(beside, 4, rolling=False))
    batches: list[int] = []
    counter = itertools.count()
    context = RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))
    session = Session(Backend(), for_version("2.14.5"))  # type: ignore[arg-type]
    writer = RecordWriter(tmp_path, run_id="run")
    sink = Sink(writer, Progress(stream=io.StringIO()), [])

    def counted(family: Family, session: Session, context: RunContext, units: list[int]) -> object:
        batches.append(len(units))
        return check_many(family, session, context, units)

    monkeypatch.setattr(run, "check_many", counted)
    try:
        done = run.run_family(family, session, context, budget=10, seed=1, sink=sink)
    finally:
        writer.close()
    assert done == sum(batches) == 10  # every one of the ten units, each once
    assert batches[:-1] == [4] * (len(batches) - 1)
    assert sorted(unit for unit, _ in family.runs) == list(range(10))


@dataclass
class Crashing(Family):
    """`Family` whose unit `crash` kills the server each time it runs, and which, like a family that knows
    its crashes (stream-transform), asks the session whether the server died of its unit."""

    def execute(self, session: Session, unit: int) -> str:
        with self.lock:
            self.runs.append((unit, threading.current_thread().name))
        time.sleep(0.05)
        if unit == self.crash:
            session.server.stop()
        time.sleep(0.05)  # every unit of the batch now sees the dead server
        panic = session.crash_of("connection refused" if not session.server.is_running() else "")
        return f"crashed: {panic}" if panic else f"seen {unit}"


def test_a_crash_among_units_side_by_side_goes_to_the_unit_that_causes_it() -> None:
    """No unit's thread restarts the server (two restarting it at once wrote its configuration file at
    once): the engine restarts it once the batch has ended, and each unit runs again alone, where the one
    that kills the server is told so and the others see their own runs."""
    family = Crashing(crash=2)
    backend = Backend()
    backend.logs = lambda: "" if backend.running else "panic: runtime error"  # type: ignore[method-assign]
    counter = itertools.count()
    context = RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))
    session = Session(backend, for_version("2.14.5"))  # type: ignore[arg-type]
    judged = check_many(family, session, context, [1, 2, 3])
    cases = [case for unit in judged for case in cases_of(unit)]
    assert [case.observed for case in cases] == ["seen 1", "crashed: panic: runtime error", "seen 3"]
    assert backend.starts == 2  # once by the engine after the batch, once after the unit alone
    assert backend.running
    assert len(session.restarts) == 1
