"""Units drawn by a copy of the process (`suites.engine.prefetch`) are the units `run_family` draws
itself when every score is nothing, in the same order."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import strategies as st

from suites.engine.prefetch import DrawingError, units_drawn_apart
from suites.strategies import Enough, runs_of_units

UNITS = st.tuples(st.integers(0, 50), st.sampled_from("abc"))


def drawn_here(budget: int, seed: int) -> list[object]:
    """What `run_family` draws itself (`runs_of_units`) while every score is nothing."""
    units: list[object] = []

    def on_units(drawn: Sequence[object]) -> float:
        if len(units) >= budget:
            raise Enough
        units.extend(unit for unit in drawn if unit not in units)
        return 0.0

    runs_of_units(UNITS, budget, random.Random(seed), on_units, lambda: len(units))
    return units


@pytest.mark.parametrize("seed", [1, 2])
def test_units_drawn_apart_are_the_units_drawn_here_and_the_generator_is_left_as_it_was(seed: int) -> None:
    rng = random.Random(seed)
    with units_drawn_apart(UNITS, 120, rng) as units:
        apart = list(units)
    assert apart == drawn_here(120, seed)
    assert len(apart) == len(set(apart)) == 120
    assert rng.getstate() == random.Random(seed).getstate()


def test_a_small_space_ends_when_a_run_draws_nothing_new() -> None:
    with units_drawn_apart(st.integers(0, 9), 1000, random.Random(3)) as units:
        assert sorted(units) == list(range(10))


def test_a_drawing_process_that_fails_is_one_error() -> None:
    with (
        units_drawn_apart(st.integers().map(lambda n: 1 // 0), 10, random.Random(0)) as units,
        pytest.raises(DrawingError, match="the drawing process exited with status 1"),
    ):
        list(units)
