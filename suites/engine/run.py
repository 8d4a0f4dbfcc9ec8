"""Run one family on one target until its budget of cases is spent, recording every case.

Hypothesis draws each unit (`Family.units`) without shrinking: a campaign records, it never fails. A
unit's cases go to the run's records and the progress display (`suites.engine.progress`) as soon as it is
judged.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic

from nats_conformance.records.casefile import size
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.errors import raise_pending_interrupt
from nats_conformance.suites.engine.family import (
    Draws,
    Family,
    Judged,
    On,
    ServerLostError,
    check_many,
    record,
    verdicts,
)
from nats_conformance.suites.engine.prefetch import units_drawn_apart
from nats_conformance.suites.engine.progress import Progress
from nats_conformance.suites.engine.rolling import Rolling
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.strategies import Enough

KEPT_DIVERGENCES = 100
"""Unexpected divergences a campaign keeps in memory to show at the end (all are in the records)."""


@dataclass(frozen=True, slots=True)
class Sink:
    """Where a target's cases go: the run's records, the progress line, the first divergences and, for
    a family whose runs shrink what they find, the smallest case of each class of unexpected divergence
    (`suites.engine.shrink`)."""

    writer: RecordWriter | None
    """None: cases are judged and counted, never written (`engine-check`)."""
    progress: Progress
    diverged: list[Case]
    smallest: dict[str, Case] | None = None
    also: Callable[[Judged], object] = lambda judged: None
    """Called with every judged unit too (a run's divergence tally)."""

    def record(self, judged: Judged) -> tuple[int, int]:
        """Write every case of a judged unit; returns how many there were, and how many distinct classes
        of unexpected divergence they show. Then an interrupt that was lost on its way is raised."""
        if self.writer is not None:
            record(self.writer, judged)
        self.also(judged)
        raise_pending_interrupt()
        single = [item for item in judged if isinstance(item, Case) and item.verdict == "diverge"]
        self.diverged.extend(single[: max(0, KEPT_DIVERGENCES - len(self.diverged))])
        if self.smallest is not None:
            for case in single:
                kept = self.smallest.get(case.case_class)
                if kept is None or size(case) < size(kept):
                    self.smallest[case.case_class] = case
        counts = verdicts(judged)
        self.progress.add(counts)
        classes = {item.case_class for item in judged if isinstance(item, Case) and item.verdict == "diverge"}
        return counts.total(), len(classes)


def unwritten(*, also: Callable[[Judged], object] = lambda judged: None, shrinks: bool = False) -> Sink:
    """A sink that writes nothing and shows no progress, handing every judged unit to `also` (a check
    that counts, a benchmark); with `shrinks` it keeps each class's smallest divergence."""
    return Sink(None, Progress(stream=io.StringIO()), [], smallest={} if shrinks else None, also=also)


def run_family(
    family: Family[Any, Any, On],
    session: On,
    context: RunContext,
    *,
    budget: int,
    seed: int,
    sink: Sink,
    known: Sequence[object] = (),
    draw_apart: bool = True,
    guidance: Callable[[], float] | None = None,
) -> int:
    """Run the `known` units first (the listed findings' cases, as Hypothesis replays its database
    before it generates), then draw, execute, judge and record units until `budget` cases are recorded
    (or as many units were drawn, for a family whose units hold no case). Returns the number of cases.

    The budget goes where unexpected divergences show: each unit scores the distinct classes of them it
    found, and Hypothesis's target phase mutates the best-scoring units into more of their kind (more
    cases in a class once one shows up, and its neighbours). Known divergences score nothing, so that a
    conforming run spends its budget on new draws; a unit drawn again is not run again. A family that
    runs units side by side runs them a full batch at a time, and the batch's score goes to the draw
    that completed it; the units of a `Schedule.rolling` family drawn apart (and its known units) run
    without batches, each slot taking the next unit as its own ends, each judged as it ends
    (`suites.engine.rolling`).

    Until a unit shows an unexpected divergence, the units are drawn by a copy of this process while
    this one runs those drawn before (`suites.engine.prefetch`): in a conforming run every score is
    nothing, so drawing apart spends the budget on the same kind of draws. From the first unexpected
    divergence on, the units of a `Schedule.steered` family are drawn here, and their scores guide the
    draws. Without `draw_apart` (a scaled-out task, whose cluster's workers fill the cores) every unit is
    drawn here. With `guidance` (a target that reports the code it ran:
    `suites.families.library.AdapterSession`) every unit is drawn here and run alone, and its score is
    what `guidance()` says it reached that no unit before had (as HypoFuzz rewards new coverage)."""
    run = FamilyRun(family, session, context, budget=budget, seed=seed, sink=sink)
    if known:
        run.run_known(known)
    if guidance is not None:
        run.run_guided(guidance)
    elif draw_apart and not run.run_drawn_apart():
        run.run_units(run.pending[:])
    else:
        run.run_drawn_here(f"{seed} guided" if draw_apart else seed)
    return run.done


@dataclass(eq=False)
class FamilyRun(Generic[On]):
    """One family's run on one target (`run_family`): what it has recorded and drawn so far, and one
    method for each way its units are drawn (the known units, drawn apart, drawn here, guided)."""

    family: Family[Any, Any, On]
    session: On
    context: RunContext
    budget: int
    seed: int
    sink: Sink
    seen: set[object] = field(default_factory=set)
    pending: list[object] = field(default_factory=list)
    """Units drawn and not yet run: a batch runs once `width` are queued."""
    done: int = 0
    """Cases recorded."""
    found: int = 0
    """Classes of unexpected divergence recorded (a class counted once per unit)."""
    drawn: int = 0
    """Units drawn (the known units are not)."""
    reached: Callable[[], float] = lambda: 0.0
    width: int = field(init=False)
    """Units run side by side."""
    rolls: bool = field(init=False)
    steered: bool = field(init=False)

    def __post_init__(self) -> None:
        schedule = self.family.schedule
        self.width = max(1, schedule.width(self.session))
        self.rolls = self.width > 1 and schedule.rolling
        self.steered = schedule.steered

    def recorded(self, judged: Judged) -> None:
        """Record a judged unit's cases, counting them and the classes of unexpected divergence."""
        cases, classes = self.sink.record(judged)
        self.done += cases
        self.found += classes

    def run_units(self, batch: Sequence[object], context: RunContext | None = None) -> float:
        """Check `batch` (side by side, as the family allows), recording each unit's cases in order;
        returns the distinct unexpected divergence classes they found."""
        if not batch:
            return 0.0
        before = self.found
        try:
            judged_units = check_many(
                self.family, self.session, self.context if context is None else context, batch
            )
        except ServerLostError as lost:
            self.sink.record(lost.judged)  # the unit that lost the server is recorded before the run ends
            raise
        for judged in judged_units:
            self.recorded(judged)
        return float(self.found - before)

    def run_rolling(self, units: Iterable[object], context: RunContext, *, drawn: bool = True) -> bool:
        """Run `units` side by side, each slot taking the next as its own ends (`Rolling`); `drawn` units
        are counted as drawn, and stop once the budget is spent or one showed an unexpected divergence
        (in a `steered` family), which returns True."""
        before = self.found
        with Rolling(self.family, self.session, context, self.width, self.recorded) as rolling:
            for unit in units:
                if drawn and (self.done >= self.budget or (self.found > before and self.steered)):
                    break
                if drawn:
                    self.drawn += 1
                    self.seen.add(unit)
                rolling.submit(unit)
            rolling.finish()
        return self.found > before and self.steered

    def run_known(self, known: Sequence[object]) -> None:
        """Run the listed findings' units, judged by the expectations' known part, never counted as
        drawn."""
        with self.context.expectations.known_part() as part:
            judged_apart = replace(self.context, expectations=part)
            if self.rolls:
                self.run_rolling(known, judged_apart, drawn=False)
            else:
                for start in range(0, len(known), self.width):
                    self.run_units(known[start : start + self.width], judged_apart)

    def run_guided(self, reached: Callable[[], float]) -> None:
        """Draw every unit here and run each alone (`on_guided`), scored by what `reached` says it reached
        first."""
        self.reached = reached
        reached()  # what running any unit reaches is no unit's finding
        left = max(0, self.budget - self.done)
        self.family.draw(self.session.profile, Draws(left, self.seed, self.on_guided, self.units_drawn))

    def run_drawn_apart(self) -> bool:
        """Run the units the drawing process draws; True once one showed an unexpected divergence (in a
        `steered` family)."""
        left = max(0, self.budget - self.done)
        with units_drawn_apart(self.family, self.session.profile, left, self.seed) as drawn_apart:
            if self.rolls:
                return self.run_rolling(drawn_apart, self.context)
            for unit in drawn_apart:
                if self.done >= self.budget:
                    break
                self.drawn += 1
                self.seen.add(unit)
                self.pending.append(unit)
                if len(self.pending) >= self.width and self.run_units(self.next_batch()) and self.steered:
                    return True
        return False

    def run_drawn_here(self, seed: int | str) -> None:
        """Draw the units here from `seed` (other than the drawing process's), their scores guiding the
        draws: one unit per Hypothesis example, whatever `width` (an example's drawing slows with its
        size, so a batch is filled from several examples)."""
        self.family.draw(self.session.profile, Draws(self.budget, seed, self.on_units, self.spent, self.tail))

    def next_batch(self) -> list[object]:
        """The first `width` units queued, taken off the queue."""
        batch = self.pending[: self.width]
        del self.pending[: self.width]
        return batch

    def fresh(self, drawn: Sequence[object]) -> list[object]:
        """The drawn units not run before (Hypothesis draws some again: mutations of earlier ones copy
        a unit into its neighbour), counted as drawn; raises `Enough` once the budget is spent."""
        if self.done >= self.budget or self.drawn >= self.budget:
            raise Enough
        new = [unit for unit in dict.fromkeys(drawn) if unit not in self.seen]
        self.drawn += len(new)
        self.seen.update(new)
        return new

    def on_units(self, drawn: Sequence[object]) -> float:
        """Queue the fresh units and run them once `width` are queued, so that every batch runs side by
        side as many units as the family allows."""
        self.pending.extend(self.fresh(drawn))
        score = 0.0
        while len(self.pending) >= self.width:
            score += self.run_units(self.next_batch())
        return score

    def on_guided(self, drawn: Sequence[object]) -> float:
        """Run each fresh unit alone; its score is what it reached first."""
        score = 0.0
        for unit in self.fresh(drawn):
            self.run_units([unit])
            score += self.reached()
        return score

    def tail(self) -> None:
        """Run the units a run of examples left queued."""
        self.run_units(self.pending[:])
        self.pending.clear()

    def units_drawn(self) -> int:
        return self.drawn

    def spent(self) -> int:
        """The units drawn, or the whole budget once its cases are recorded."""
        return self.budget if self.done >= self.budget else self.drawn
