"""Run one family on one target until its budget of cases is spent, recording every case.

Hypothesis draws each unit (`Family.units`) without shrinking: a campaign records, it never fails. A
unit's cases go to the run's records and the progress display (`suites.engine.progress`) as soon as it is
judged.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from nats_conformance.fixtures.session import Session
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
    that completed it; the units of a `rolling` family drawn apart (and its known units) run without
    batches, each slot taking the next unit as its own ends, each judged as it ends
    (`suites.engine.rolling`).

    Until a unit shows an unexpected divergence, the units are drawn by a copy of this process while
    this one runs those drawn before (`suites.engine.prefetch`): in a conforming run every score is
    nothing, so drawing apart spends the budget on the same kind of draws. From the first unexpected
    divergence on, the units of a `steered` family are drawn here, and their scores guide the draws.
    Without `draw_apart` (a scaled-out task, whose cluster's workers fill the cores) every unit is drawn
    here. With `guidance` (a target that reports the code it ran:
    `suites.families.library.AdapterSession`) every unit is drawn here and run alone, and its score is
    what `guidance()` says it reached that no unit before had (as HypoFuzz rewards new coverage)."""
    profile = session.profile
    done = 0
    drawn_units = 0
    seen: set[object] = set()
    pending: list[object] = []

    width = max(1, family.schedule.width(session))
    rolls = width > 1 and family.schedule.rolling and isinstance(session, Session)
    found = 0

    def recorded(judged: Judged) -> None:
        """Record a judged unit's cases, counting them and the classes of unexpected divergence."""
        nonlocal done, found
        cases, classes = sink.record(judged)
        done += cases
        found += classes

    def run_units(batch: Sequence[object], context: RunContext = context) -> float:
        """Check `batch` (side by side, as the family allows), recording each unit's cases in order;
        returns the distinct unexpected divergence classes they found."""
        if not batch:
            return 0.0
        before = found
        try:
            judged_units = check_many(family, session, context, batch)
        except ServerLostError as lost:
            sink.record(lost.judged)  # the unit that lost the server is recorded before the run ends
            raise
        for judged in judged_units:
            recorded(judged)
        return float(found - before)

    def run_rolling(units: Iterable[object], context: RunContext = context, *, drawn: bool = True) -> bool:
        """Run `units` side by side, each slot taking the next as its own ends (`Rolling`); `drawn` units
        are counted as drawn, and stop once the budget is spent or one showed an unexpected divergence
        (in a `steered` family), which returns True."""
        nonlocal drawn_units
        before = found
        on_server = cast(Family[Any, Any, Session], family)
        with Rolling(on_server, cast(Session, session), context, width, recorded) as rolling:
            for unit in units:
                if drawn and (done >= budget or (found > before and family.schedule.steered)):
                    break
                if drawn:
                    drawn_units += 1
                    seen.add(unit)
                rolling.submit(unit)
            rolling.finish()
        return found > before and family.schedule.steered

    def fresh(drawn: Sequence[object]) -> list[object]:
        """The drawn units not run before (Hypothesis draws some again: mutations of earlier ones copy
        a unit into its neighbour), counted as drawn; raises `Enough` once the budget is spent."""
        nonlocal drawn_units
        if done >= budget or drawn_units >= budget:
            raise Enough
        new = [unit for unit in dict.fromkeys(drawn) if unit not in seen]
        drawn_units += len(new)
        seen.update(new)
        return new

    def on_units(drawn: Sequence[object]) -> float:
        """Queue the fresh units and run them once `width` are queued, so that every batch runs side by
        side as many units as the family allows."""
        pending.extend(fresh(drawn))
        score = 0.0
        while len(pending) >= width:
            batch = pending[:width]
            del pending[:width]
            score += run_units(batch)
        return score

    if known:
        with context.expectations.known_part() as part:
            judged_apart = replace(context, expectations=part)
            if rolls:
                run_rolling(known, judged_apart, drawn=False)
            else:
                for start in range(0, len(known), width):
                    run_units(known[start : start + width], judged_apart)
    left = max(0, budget - done)

    if guidance is not None:
        reached = guidance

        def on_guided(drawn: Sequence[object]) -> float:
            """Run each fresh unit alone; its score is what it reached first."""
            score = 0.0
            for unit in fresh(drawn):
                run_units([unit])
                score += reached()
            return score

        reached()  # what running any unit reaches is no unit's finding
        family.draw(profile, Draws(left, seed, on_guided, lambda: drawn_units))
        return done

    def run_drawn_apart() -> bool:
        """Run the units the drawing process draws; True once one showed an unexpected divergence (in a
        `steered` family)."""
        nonlocal drawn_units
        with units_drawn_apart(family, profile, left, seed) as drawn_apart:
            if rolls:
                return run_rolling(drawn_apart)
            for unit in drawn_apart:
                if done >= budget:
                    break
                drawn_units += 1
                seen.add(unit)
                pending.append(unit)
                if len(pending) >= width:
                    batch = pending[:width]
                    del pending[:width]
                    if run_units(batch) and family.schedule.steered:
                        return True
        return False

    if draw_apart and not run_drawn_apart():
        run_units(pending[:])
        return done

    def tail() -> None:
        """Run the units a run of examples left queued."""
        run_units(pending[:])
        pending.clear()

    # Seeds other than the drawing process's; one unit per Hypothesis example, whatever `width`: an
    # example's drawing slows with its size, so a batch is filled from several examples.
    drawn = lambda: budget if done >= budget else drawn_units  # noqa: E731
    guided_seed = f"{seed} guided" if draw_apart else seed
    family.draw(profile, Draws(budget, guided_seed, on_units, drawn, after_run=tail))
    return done
