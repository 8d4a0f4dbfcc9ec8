"""Which cases a paired comparison runs again (suites.pairing): each divergence class one side shows
and the other does not, for a feature both judged, on the other side's release; never a test of shares."""

from __future__ import annotations

from dataclasses import replace

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import load_expectations
from nats_conformance.records.pairs import CHANGED, SAME, UNKNOWN, UNSTABLE, WITHIN, Pair
from nats_conformance.suites.pairing import Planned, Side, across, intermittent, within


def found(version: str, feature: str, difference: str, functions: str = "wildcard") -> CaseFile:
    """The smallest case of a class as a run's case file keeps it."""
    return CaseFile(
        feature=feature,
        source="a.*",
        destination="b.{{wildcard(1)}}",
        subject="a.x",
        server_version=version,
        functions=functions,
        difference=difference,
        found_on={"implementation": "nats-server", "server_version": version, "verdict": "diverge"},
    )


def side(features: dict[str, set[str]], *cases: CaseFile) -> Side:
    by_release: dict[str, dict[str, CaseFile]] = {}
    for case in cases:
        by_release.setdefault(case.server_version, {})[case.case_class] = case
    return Side({v: frozenset(f) for v, f in features.items()}, by_release)


def planned(items: list[Planned]) -> list[tuple[str, str, str]]:
    return sorted((item.case.case_class, item.seen_on, item.replay_on) for item in items)


def test_within_a_run_consecutive_releases_of_each_feature() -> None:
    """mapping ran on all three releases, partition not on 2.14.5: its 2.12.15 class meets 2.14.9; the
    class 2.12.15 and 2.14.5 share is not replayed between them, and a distribution never is."""
    run = side(
        {"2.12.15": {"mapping", "partition"}, "2.14.5": {"mapping"}, "2.14.9": {"mapping", "partition"}},
        found("2.12.15", "mapping", "wrong-subject"),
        found("2.14.5", "mapping", "wrong-subject"),
        found("2.12.15", "partition", "wrong-partition", "partition"),
        found("2.14.9", "weighted", "distribution", ""),
        found("2.14.9", "mapping", "distribution", "partition"),
    )
    assert planned(within(run)) == [
        ("mapping:wildcard:wrong-subject", "2.14.5", "2.14.9"),
        ("partition:partition:wrong-partition", "2.12.15", "2.14.9"),
    ]


def test_a_test_of_shares_is_never_replayed() -> None:
    run = side(
        {"2.14.5": {"weighted", "partition"}, "2.14.9": {"weighted", "partition"}},
        found("2.14.9", "weighted", "share-off", ""),
        found("2.14.9", "partition", "distribution", "partition"),
    )
    assert within(run) == []


def test_against_a_baseline_each_release_meets_its_line() -> None:
    """2.14.10 meets the baseline's 2.14.9 both ways; 2.9.25 has no line in the run and 2.16.0 none in
    the baseline; a class both show is not replayed."""
    run = side(
        {"2.14.10": {"mapping"}, "2.16.0": {"mapping"}},
        found("2.14.10", "mapping", "wrong-subject"),
        found("2.14.10", "mapping", "server-crash"),
        found("2.16.0", "mapping", "wrong-subject"),
    )
    baseline = side(
        {"2.14.9": {"mapping"}, "2.9.25": {"mapping"}},
        found("2.14.9", "mapping", "wrong-subject"),
        found("2.14.9", "mapping", "too-long"),
        found("2.9.25", "mapping", "too-long"),
    )
    assert planned(across(run, baseline)) == [
        ("mapping:wildcard:server-crash", "2.14.10", "2.14.9"),
        ("mapping:wildcard:too-long", "2.14.9", "2.14.10"),
    ]


def test_on_the_same_release_only_the_other_side_s_cases_run_again() -> None:
    """The run judged its own case on 2.12.15 with the code it has; the baseline's case, judged by the
    code of its day, is the one worth running again."""
    run = side({"2.12.15": {"mapping"}}, found("2.12.15", "mapping", "wrong-subject"))
    baseline = side({"2.12.15": {"mapping"}}, found("2.12.15", "mapping", "too-long"))
    assert planned(across(run, baseline)) == [("mapping:wildcard:too-long", "2.12.15", "2.12.15")]


def test_a_change_whose_seen_side_does_not_repeat_is_unstable_not_claimed() -> None:
    """An overlap winner that changed after a restart on 2.14.9 once, and agreed on 2.14.10: run again
    on 2.14.9 it agreed too, so the pair dates nothing (a class that depends on timing)."""
    seen = Pair(
        against=WITHIN,
        implementation="nats-server",
        feature="overlap",
        functions="",
        seen_on="2.14.9",
        seen_difference="winner-changed-after-restart",
        seen_verdict="diverge",
        replayed_on="2.14.10",
        replayed_difference="",
        replayed_verdict="agree",
        case_file="x.json",
    )
    assert seen.outcome == CHANGED  # not run again (a pair written before the second run existed)
    assert replace(seen, seen_again_difference="", seen_again_verdict="agree").outcome == UNSTABLE
    assert replace(seen, seen_again_verdict="unknown").outcome == UNSTABLE
    again = replace(seen, seen_again_difference=seen.seen_difference, seen_again_verdict="diverge")
    assert again.outcome == CHANGED
    assert replace(seen, replayed_difference=seen.seen_difference).outcome == SAME
    assert replace(seen, replayed_verdict="unknown").outcome == UNKNOWN


def test_on_one_release_two_runs_of_today_that_disagree_are_unstable() -> None:
    """Against a baseline of the same release, the replay and the second run are both of today: the
    intermittent class partition-of-literal-source-hashes-nothing agreed once and diverged once on 2.14.10
    (default campaign of 2026-11-29), which dates nothing."""
    seen = Pair(
        against="baselines/campaign.json",
        implementation="nats-server",
        feature="partition",
        functions="partition",
        seen_on="2.14.10",
        seen_difference="wrong-subject-literal-source",
        seen_verdict="expected",
        replayed_on="2.14.10",
        replayed_difference="",
        replayed_verdict="agree",
        case_file="x.json",
        seen_again_difference="wrong-subject-literal-source",
        seen_again_verdict="expected",
    )
    assert seen.outcome == UNSTABLE
    assert replace(seen, seen_again_difference="", seen_again_verdict="agree").outcome == CHANGED


def test_a_class_listed_as_intermittent_is_not_replayed() -> None:
    listed = load_expectations()
    literal = replace(
        found("2.14.10", "partition", "wrong-subject-literal-source", functions="partition"),
        source="m12.q1bX",
        destination="{{partition(13)}}",
    )
    assert intermittent(Planned(literal, "2.14.10", "2.14.10"), listed)
    crash = found("2.10.29", "partition", "server-crash", functions="partition")
    assert not intermittent(Planned(crash, "2.10.29", "2.12.15"), listed)
