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
