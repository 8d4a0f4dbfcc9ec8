"""Coverage-guided drawing of the library family: the drawing (`suites.drawing.draw_families`) shares the
questions out over the strata alike whatever the scores, and Hypothesis's target phase climbs the score;
a guided run (`run_family` with `guidance`) asks each family alone and scores it once asked. The score
of the drawing's tests counts function calls in a family's mapping: the drawing's own contract, without
an engine (the live engine's `coverage` operation is tested in tests/live/test_coverage_campaign.py)."""

from __future__ import annotations

import collections
import itertools
import shlex
import sys
from pathlib import Path

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.profiles import NEWEST
from nats_conformance.reference.protocol import TransformQuestion
from nats_conformance.suites.drawing import (
    EDGE_FAMILY,
    EDGES,
    STRATA,
    QuestionFamily,
    draw_families,
    questions_of,
)
from nats_conformance.suites.engine.family import Judged, cases_of
from nats_conformance.suites.engine.run import run_family, unwritten
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import LIBRARY
from nats_conformance.suites.families.library import BACKEND, AdapterSession
from nats_conformance.suites.strategies import ODD_SOURCES

CORRECT = (
    f"{shlex.quote(sys.executable)} {Path(__file__).resolve().parents[2] / 'examples/adapters/correct.py'}"
)


def drawn(cases: int, seed: int, score: bool) -> list[QuestionFamily]:
    """The families a drawing hands over, scored by their mapping's function calls when `score`."""
    families: list[QuestionFamily] = []

    def ask(family: QuestionFamily) -> float:
        families.append(family)
        template = family.template
        return (
            float(template.destination.count("{{"))
            if score and isinstance(template, TransformQuestion)
            else 0.0
        )

    draw_families(NEWEST, cases, seed, ask)
    return families


def kinds(families: list[QuestionFamily]) -> collections.Counter[str]:
    return collections.Counter(q.op for family in families for q in questions_of(family))


def mappings(families: list[QuestionFamily]) -> list[tuple[TransformQuestion, int]]:
    """The mapping of each transform family drawn, and how many questions it has."""
    return [
        (family.template, len(family.values))
        for family in families
        if isinstance(family.template, TransformQuestion)
    ]


def test_a_guided_run_asks_each_family_alone_then_scores_it() -> None:
    calls: list[str] = []
    asked: list[int] = []

    def judged(unit: Judged) -> None:
        calls.append("judged")
        asked.append(len(cases_of(unit)))

    def reached() -> float:
        calls.append("reached")
        return 0.0

    with AdapterProcess(CORRECT) as adapter:
        context = RunContext(
            "test", "correct", NEWEST.name, BACKEND, Expectations(), itertools.count().__next__
        )
        session = AdapterSession(adapter, NEWEST)
        done = run_family(
            LIBRARY, session, context, budget=3000, seed=1, sink=unwritten(also=judged), guidance=reached
        )
    assert calls[0] == "reached"  # before any family: what every answer runs
    assert calls[1:] == ["judged", "reached"] * len(asked)
    assert done == sum(asked) == 3000


def test_guided_and_unguided_drawings_share_the_questions_out_alike() -> None:
    guided = drawn(3000, 2, score=True)
    unguided = drawn(3000, 2, score=False)
    assert kinds(guided) == kinds(unguided)
    assert sum(kinds(unguided).values()) == 3000


def test_the_edge_stratum_draws_few_questions_of_mappings_at_the_rules_edges() -> None:
    assert ("transform", EDGES, 1) in STRATA
    odd = [size for mapping, size in mappings(drawn(20_000, 3, score=False)) if mapping.source in ODD_SOURCES]
    assert odd, "no mapping with a source of ODD_SOURCES was drawn"
    assert max(odd) <= EDGE_FAMILY


def test_the_target_phase_climbs_the_score() -> None:
    """Scored by function calls, the run draws mappings with more calls than the unguided run of the same
    seed (the same seed and Hypothesis's derandomised generation: no chance in the comparison)."""

    def calls_per_family(families: list[QuestionFamily]) -> float:
        drawn_mappings = mappings(families)
        return sum(mapping.destination.count("{{") for mapping, _ in drawn_mappings) / len(drawn_mappings)

    assert calls_per_family(drawn(20_000, 4, score=True)) > calls_per_family(drawn(20_000, 4, score=False))
