"""`run_batches`, the campaign's loop over Hypothesis-drawn batches: an error a batch raises ends the run
as that error, raised once, never as a Hypothesis report of a flaky test (a full disk fails a part's
write once, and the batch Hypothesis runs again to confirm it records nothing)."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from nats_conformance.suites.strategies import Enough, run_batches


class DiskFull(OSError):
    pass


def test_an_error_of_a_batch_ends_the_run_as_itself_after_one_call() -> None:
    calls: list[int] = []

    def on_batch(batch: int) -> float:
        calls.append(batch)
        if len(calls) == 3:
            raise DiskFull(28, "No space left on device")
        return 0.0

    with pytest.raises(DiskFull, match="No space left on device"):
        run_batches(lambda data: data.draw(st.integers()), 50, 7, on_batch)
    assert len(calls) == 3


def test_enough_ends_the_run_quietly() -> None:
    calls: list[int] = []

    def on_batch(batch: int) -> float:
        calls.append(batch)
        if len(calls) == 5:
            raise Enough
        return float(batch % 3)

    run_batches(lambda data: data.draw(st.integers(0, 100)), 50, 7, on_batch)
    assert len(calls) == 5


def test_no_batch_is_drawn_after_the_run_ended_even_mid_climb() -> None:
    """Scored batches send Hypothesis's target phase climbing; the batch that raises `Enough` is the last
    one drawn (Hypothesis drew it again to confirm the failure, and a climb under way went on drawing
    whole batches, each failing again: minutes of a partition run)."""
    draws: list[list[int]] = []
    calls: list[list[int]] = []

    def draw(data: st.DataObject) -> list[int]:
        draws.append(data.draw(st.lists(st.integers(0, 1000), min_size=20, max_size=20)))
        return draws[-1]

    def on_batch(batch: list[int]) -> float:
        calls.append(batch)
        if len(calls) == 120:
            raise Enough
        return float(sum(batch))

    run_batches(draw, 400, 3, on_batch)
    assert len(calls) == 120
    assert len(draws) == 120
