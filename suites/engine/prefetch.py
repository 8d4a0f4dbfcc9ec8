"""What a run draws, drawn by a copy of this process while this one works on what was drawn before.

Drawing is Python's work and so is most of running a unit or asking a question (publishing, judging,
recording): one process does one at a time, whatever the machine's cores. The copy
(`fixtures.children.fork_child`) runs the drawing and pickles each thing it draws into a pipe that lets
it run ahead; the run reads them in order (`drawn_apart`). A family's units are drawn from a seed, each
once (`units_drawn_apart`); what they are does not depend on what the run finds, so a run whose units
show something unexpected goes back to drawing its units itself (`suites.engine.run.run_family`), where
each unit's score reaches Hypothesis.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from nats_conformance.fixtures.children import Forked, fork_child
from nats_conformance.fixtures.clients.adapter import PIPE_SIZE
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.suites.engine.family import Draws, Family
from nats_conformance.suites.strategies import Enough

Emit = Callable[[Any], None]
"""What a drawing hands each thing it draws to."""


class DrawingError(ConformanceError):
    """The drawing process ended before it had drawn everything."""


class Drawn:
    """What a drawing process sends, in order (`drawn_apart`)."""

    def __init__(self, child: Forked) -> None:
        self.child = child

    def __iter__(self) -> Drawn:
        return self

    def __next__(self) -> Any:
        """The next thing drawn, once the drawing process has drawn it."""
        try:
            drawn = pickle.load(self.child.stdout)
        except EOFError:
            raise DrawingError(f"the drawing process exited with status {self.child.wait()}") from None
        if drawn is None:
            raise StopIteration
        return drawn


@contextlib.contextmanager
def drawn_apart(draw: Callable[[Emit], None]) -> Iterator[Drawn]:
    """What `draw` hands to the function it is given (never None), drawn by a copy of this process while
    the caller works on what came before (a pipe of `PIPE_SIZE` bytes lets the copy run ahead); the copy
    is killed when the block ends. Reading raises `DrawingError` when the copy ends before `draw` has
    returned."""

    def work(out: IO[bytes]) -> None:
        def emit(drawn: Any) -> None:
            pickle.dump(drawn, out, pickle.HIGHEST_PROTOCOL)
            out.flush()

        draw(emit)
        emit(None)

    child = fork_child(work, pipe_size=PIPE_SIZE)
    try:
        yield Drawn(child)
    finally:
        child.kill()


def draw_units(
    family: Family[Any, Any, Any], profile: ReleaseProfile, budget: int, seed: int, emit: Emit
) -> None:
    """Up to `budget` distinct units of `family`, drawn as `run_family` draws them itself while every
    score is nothing, handed to `emit` one by one."""
    seen: set[object] = set()

    def on_units(drawn: Sequence[object]) -> float:
        if len(seen) >= budget:
            raise Enough
        for unit in drawn:
            if unit not in seen:
                seen.add(unit)
                emit(unit)
        return 0.0

    family.draw(profile, Draws(budget, seed, on_units, lambda: len(seen)))


@contextlib.contextmanager
def units_drawn_apart(
    family: Family[Any, Any, Any], profile: ReleaseProfile, budget: int, seed: int
) -> Iterator[Iterator[Any]]:
    """The units `draw_units` draws, drawn apart (`drawn_apart`). They depend on the family, the
    profile, the budget and the seed alone, so the units a run read are kept (the latest `KEPT`
    drawings), and a later run in this process asking for the same reads those again without drawing;
    only one that reads past them starts a drawing process, which skips what was kept. A mutants run's
    judge runs each family on one mutant after another with the same seed."""
    key = (id(family), profile, budget, seed)
    _, kept = _DRAWINGS.get(key, (family, ()))
    units = list(kept)
    with contextlib.ExitStack() as stack:

        def read() -> Iterator[Any]:
            yield from kept
            drawn = stack.enter_context(
                drawn_apart(lambda emit: draw_units(family, profile, budget, seed, emit))
            )
            collections.deque(itertools.islice(drawn, len(kept)), maxlen=0)
            for unit in drawn:
                units.append(unit)
                yield unit

        try:
            yield read()
        finally:
            if len(units) > len(kept):
                _DRAWINGS.pop(key, None)
                _DRAWINGS[key] = (family, tuple(units))
                while len(_DRAWINGS) > KEPT:
                    del _DRAWINGS[next(iter(_DRAWINGS))]


KEPT = 32
"""Drawings `units_drawn_apart` keeps, the latest."""
_DRAWINGS: dict[tuple[int, ReleaseProfile, int, int], tuple[Family[Any, Any, Any], tuple[Any, ...]]] = {}
"""Per (family's id, profile, budget, seed): the family, kept so that no other object takes its id while
the entry lasts, and the units read."""
