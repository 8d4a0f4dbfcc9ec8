"""Weighted mapping properties: every message goes to a destination the list allows, in the listed shares.

https://docs.nats.io/nats-concepts/subject_mapping, "Weighted Mappings" ("For A/B Testing or Canary
Releases", "For
Traffic Shaping in Testing", "For Artificial Loss"); the judging is ``suites.families.weighted``'s. Weighted
mappings exist from 2.2.0.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.profiles import ReleaseProfile, for_version
from nats_conformance.reference.weighted import WeightedDestination, compile_weighted
from nats_conformance.suites.engine.family import cases_of, check, divergences
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.weighted import (
    LOSS,
    REMAINDER_DELIVERED,
    WeightedRun,
    categories_of,
    message_count,
    subjects_for,
    weighted_lists,
)
from nats_conformance.suites.reproduce import assert_agrees, describe_divergences
from nats_conformance.suites.strategies import RECOMMENDED

pytestmark = [pytest.mark.live, pytest.mark.weighted, pytest.mark.min_server("2.2.0")]


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_messages_go_where_the_weighted_list_allows_in_its_shares(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject, seed: int
) -> None:
    """Every message lands on a destination the list allows (or is dropped where loss is allowed), and
    the shares fit ``expected_distribution()`` (chi-square, p >= ALPHA)."""
    profile = for_version(server.version)
    source, entries = data.draw(weighted_lists(profile), label="weighted")
    subjects = subjects_for(source, message_count(source, entries, profile), random.Random(seed))
    cases = weighted(server, context, WeightedRun(source, entries, tuple(subjects), seed))
    recorder.extend(cases)
    assert_agrees(divergences(cases))


def weighted(server: Backend, context: RunContext, run: WeightedRun) -> list[Case]:
    """The weighted family's cases for `run`: one per message, then the summary case of the shares."""
    return cases_of(check(FAMILIES["weighted"], Session.of(server), context, run))


def shares(
    profile: ReleaseProfile, source: str, entries: tuple[WeightedDestination, ...]
) -> dict[int | None, float]:
    """The reference's share of each bucket of a weighted list (`LOSS`: its remainder)."""
    return {c.bucket: c.share for c in categories_of(compile_weighted(source, entries, profile))}


W = WeightedDestination


def one_subject(subject: str) -> Callable[[int], list[str]]:
    return lambda count: [subject] * count


def token_subjects(prefix: str) -> Callable[[int], list[str]]:
    rng = random.Random(prefix)
    return lambda count: [f"{prefix}.{''.join(rng.choices(RECOMMENDED, k=6))}" for _ in range(count)]


@dataclass(frozen=True, slots=True)
class WeightedExample:
    """A documented weighted list, the subjects published through it, and the shares the text states."""

    source: str
    entries: tuple[WeightedDestination, ...]
    make_subjects: Callable[[int], list[str]] = field(repr=False)
    documented: dict[int | None, float]  # bucket (`LOSS`: the remainder) -> share


DOCUMENTED = [
    pytest.param(
        WeightedExample(
            "myservice.requests",
            (W("myservice.requests.v1", 100),),
            one_subject("myservice.requests"),
            {0: 1.0},
        ),
        id="canary-v1-100",
    ),
    pytest.param(
        WeightedExample(
            "myservice.requests",
            (W("myservice.requests.v1", 98), W("myservice.requests.v2", 2)),
            one_subject("myservice.requests"),
            {0: 0.98, 1: 0.02},
        ),
        id="canary-98-2",
    ),
    pytest.param(
        WeightedExample(
            "myservice.requests.*",
            (W("myservice.requests.$1", 80), W("myservice.requests.fail.$1", 20)),
            token_subjects("myservice.requests"),
            {0: 0.8, 1: 0.2},
        ),
        id="traffic-shaping-80-20",
    ),
    pytest.param(
        WeightedExample("foo.loss.>", (W("foo.loss.>", 50),), one_subject("foo.loss.a"), {0: 0.5, LOSS: 0.5}),
        id="artificial-loss-50",
    ),
]
"""The document's weighted examples ("Weighted Mappings") with the shares it states."""


@pytest.mark.parametrize("example", DOCUMENTED)
def test_documented_weighted_examples(
    server: Backend, context: RunContext, recorder: RecordWriter, example: WeightedExample
) -> None:
    """Each example of "Weighted Mappings" as written: the reference's shares are the document's, and the
    server's messages and shares agree with them."""
    profile = for_version(server.version)
    count = message_count(example.source, example.entries, profile)
    run = WeightedRun(example.source, example.entries, tuple(example.make_subjects(count)))
    cases = weighted(server, context, run)
    recorder.extend(cases)
    assert shares(profile, example.source, example.entries) == pytest.approx(example.documented)
    assert_agrees(divergences(cases))
    assert cases[-1].expected.startswith("shares "), "no chi-square summary case"
    assert all(case.verdict == "agree" for case in cases), describe_divergences(cases)


def test_the_remaining_two_percent_is_not_lost_but_delivered_unchanged(
    server: Backend, context: RunContext, recorder: RecordWriter
) -> None:
    """For ``myservice.requests: [{v3, 90%}, {v3.fail, 8%}]`` the document says "the remaining 2% is
    'lost'". Servers deliver it on the unchanged subject: the family judges those messages
    ``remainder-delivered``, listed as ``weighted-remainder-not-lost``, while the draw's shares fit."""
    source = "myservice.requests"
    entries = (W("myservice.requests.v3", 90), W("myservice.requests.v3.fail", 8))
    profile = for_version(server.version)
    count = message_count(source, entries, profile)
    cases = weighted(server, context, WeightedRun(source, entries, (source,) * count))
    recorder.extend(cases)
    assert shares(profile, source, entries) == pytest.approx({0: 0.9, 1: 0.08, LOSS: 0.02})
    assert_agrees(divergences(cases))
    remainder = [case for case in cases if case.difference == REMAINDER_DELIVERED]
    assert remainder, "nothing delivered on the unchanged subject: the document's reading holds"
    assert {case.expectation for case in remainder} == {"weighted-remainder-not-lost"}
    assert cases[-1].verdict == "agree", describe_divergences(cases[-1:])


def test_a_wildcard_source_listing_itself_still_gets_its_remainder(
    server: Backend, context: RunContext, recorder: RecordWriter
) -> None:
    """``wt.s.*: [{wt.s.$1, 50%}]`` lists the source itself ("For Artificial Loss"; a destination may
    not hold ``*``, so the wildcard is written ``$1``): half the messages should be lost. Servers deliver
    every one on the unchanged subject, where the entry also delivers, so the messages agree one by one
    and the shares show it: the summary is ``remainder-delivered`` (``weighted-remainder-not-lost``)."""
    source, entries = "wt.s.*", (W("wt.s.$1", 50),)
    subjects = tuple(subjects_for(source, 400, random.Random(7)))
    cases = weighted(server, context, WeightedRun(source, entries, subjects))
    recorder.extend(cases)
    assert all(case.verdict == "agree" for case in cases[:-1]), describe_divergences(cases[:-1])
    summary = cases[-1]
    assert (summary.difference, summary.expectation) == (REMAINDER_DELIVERED, "weighted-remainder-not-lost")
