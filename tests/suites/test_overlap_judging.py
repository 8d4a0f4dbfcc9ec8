"""Judging a sequence of overlapping configurations (`suites.families.overlap`) from what a server was seen
to do: any candidate agrees, the old destination of a redirected source is a stale mapping, another pick
for a configuration seen before is a changed winner, and nothing is lost after a refused step."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nats_conformance.records.casefile import CaseFile, read_case_file
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.replay import replay_command
from nats_conformance.reference.overlap import candidates
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.transform import compile_transform
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.overlap import OverlapRun, Step, StepObservation, overlap_runs
from nats_conformance.suites.harness import SubscriptionObservation

PROFILE = for_version("2.14.5")
FAMILY = FAMILIES["overlap"]


def context() -> RunContext:
    counter = itertools.count()
    return RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))


def seen(*arrivals: list[str]) -> StepObservation:
    """A step whose publication i arrived on `arrivals[i]` (on the one `>` subscription)."""
    deliveries = {(1, index): subjects for index, subjects in enumerate(arrivals) if subjects}
    return StepObservation(deliveries=SubscriptionObservation(deliveries, published=len(arrivals)))


def judged(run: OverlapRun, *steps: StepObservation) -> list[tuple[str, str, str]]:
    return [
        (c.subject, c.verdict, c.difference) for c in cases_of(FAMILY.judge(context(), PROFILE, run, steps))
    ]


def test_a_subject_two_sources_match_may_arrive_on_either_and_unmatched_ones_arrive_unchanged() -> None:
    transforms = [
        compile_transform("ov.*", "od.m0.$1", PROFILE),
        compile_transform("ov.>", "od.m1.>", PROFILE),
    ]
    assert candidates(transforms, "ov.a") == ("od.m0.a", "od.m1.a")
    assert candidates(transforms, "ov.a.b") == ("od.m1.a.b",)
    assert candidates(transforms, "other.a") == ("other.a",)


def test_any_candidate_agrees_and_another_pick_for_the_same_configuration_is_a_changed_winner() -> None:
    mappings = (("ov.*", "od.m0.$1"), ("ov.>", "od.m1.>"))
    run = OverlapRun((Step("configure", mappings), Step("restart", mappings)), ("ov.a", "ov.b"))
    assert judged(run, seen(["od.m0.a"], ["od.m1.b"]), seen(["od.m1.a"], ["od.m1.b"])) == [
        ("ov.a", "agree", ""),
        ("ov.b", "agree", ""),
        ("ov.a", "diverge", "winner-changed-after-restart"),
        ("ov.b", "agree", ""),
    ]


def test_the_old_destination_of_a_redirected_source_is_a_stale_mapping() -> None:
    run = OverlapRun(
        (Step("configure", (("ov.*", "od.m0.$1"),)), Step("reload", (("ov.*", "od.m0s1.$1"),))), ("ov.a",)
    )
    assert judged(run, seen(["od.m0.a"]), seen(["od.m0.a"]))[1] == (
        "ov.a",
        "diverge",
        "stale-mapping-after-reload",
    )
    assert judged(run, seen(["od.m0.a"]), seen(["od.x"]))[1][2] == "not-a-candidate"
    assert judged(run, seen(["od.m0.a"]), seen([]))[1][2] == "not-delivered"
    assert judged(run, seen(["od.m0.a"]), seen(["od.m0s1.a", "od.m0s1.a"]))[1][2] == "duplicated"


def test_after_a_refused_step_its_subjects_and_those_of_later_steps_take_the_refusal_s_verdict() -> None:
    """A refusal is what the server did (issue 56): the subjects it left unpublished are judged as the
    refusal is, with its difference, not `unknown`; the detail still says which step stopped them."""
    mappings = (("ov.*", "od.m0.$1"),)
    run = OverlapRun(
        (Step("configure", mappings), Step("push", mappings), Step("restart", mappings)), ("ov.a",)
    )
    cases = cases_of(
        FAMILY.judge(context(), PROFILE, run, (seen(["od.m0.a"]), StepObservation(rejection="no")))
    )
    assert [(c.feature, c.verdict) for c in cases] == [
        ("overlap", "agree"),
        ("validation", "diverge"),
        ("overlap", "diverge"),
        ("overlap", "diverge"),
    ]
    assert cases[2].difference == cases[3].difference == cases[1].difference != ""
    assert "refused the configuration: no" in cases[2].detail
    assert "step 1 (push) did not complete" in cases[3].detail
    assert len({c.case_id for c in cases}) == len(cases)


def test_after_a_step_that_failed_its_subjects_are_unknown_with_the_reason() -> None:
    """No answer is no observation: those subjects stay `unknown`."""
    mappings = (("ov.*", "od.m0.$1"),)
    run = OverlapRun((Step("configure", mappings), Step("restart", mappings)), ("ov.a",))
    cases = cases_of(
        FAMILY.judge(context(), PROFILE, run, (seen(["od.m0.a"]), StepObservation(failure="timed out")))
    )
    assert [(c.feature, c.verdict) for c in cases] == [("overlap", "agree"), ("overlap", "unknown")]
    assert "timed out" in cases[1].detail


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=overlap_runs(PROFILE, ("reload", "restart")))
def test_every_drawn_sequence_is_valid_and_its_cases_replay_from_their_steps(
    run: OverlapRun, tmp_path: Path
) -> None:
    assert run.steps[0].how == "configure"
    assert {s.how for s in run.steps[1:]} <= {"reload", "restart"}
    for step in run.steps:
        assert len({source for source, _ in step.mappings}) == len(step.mappings)
        for source, destination in step.mappings:
            compile_transform(source, destination, PROFILE)  # raises for a mapping the reference refuses
    arrivals = [[candidates_of(run.steps[0], subject)[0]] for subject in run.subjects]
    (first, *_) = cases_of(FAMILY.judge(context(), PROFILE, run, (seen(*arrivals),)))
    assert first.verdict == "agree"
    assert first.steps == tuple(step.to_json() for step in run.steps)
    path = tmp_path / "case.json"
    path.write_text(CaseFile.of(first).to_json())
    again = FAMILY.unit_of(read_case_file(path))
    assert again == OverlapRun(run.steps, (first.subject,))
    assert "--steps" in replay_command(first)


def candidates_of(step: Step, subject: str) -> tuple[str, ...]:
    return candidates([compile_transform(s, d, PROFILE) for s, d in step.mappings], subject)


@given(st.sampled_from(["reload", "push", "restart"]))
def test_a_step_reads_back_from_its_json(how: str) -> None:
    step = Step(how, (("ov.*", "od.m0.{{wildcard(1)}}"), ("ov.>", "od.m1.>")))
    assert Step.from_json(step.to_json()) == step
