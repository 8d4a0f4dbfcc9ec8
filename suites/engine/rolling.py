"""Units side by side without batches: each of a family's slots takes the next unit as soon as its unit
has ended (`Schedule.rolling`).

Run a batch at a time (`suites.engine.family.check_many`), units side by side wait for the slowest of
their batch: a stream-transform source the server never starts copying holds its unit for two seconds,
and its 31 neighbours' slots with it (five such units of 333 were 10 s of an 11 s run). Here a slot that
frees starts the next unit at once, and each unit is judged as it ends (so that the run's count of cases,
which its budget is checked against, never waits for a slow unit). A server error cuts the run the way it
cuts a batch: no unit starts until every running one has ended, then `judge_outcomes` restarts the server
and runs each cut unit again alone, in the order they were handed in.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Generic

from nats_conformance.fixtures.errors import ServerError
from nats_conformance.suites.engine.family import (
    Family,
    Judged,
    Observed,
    On,
    ServerLostError,
    Unit,
    in_slot,
    judge_outcomes,
)
from nats_conformance.suites.engine.verdicts import RunContext


class Rolling(Generic[Unit, Observed, On]):
    """`width` slots of `family` on `session`; `submit` hands a unit to the next free slot (waiting for
    one), `finish` waits for every unit. Each judged unit goes to `on_judged`; a `ServerLostError` hands the
    cases it holds to `on_judged` before it is raised."""

    def __init__(
        self,
        family: Family[Unit, Observed, On],
        session: On,
        context: RunContext,
        width: int,
        on_judged: Callable[[Judged], object],
    ) -> None:
        self.family = family
        self.session = session
        self.context = context
        self.on_judged = on_judged
        self._pool = ThreadPoolExecutor(width, thread_name_prefix=f"{family.name}-slot")
        self._free = list(range(width))[::-1]
        self._running: dict[Future[Any], tuple[int, int]] = {}
        """Each running unit's (number, slot)."""
        self._units: dict[int, Unit] = {}
        self._outcomes: dict[int, Observed | ServerError] = {}
        self._submitted = 0
        self._cut = False

    def __enter__(self) -> Rolling[Unit, Observed, On]:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, unit: Unit) -> None:
        """Start `unit` in the first slot that frees (after a cut, once the cut units were run again)."""
        while self._cut or not self._free:
            if self._cut:
                self._settle()
            else:
                self._collect(FIRST_COMPLETED)
        slot = self._free.pop()
        number, self._submitted = self._submitted, self._submitted + 1
        self._units[number] = unit
        future = self._pool.submit(in_slot, self.family, self.session, slot, unit, True)
        self._running[future] = (number, slot)

    def finish(self) -> None:
        """Wait for every running unit and judge the rest."""
        self._settle()

    def _collect(self, when: str) -> None:
        """Wait for running units to end (`FIRST_COMPLETED` or `ALL_COMPLETED`), free their slots and judge
        each that ran to its end; one a server error cut short waits for `_settle`."""
        ended, _ = wait(list(self._running), return_when=when)
        for future in ended:
            number, slot = self._running.pop(future)
            self._free.append(slot)
            outcome = future.result()
            if isinstance(outcome, ServerError):
                self._outcomes[number] = outcome
                self._cut = True
                continue
            unit = self._units.pop(number)
            self.on_judged(self.family.judge(self.context, self.session.profile, unit, outcome))

    def _settle(self) -> None:
        """Wait for every running unit, then judge those a server error cut short as a batch does
        (`judge_outcomes`: the server restarted once if it stopped, each cut unit run again alone)."""
        if self._running:
            self._collect(ALL_COMPLETED)
        numbers = sorted(self._outcomes)
        units = [self._units.pop(number) for number in numbers]
        outcomes = [self._outcomes.pop(number) for number in numbers]
        self._cut = False
        try:
            judged_units = judge_outcomes(self.family, self.session, self.context, units, outcomes)
        except ServerLostError as lost:
            self.on_judged(lost.judged)
            raise
        for judged in judged_units:
            self.on_judged(judged)
