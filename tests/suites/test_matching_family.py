"""The matching family's judging (`suites.families.matching`), without a server: the wildcards of a
pattern, and one verdict per (pattern, subject) pair."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.matching import (
    MatchingFamily,
    Observed,
    Subscriptions,
    judge_matching,
    judge_pedantic,
    matching_units,
    wildcard_kinds,
)
from nats_conformance.suites.harness import SubscriptionObservation
from nats_conformance.suites.strategies import hollow_subjects


@pytest.mark.parametrize(
    ("pattern", "kinds"),
    [("a.b", ()), ("a.*", ("partial",)), ("a.>", ("full",)), ("*.a.>", ("partial", "full")), ("a>", ())],
)
def test_wildcard_kinds(pattern: str, kinds: tuple[str, ...]) -> None:
    assert wildcard_kinds(pattern) == kinds


def context() -> RunContext:
    counter = itertools.count(1)
    return RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))


def test_judge_matching_gives_every_pair_one_verdict() -> None:
    patterns = ["a.*", "a.>", "b"]
    subjects = ["a.x", "a.x.y", "b"]
    observation = SubscriptionObservation(
        {
            (1, 0): ["a.x"],  # a.* got a.x: agree
            (2, 0): ["a.x", "a.x"],  # a.> got a.x twice: duplicated
            # a.> missed a.x.y: not-delivered
            (1, 1): ["a.x.y"],  # a.* got a.x.y: unexpected-delivery
        },
        published=2,  # b was never confirmed: unknown for b, but deliveries still count
        failure="connection lost",
    )
    cases = cases_of(judge_matching(context(), patterns, subjects, observation))
    assert len(cases) == 9
    verdicts = {(c.source, c.subject): (c.expected, c.observed, c.verdict, c.case_class) for c in cases}
    assert verdicts[("a.*", "a.x")] == ("match", "match", "agree", "")
    assert verdicts[("a.>", "a.x")] == ("match", "match|match", "diverge", "matching:full:duplicated")
    assert verdicts[("a.>", "a.x.y")] == ("match", "no-match", "diverge", "matching:full:not-delivered")
    assert verdicts[("a.*", "a.x.y")][2:] == ("diverge", "matching:partial:unexpected-delivery")
    assert verdicts[("b", "a.x")] == ("no-match", "no-match", "agree", "")
    assert verdicts[("b", "b")][2:] == ("unknown", "matching:literal:unknown")
    assert verdicts[("a.*", "b")][2] == "unknown"
    assert {c.feature for c in cases} == {"matching"}


def test_a_pair_that_killed_the_server_is_a_crash_and_the_others_keep_their_verdicts() -> None:
    patterns = ["a.>", "b"]
    subjects = ["a", "b"]
    observation = SubscriptionObservation({(2, 1): ["b"]}, published=2)
    crashed = {(0, 0): "panic: runtime error: index out of range [1] with length 1"}
    cases = cases_of(judge_matching(context(), patterns, subjects, observation, crashed=crashed))
    verdicts = {(c.source, c.subject): (c.observed, c.verdict, c.case_class, c.detail) for c in cases}
    assert verdicts[("a.>", "a")] == ("", "diverge", "matching:full:server-crash", crashed[(0, 0)])
    assert verdicts[("a.>", "b")][:2] == ("no-match", "agree")
    assert verdicts[("b", "b")][:2] == ("match", "agree")
    assert verdicts[("b", "a")][:2] == ("no-match", "agree")


def test_a_pedantic_probe_is_judged_per_subject_and_replays_alone() -> None:
    unit = Subscriptions((), (), pedantic=("a..b", "a.*b", "a.*"))
    cases = judge_pedantic(context(), unit, Observed(SubscriptionObservation(), 0, (True, True)))
    assert [(c.expected, c.observed, c.verdict) for c in cases] == [
        ("reject", "reject", "agree"),
        ("accept", "reject", "diverge"),
        ("reject", "", "unknown"),
    ]
    assert cases[1].case_class == "matching:pedantic:reference-accept-server-reject"
    assert MatchingFamily().unit_of(CaseFile.of(cases[1])) == Subscriptions((), (), pedantic=("a.*b",))


def test_a_queued_pattern_is_judged_as_a_subscription_and_replays_in_its_group() -> None:
    """A pattern subscribed in a queue group of its own is expected to get what a subscription would;
    its cases say `queue`, and the unit a case replays subscribes it in a group again, cold (no warm
    publication, so the server matches the subject anew, with its queue groups)."""
    unit = Subscriptions(("a.*", "a.>"), ("a.x",), queued=(1,))
    observation = SubscriptionObservation({(1, 0): ["a.x"]}, published=1)
    cases = cases_of(judge_matching(context(), unit.patterns, unit.subjects, observation, queued=unit.queued))
    verdicts = {c.source: (c.functions, c.verdict, c.case_class) for c in cases}
    assert verdicts["a.*"] == ("partial", "agree", "")
    assert verdicts["a.>"] == ("full+queue", "diverge", "matching:full+queue:not-delivered")
    [missed] = [c for c in cases if c.source == "a.>"]
    replayed = MatchingFamily().unit_of(CaseFile.of(missed))
    assert replayed == Subscriptions(("a.>",), ("a.x",), queued=(0,))
    assert (unit.warm, replayed.warm, Subscriptions(("a.>",), ("a.x",)).warm) == (False, False, True)


def test_a_pedantic_subject_that_killed_the_server_is_a_crash_and_replays_alone() -> None:
    """A crash is a verdict: the subject whose publication killed the server (found alone after the
    probe's crash) is a `server-crash` with the panic line; the others keep theirs."""
    unit = Subscriptions((), (), pedantic=("a..b", "a.b"))
    panic = "panic: runtime error: index out of range [0] with length 0"
    observed = Observed(SubscriptionObservation(), 0, (False, False), pedantic_crashed={0: panic})
    cases = judge_pedantic(context(), unit, observed)
    assert [(c.observed, c.verdict, c.detail) for c in cases] == [
        ("", "diverge", panic),
        ("accept", "agree", ""),
    ]
    assert cases[0].case_class == "matching:pedantic:server-crash"
    assert MatchingFamily().unit_of(CaseFile.of(cases[0])) == Subscriptions((), (), pedantic=("a..b",))


def test_a_string_with_an_empty_token_is_received_by_no_subscription() -> None:
    """`a..b` and `.a` are no subject: every pattern expects no delivery, even those whose tokens would
    line up with the empty token's (`a.*.b`, `>`, `*.a`)."""
    patterns = ["a.*.b", ">", "*.a"]
    subjects = ["a..b", ".a"]
    observation = SubscriptionObservation({(2, 0): ["a..b"]}, published=2)
    cases = cases_of(judge_matching(context(), patterns, subjects, observation))
    verdicts = {(c.source, c.subject): (c.expected, c.observed, c.verdict) for c in cases}
    assert verdicts[(">", "a..b")] == ("no-match", "match", "diverge")
    assert {verdict for key, verdict in verdicts.items() if key != (">", "a..b")} == {
        ("no-match", "no-match", "agree")
    }


@given(st.data())
@settings(max_examples=50, deadline=None, database=None)
def test_hollow_subjects_are_drawn_subjects_with_one_empty_token_more(data: st.DataObject) -> None:
    subjects = ["a.b", "c"]
    for hollow in data.draw(hollow_subjects(subjects)):
        tokens = hollow.split(".")
        assert tokens.count("") == 1
        assert ".".join(token for token in tokens if token) in subjects


def test_some_units_publish_subjects_with_an_empty_token() -> None:
    """They come after the unit's other subjects (`find` fails when no unit publishes one)."""
    unit = find(
        matching_units(),
        lambda unit: any("" in subject.split(".") for subject in unit.subjects),
        settings=settings(max_examples=500, derandomize=True, database=None),
    )
    hollow = [i for i, subject in enumerate(unit.subjects) if "" in subject.split(".")]
    assert hollow == list(range(len(unit.subjects) - len(hollow), len(unit.subjects)))
