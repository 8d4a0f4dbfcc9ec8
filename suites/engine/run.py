"""Run one family on one target until its budget of cases is spent, recording every case.

Hypothesis draws each unit (`Family.units`) without shrinking: a campaign records, it never fails. A
unit's cases go to the run's records and the progress display (`suites.engine.progress`) as soon as it is
judged.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from fixtures.session import Session
from records.schema import Case
from records.writer import RecordWriter
from reference.errors import raise_pending_interrupt
from suites.differential import RunContext
from suites.engine.family import Family, Judged, ServerLostError, check, record, verdicts
from suites.engine.progress import Progress
from suites.strategies import Enough, run_batches

KEPT_DIVERGENCES = 100
"""Unexpected divergences a campaign keeps in memory to show at the end (all are in the records)."""


@dataclass(frozen=True, slots=True)
class Sink:
    """Where a target's cases go: the run's records, the progress line, and the first divergences."""

    writer: RecordWriter
    progress: Progress
    diverged: list[Case]

    def record(self, judged: Judged) -> tuple[int, int]:
        """Write every case of a judged unit; returns how many there were, and how many distinct classes
        of unexpected divergence they show. Then an interrupt that was lost on its way is raised."""
        record(self.writer, judged)
        raise_pending_interrupt()
        single = [item for item in judged if isinstance(item, Case) and item.verdict == "diverge"]
        self.diverged.extend(single[: max(0, KEPT_DIVERGENCES - len(self.diverged))])
        counts = verdicts(judged)
        self.progress.add(counts)
        classes = {item.case_class for item in judged if isinstance(item, Case) and item.verdict == "diverge"}
        return counts.total(), len(classes)


def run_family(
    family: Family[Any, Any],
    session: Session,
    context: RunContext,
    *,
    budget: int,
    seed: int,
    sink: Sink,
    known: Sequence[object] = (),
) -> int:
    """Run the `known` units first (the listed findings' cases, as Hypothesis replays its database
    before it generates), then draw, execute, judge and record units until `budget` cases are recorded
    (or as many units were drawn, for a family whose units hold no case). Returns the number of cases.

    The budget goes where unexpected divergences show: each unit scores the distinct classes of them it
    found, and Hypothesis's target phase mutates the best-scoring units into more of their kind (more
    cases in a class once one shows up, and its neighbours). Known divergences score nothing, so that a
    conforming run spends its budget on new draws; a unit drawn again is not run again."""
    rng = random.Random(seed)
    strategy = family.units(session.profile)
    done = 0
    units = 0
    seen: set[object] = set()

    def run_unit(unit: object, context: RunContext = context) -> float:
        nonlocal done, units
        if unit in seen:  # Hypothesis draws some units again (mutations of earlier ones): run each once
            return 0.0
        units += 1
        seen.add(unit)
        try:
            judged = check(family, session, context, unit)
        except ServerLostError as lost:
            sink.record(lost.judged)  # the unit that lost the server is recorded before the run ends
            raise
        cases, classes = sink.record(judged)
        done += cases
        return float(classes)

    def on_unit(unit: object) -> float:
        if done >= budget or units >= budget:
            raise Enough
        return run_unit(unit)

    if known:
        with context.expectations.known_part() as part:
            judged_apart = replace(context, expectations=part)
            for unit in known:
                run_unit(unit, judged_apart)
    draw: Callable[[st.DataObject], object] = lambda data: data.draw(strategy)  # noqa: E731
    while done < budget and units < budget:
        before = units
        run_batches(draw, budget - units, rng.randrange(2**32), on_unit)
        if units == before:
            break
    return done
