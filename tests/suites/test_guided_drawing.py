"""Coverage-guided drawing (`suites.drawing.draw_families` with a reward): each family is asked alone and
scored once asked, the run draws the same number of questions from every stratum as an unguided one,
and Hypothesis's target phase climbs the score. The score here counts function calls in a family's
mapping: the drawing's own contract, without an engine (the live engine's `coverage` operation is
tested in tests/live/test_coverage_campaign.py)."""

from __future__ import annotations

import collections

from reference.profiles import NEWEST
from reference.protocol import TransformQuestion
from suites.drawing import EDGE_FAMILY, EDGES, STRATA, Family, draw_families, questions_of
from suites.strategies import ODD_SOURCES


def drawn(cases: int, seed: int, score: bool) -> tuple[list[list[Family]], list[str]]:
    """The batches a run emits, and what happened in order: `emit` and `reward` calls."""
    batches: list[list[Family]] = []
    calls: list[str] = []

    def emit(batch: list[Family]) -> None:
        batches.append(batch)
        calls.append("emit")

    def reward() -> float:
        calls.append("reward")
        last = batches[-1][0][0] if batches else None
        return float(last.destination.count("{{")) if isinstance(last, TransformQuestion) else 0.0

    draw_families(NEWEST, cases, seed, False, emit, reward=reward if score else None)
    return batches, calls


def kinds(batches: list[list[Family]]) -> collections.Counter[str]:
    return collections.Counter(q.op for batch in batches for family in batch for q in questions_of(family))


def mappings(batches: list[list[Family]]) -> list[tuple[TransformQuestion, int]]:
    """The mapping of each transform family drawn, and how many questions it has."""
    return [
        (template, len(values))
        for batch in batches
        for template, values in batch
        if isinstance(template, TransformQuestion)
    ]


def test_each_family_is_asked_alone_then_scored() -> None:
    batches, calls = drawn(3000, 1, score=True)
    assert calls[0] == "reward"  # before any family: what every answer runs
    assert calls[1:] == ["emit", "reward"] * len(batches)
    assert all(len(batch) == 1 for batch in batches)
    assert sum(len(questions_of(batch[0])) for batch in batches) == 3000


def test_guided_and_unguided_runs_share_the_questions_out_alike() -> None:
    guided, _ = drawn(3000, 2, score=True)
    unguided, calls = drawn(3000, 2, score=False)
    assert "reward" not in calls
    assert kinds(guided) == kinds(unguided)
    assert sum(kinds(unguided).values()) == 3000


def test_the_edge_stratum_draws_few_questions_of_mappings_at_the_rules_edges() -> None:
    assert ("transform", EDGES, 1) in STRATA
    batches, _ = drawn(20_000, 3, score=False)
    odd = [size for mapping, size in mappings(batches) if mapping.source in ODD_SOURCES]
    assert odd, "no mapping with a source of ODD_SOURCES was drawn"
    assert max(odd) <= EDGE_FAMILY


def test_the_target_phase_climbs_the_score() -> None:
    """Scored by function calls, the run draws mappings with more calls than the unguided run of the same
    seed (the same seed and Hypothesis's derandomised generation: no chance in the comparison)."""

    def calls_per_family(batches: list[list[Family]]) -> float:
        families = mappings(batches)
        return sum(mapping.destination.count("{{") for mapping, _ in families) / len(families)

    guided, _ = drawn(20_000, 4, score=True)
    unguided, _ = drawn(20_000, 4, score=False)
    assert calls_per_family(guided) > calls_per_family(unguided)
