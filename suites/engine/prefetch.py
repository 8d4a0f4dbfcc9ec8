"""A family's units drawn by a copy of this process while this one runs the ones drawn before.

Drawing is Python's work and so is most of running a unit (publishing, judging, recording): one
process does one at a time, whatever the machine's cores. The copy (`fixtures.children.fork_child`)
draws the units Hypothesis generates from a seed, each once, and pickles them into a pipe that lets it
run ahead; the run reads them in order. What it draws does not depend on what the run finds, so a
run whose units show something unexpected goes back to drawing its units itself
(`suites.engine.run.run_family`), where each unit's score reaches Hypothesis.
"""

from __future__ import annotations

import contextlib
import pickle
import random
from collections.abc import Iterator, Sequence
from typing import IO, Any

from hypothesis import strategies as st

from fixtures.children import Forked, fork_child
from fixtures.clients.adapter import PIPE_SIZE
from reference.errors import ConformanceError
from suites.strategies import Enough, runs_of_units


class DrawingError(ConformanceError):
    """The drawing process ended before it had drawn every unit."""


def draw_units(strategy: st.SearchStrategy[Any], budget: int, rng: random.Random, out: IO[bytes]) -> None:
    """Up to `budget` distinct units of `strategy`, drawn as `run_family` draws them itself
    (`runs_of_units`) while every score is nothing, pickled to `out` one by one, then None."""
    seen: set[object] = set()

    def emit(drawn: Sequence[object]) -> float:
        if len(seen) >= budget:
            raise Enough
        for unit in drawn:
            if unit not in seen:
                seen.add(unit)
                pickle.dump(unit, out, pickle.HIGHEST_PROTOCOL)
        out.flush()
        return 0.0

    runs_of_units(strategy, budget, rng, emit, lambda: len(seen))
    pickle.dump(None, out, pickle.HIGHEST_PROTOCOL)


class DrawnUnits:
    """The units a drawing process sends, in order (`units_drawn_apart`)."""

    def __init__(self, child: Forked) -> None:
        self.child = child

    def __iter__(self) -> DrawnUnits:
        return self

    def __next__(self) -> Any:
        """The next unit, once the drawing process has drawn it."""
        try:
            unit = pickle.load(self.child.stdout)
        except EOFError:
            raise DrawingError(f"the drawing process exited with status {self.child.wait()}") from None
        if unit is None:
            raise StopIteration
        return unit


@contextlib.contextmanager
def units_drawn_apart(
    strategy: st.SearchStrategy[Any], budget: int, rng: random.Random
) -> Iterator[DrawnUnits]:
    """The units `draw_units` draws, drawn by a copy of this process while the caller runs the ones
    before (the copy draws from a copy of `rng`, which is left as it was); the copy is killed when the
    block ends."""
    child = fork_child(lambda out: draw_units(strategy, budget, rng, out), pipe_size=PIPE_SIZE)
    try:
        yield DrawnUnits(child)
    finally:
        child.kill()
