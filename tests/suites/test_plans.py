"""`campaign --plan NAME`: every family's budget as a share of its default, never below one unit of the
slowest family; `--budget` overrides a family, and the plan is what the run's manifest records."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pytest

from nats_conformance.fixtures.options import OptionError, RunConfig
from nats_conformance.fixtures.provision import parse_version_spec as parse_spec
from nats_conformance.records.expectations import load_expectations
from nats_conformance.records.spark import why_no_spark
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.commands import scheduling as scheduling_of
from nats_conformance.suites.engine.plans import FLOOR, PLANS
from nats_conformance.suites.families import FAMILIES, LIBRARY, family_of_case


def test_every_plan_budgets_every_family_in_proportion() -> None:
    quick, default, deep = PLANS["quick"].budgets(), PLANS["default"].budgets(), PLANS["deep"].budgets()
    assert set(quick) == set(default) == set(deep) == set(FAMILIES)
    assert default == {name: family.description.budget for name, family in FAMILIES.items()}
    for name in FAMILIES:
        assert FLOOR <= quick[name] <= default[name] < deep[name]
    assert quick["streaming"] == FLOOR  # 250 * 0.04 is below one layout's cases
    assert quick["mapping"] == 800


def test_the_quick_plan_runs_every_family_and_so_every_known_case() -> None:
    """A campaign runs a family's known cases first whenever its budget is not 0 (`run_one`); a case of a
    feature only a library answers (an adapter's) is the library family's, asked of adapter targets."""
    quick = PLANS["quick"].budgets()
    known = load_expectations().known_cases
    served = {feature for family in FAMILIES.values() for feature in family.features}
    on_servers = [case for case in known if case.feature in served]
    assert on_servers
    assert all(quick[name] > 0 for name in FAMILIES)
    assert all(quick[family_of_case(case).name] > 0 for case in on_servers)
    assert {case.feature for case in known} - served <= set(LIBRARY.features)


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


TWO_RELEASES = RunConfig((parse_spec("2.14.5"), parse_spec("2.12.15")), ("process",))
ONE_RELEASE = RunConfig((parse_spec("2.14.5"),), ("process",))
AT_A_URL = RunConfig((), ("external",), server_url="nats://127.0.0.1:4222")


@pytest.mark.parametrize(
    ("options", "run", "adapters", "scheduling"),
    [
        ({"releases": ["all"]}, TWO_RELEASES, 0, ("local[*]", 1)),
        (
            {"since": "2.2.0", "master": "spark://127.0.0.1:7077"},
            TWO_RELEASES,
            0,
            ("spark://127.0.0.1:7077", 1),
        ),
        ({"releases": ["2.9"], "shards": 3}, TWO_RELEASES, 0, ("local[*]", 3)),
        ({}, TWO_RELEASES, 0, ("local[*]", 1)),
        ({"shards": 2}, TWO_RELEASES, 0, ("local[*]", 2)),
        ({}, ONE_RELEASE, 0, (None, None)),
        ({}, TWO_RELEASES, 1, (None, None)),
        ({}, AT_A_URL, 0, (None, None)),
        ({"master": "local[2]"}, ONE_RELEASE, 0, ("local[2]", None)),
        ({"master": "none"}, TWO_RELEASES, 0, (None, None)),
        ({"releases": ["all"]}, TWO_RELEASES, 1, (None, None)),
        ({"releases": ["all"]}, AT_A_URL, 0, (None, None)),
    ],
)
def test_a_campaign_of_several_releases_runs_as_spark_tasks_one_per_release_and_family(
    options: dict[str, object],
    run: RunConfig,
    adapters: int,
    scheduling: tuple[str | None, int | None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("pyspark")
    if why_no_spark():
        pytest.skip(why_no_spark())
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    given = {"resume": None, "releases": [], "since": None, "master": None, "shards": None} | options
    assert scheduling_of(argparse.Namespace(**given), run, adapters) == scheduling


def test_a_campaign_of_several_releases_runs_in_one_process_on_one_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    given = {"resume": None, "releases": [], "since": None, "master": None, "shards": None}
    assert scheduling_of(argparse.Namespace(**given), TWO_RELEASES, 0) == (None, None)


def test_resuming_in_one_process_is_refused() -> None:
    given = {"resume": "runs/x", "releases": [], "since": None, "master": "none", "shards": None}
    with pytest.raises(OptionError, match="drop --master none"):
        scheduling_of(argparse.Namespace(**given), TWO_RELEASES, 0)
