"""`campaign --plan NAME`: every family's budget as a share of its default, never below one unit of the
slowest family; `--budget` overrides a family, and the plan is what the run's manifest records."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from records.expectations import load_expectations
from suites.__main__ import main
from suites.commands import sweep_scheduling
from suites.engine.plans import FLOOR, PLANS
from suites.families import FAMILIES, family_of_case


def test_every_plan_budgets_every_family_in_proportion() -> None:
    quick, default, deep = PLANS["quick"].budgets(), PLANS["default"].budgets(), PLANS["deep"].budgets()
    assert set(quick) == set(default) == set(deep) == set(FAMILIES)
    assert default == {name: family.budget for name, family in FAMILIES.items()}
    for name in FAMILIES:
        assert FLOOR <= quick[name] <= default[name] < deep[name]
    assert quick["streaming"] == FLOOR  # 250 * 0.04 is below one layout's cases
    assert quick["mapping"] == 800


def test_the_quick_plan_runs_every_family_and_so_every_known_case() -> None:
    """A campaign runs a family's known cases first whenever its budget is not 0 (`run_one`)."""
    quick = PLANS["quick"].budgets()
    known = load_expectations().known_cases
    assert known
    assert all(quick[name] > 0 for name in FAMILIES)
    assert all(quick[family_of_case(case).name] > 0 for case in known)


def test_a_plan_s_budgets_reach_the_manifest_and_budget_overrides_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An adapter run needs no server: the plan's budgets are recorded as given (the mapping family's
    budget is also the adapter's number of questions)."""
    adapter = f"adapter:{sys.executable} {Path(__file__).parents[2] / 'examples/adapters/correct.py'}"
    status = main(
        [
            "campaign",
            "--target",
            adapter,
            "--plan",
            "quick",
            "--budget",
            "validation=7",
            "--out",
            str(tmp_path),
        ]
    )
    assert status == 0, capsys.readouterr()
    (run_dir,) = tmp_path.iterdir()
    budgets = json.loads((run_dir / "manifest.json").read_text())["settings"]["plan"]["budgets"]
    assert budgets == {**PLANS["quick"].budgets(), "validation": 7}
    assert json.loads((run_dir / "manifest.json").read_text())["cases"] >= 800


@pytest.mark.parametrize(
    ("options", "scheduling"),
    [
        ({"releases": ["all"]}, ("local[*]", 1)),
        ({"since": "2.2.0", "master": "spark://127.0.0.1:7077"}, ("spark://127.0.0.1:7077", 1)),
        ({"releases": ["2.9"], "shards": 3}, ("local[*]", 3)),
        ({}, (None, None)),
        ({"master": "local[2]"}, ("local[2]", None)),
    ],
)
def test_a_sweep_runs_as_spark_tasks_one_per_release_and_family(
    options: dict[str, object], scheduling: tuple[str | None, int | None]
) -> None:
    pytest.importorskip("pyspark")
    given = {"resume": None, "releases": [], "since": None, "master": None, "shards": None} | options
    assert sweep_scheduling(argparse.Namespace(**given)) == scheduling
