"""`suites.mutant_reach`: the families a mutant runs are those whose run on the -cover build reached its
line; where that is not known, every family runs (never fewer than can tell the mutant apart). And the
mutants a run selects (`--part K/N`)."""

from __future__ import annotations

import pytest

from nats_conformance.fixtures.options import OptionError
from nats_conformance.records.coverage import Block
from nats_conformance.records.mutants import Mutant
from nats_conformance.suites.engine.campaign import CampaignPlan
from nats_conformance.suites.mutant_reach import EVERY_LINE, Reach, families_of, family_plan, lines_of
from nats_conformance.suites.mutants import part_of, select

FILE = "server/subject_transform.go"
ORDER = ["matching", "mapping", "import"]


def mutant(line: int, file: str = FILE) -> Mutant:
    return Mutant(1, file, "f", line, "negate-comparison", "a == b", "a != b")


def reach() -> Reach:
    return Reach(
        reached={
            "matching": {},
            "mapping": {FILE: frozenset({10, 11, 12})},
            "import": EVERY_LINE,  # a server restarted: its counters are lost
        },
        counted={FILE: frozenset(range(10, 30))},
    )


def test_a_counted_line_runs_the_families_that_reached_it_and_those_not_known() -> None:
    assert reach().reaching(mutant(11), ORDER) == ("mapping", "import")
    assert reach().reaching(mutant(20), ORDER) == ("import",)


def test_a_line_in_no_block_runs_every_family() -> None:
    assert reach().reaching(mutant(5), ORDER) == tuple(ORDER)
    assert reach().reaching(mutant(11, "server/sublist.go"), ORDER) == tuple(ORDER)


def test_known_reach_everywhere_leaves_an_unreached_line_with_no_family() -> None:
    known = Reach({"matching": {}, "mapping": {FILE: frozenset({10})}}, {FILE: frozenset({10, 20})})
    assert known.reaching(mutant(20), ["matching", "mapping"]) == ()


def test_lines_of_blocks_spans_each_block_and_keeps_the_files_asked() -> None:
    blocks = [
        Block(FILE, 3, 2, 5, 10, 2, True),
        Block(FILE, 7, 2, 7, 20, 1, False),
        Block("server/client.go", 1, 1, 2, 1, 1, True),
    ]
    assert lines_of(blocks, {FILE}, reached_only=True) == {FILE: frozenset({3, 4, 5})}
    assert lines_of(blocks, {FILE}, reached_only=False) == {FILE: frozenset({3, 4, 5, 7})}


def test_a_family_plan_keeps_one_family_with_its_budget_and_the_seed() -> None:
    plan = CampaignPlan(budgets={"mapping": 200, "matching": 300, "streaming": 0}, seed=9)
    assert families_of(plan) == ["mapping", "matching"]
    one = family_plan(plan, "matching")
    assert (dict(one.budgets), one.seed) == ({"mapping": 0, "matching": 300, "streaming": 0}, 9)


def test_the_parts_of_a_selection_cover_each_mutant_once() -> None:
    mutants = [Mutant(i, FILE, "f", i, "constant", "1", "2") for i in range(1, 12)]
    parts = [select(mutants, [], [], None, 0, part=(k, 4)) for k in range(1, 5)]
    assert sorted(m.id for part in parts for m in part) == list(range(1, 12))
    assert [m.id for m in parts[1]] == [2, 6, 10]
    assert part_of("2/4") == (2, 4)
    assert part_of(None) == (1, 1)
    for wrong in ("0/4", "5/4", "2", "a/b"):
        with pytest.raises(OptionError, match="--part takes K/N"):
            part_of(wrong)
