"""Units drawn by a copy of the process (`suites.engine.prefetch`) are the units `run_family` draws
itself when every score is nothing, in the same order: a server family's and the library family's."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest
from hypothesis import strategies as st

from nats_conformance.reference.profiles import NEWEST, ReleaseProfile
from nats_conformance.suites.drawing import questions_of
from nats_conformance.suites.engine import prefetch
from nats_conformance.suites.engine.family import Draws, TargetServer
from nats_conformance.suites.engine.prefetch import DrawingError, drawn_apart, units_drawn_apart
from nats_conformance.suites.families import LIBRARY
from nats_conformance.suites.strategies import Enough, runs_of_units

UNITS = st.tuples(st.integers(0, 50), st.sampled_from("abc"))


class Drawing(TargetServer):
    """A family of `strategy`'s units (only its drawing is used here)."""

    def __init__(self, strategy: st.SearchStrategy[object]) -> None:
        self.strategy = strategy

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[object]:
        return self.strategy


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
def test_units_drawn_apart_are_the_units_drawn_here(seed: int) -> None:
    with units_drawn_apart(Drawing(UNITS), NEWEST, 120, seed) as units:
        apart = list(units)
    assert apart == drawn_here(120, seed)
    assert len(apart) == len(set(apart)) == 120


def test_the_library_familys_questions_drawn_apart_are_those_drawn_here() -> None:
    here: list[object] = []
    LIBRARY.draw(NEWEST, Draws(3000, 5, lambda units: here.extend(units) or 0.0, lambda: 0))
    with units_drawn_apart(LIBRARY, NEWEST, 3000, 5) as units:
        apart = list(units)
    assert [questions_of(unit) for unit in apart] == [questions_of(unit) for unit in here]
    assert sum(len(unit.values) for unit in apart) == 3000


def test_a_small_space_ends_when_a_run_draws_nothing_new() -> None:
    with units_drawn_apart(Drawing(st.integers(0, 9)), NEWEST, 1000, 3) as units:
        assert sorted(units) == list(range(10))


def test_a_drawing_process_that_fails_is_one_error() -> None:
    with (
        units_drawn_apart(Drawing(st.integers().map(lambda n: 1 // 0)), NEWEST, 10, 0) as units,
        pytest.raises(DrawingError, match="the drawing process exited with status 1"),
    ):
        list(units)


def test_units_read_before_are_read_again_without_drawing_and_a_longer_read_draws_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same family, profile, budget and seed give the same units: the units one run read come again
    without a drawing process, and reading past them draws the rest, skipping what was read."""
    family = Drawing(UNITS)
    with units_drawn_apart(family, NEWEST, 120, 7) as units:
        first = list(itertools.islice(units, 50))
    processes = []
    monkeypatch.setattr(prefetch, "drawn_apart", lambda draw: processes.append(draw) or drawn_apart(draw))
    with units_drawn_apart(family, NEWEST, 120, 7) as units:
        assert list(itertools.islice(units, 50)) == first
    assert processes == []
    with units_drawn_apart(family, NEWEST, 120, 7) as units:
        assert list(units) == drawn_here(120, 7)
    assert len(processes) == 1
    with units_drawn_apart(Drawing(UNITS), NEWEST, 120, 7) as units:  # another family: drawn anew
        assert list(units) == drawn_here(120, 7)
    assert len(processes) == 2
