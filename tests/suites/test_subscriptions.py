"""suites.subscriptions: observation through the PING/PONG barrier, and the (pattern, subject) judgement."""

from __future__ import annotations

import itertools

import pytest

from fixtures.clients.wire import WireConnection, WireError
from fixtures.servers.base import Backend
from records.expectations import Expectations
from suites.engine.verdicts import RunContext
from suites.subscriptions import (
    SubscriptionObservation,
    clear_mappings,
    collect_until_pong,
    judge_matching,
    observe_subscriptions,
    wildcard_kinds,
)


@pytest.mark.parametrize(
    ("pattern", "kinds"),
    [("a.b", ()), ("a.*", ("partial",)), ("a.>", ("full",)), ("*.a.>", ("partial", "full")), ("a>", ())],
)
def test_wildcard_kinds(pattern: str, kinds: tuple[str, ...]) -> None:
    assert wildcard_kinds(pattern) == kinds


@pytest.mark.live
def test_every_delivery_is_read_by_the_pong(server: Backend) -> None:
    clear_mappings(server)
    patterns = ["a.*", "a.>", "b", "a.*"]
    subjects = ["a.x", "a.x.y", "b", "c", "a.\udcff"]
    observation = observe_subscriptions(server.url, patterns, subjects, chunk_deliveries=8)
    assert observation.failure == ""
    assert observation.published == len(subjects)
    assert observation.deliveries == {
        (1, 0): ["a.x"],
        (2, 0): ["a.x"],
        (4, 0): ["a.x"],
        (2, 1): ["a.x.y"],
        (3, 2): ["b"],
        (1, 4): ["a.\udcff"],
        (2, 4): ["a.\udcff"],
        (4, 4): ["a.\udcff"],
    }


@pytest.mark.live
def test_err_and_silence_end_the_observation(server: Backend) -> None:
    observation = observe_subscriptions(server.url, ["a..b"], ["a"])
    assert "Invalid Subject" in observation.failure
    assert observation.published == 0
    with WireConnection(server.url) as connection, pytest.raises(WireError, match="no PONG"):
        collect_until_pong(connection, SubscriptionObservation(), timeout=0.2)  # no PING sent


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
    cases = judge_matching(context(), patterns, subjects, observation)
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
