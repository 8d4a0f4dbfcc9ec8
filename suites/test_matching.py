"""Matching property: a subscription receives exactly the subjects its pattern matches by the reference.

docs.nats.io "Subject-Based Messaging" (https://docs.nats.io/nats-concepts/subjects#wildcards): "Wildcards",
"Matching A Single Token" (``*`` is one whole token), "Matching Multiple Tokens" (``>`` is one or more
tokens, last only), "Mix Wildcards". One connection
subscribes every pattern of an example and publishes every subject; each (pattern, subject) pair is a
case (``match``/``no-match``).
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.matching import matches
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.matching import judge_matching
from nats_conformance.suites.harness import clear_mappings, observe_subscriptions
from nats_conformance.suites.reproduce import describe_divergences
from nats_conformance.suites.strategies import matching_batches

pytestmark = [pytest.mark.live, pytest.mark.matching]


@given(batch=matching_batches(), seed=st.integers(0, 2**31))
def test_subscriptions_receive_exactly_the_matching_subjects(
    server: Backend,
    context: RunContext,
    recorder: RecordWriter,
    batch: tuple[list[str], list[str]],
    seed: int,
) -> None:
    """Every (pattern, subject) pair: delivered once iff ``reference.matches`` says it matches."""
    patterns, subjects = batch
    clear_mappings(server)
    began = time.perf_counter()
    observation = observe_subscriptions(server.url, patterns, subjects)
    pairs = max(1, len(patterns) * len(subjects))
    duration_us = int((time.perf_counter() - began) * 1e6 / pairs)
    cases = cases_of(
        judge_matching(context, patterns, subjects, observation, seed=seed, duration_us=duration_us)
    )
    recorder.extend(cases)
    assert len(cases) == len(patterns) * len(subjects)
    diverged = [case for case in cases if case.verdict == "diverge"]
    assert not diverged, describe_divergences(diverged)


DOCUMENTED = {
    # "Matching A Single Token": time.*.east matches time.us.east and time.eu.east.
    ("time.*.east", "time.us.east"): True,
    ("time.*.east", "time.eu.east"): True,
    ("time.*.east", "time.us.east.atlanta"): False,
    # "* cannot match a substring inside a token": time.New*.east. This pattern holds `*` inside a longer
    # token (excluded from the property); only the documented claim, no substring match, is checked.
    ("time.New*.east", "time.NewYork.east"): False,
    # "Matching Multiple Tokens": time.us.> matches time.us.east and time.us.east.atlanta,
    # time.us.* only time.us.east; `>` matches one or more tokens, so not time.us itself.
    ("time.us.>", "time.us.east"): True,
    ("time.us.>", "time.us.east.atlanta"): True,
    ("time.us.>", "time.us"): False,
    ("time.us.*", "time.us.east"): True,
    ("time.us.*", "time.us.east.atlanta"): False,
    # "Monitoring and Wire Taps": a subscriber on > receives every message.
    (">", "time.us"): True,
    (">", "time.eu.east.warsaw"): True,
    # "Mix Wildcards": *.*.east.> receives time.us.east.atlanta.
    ("*.*.east.>", "time.us.east.atlanta"): True,
    ("*.*.east.>", "time.eu.east.warsaw"): True,
    ("*.*.east.>", "time.us.east"): False,
}
"""Every (pattern, subject) pair "Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects
states, with its documented outcome."""


def test_documented_wildcard_examples(server: Backend, context: RunContext, recorder: RecordWriter) -> None:
    """The examples of "Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects ("Subject
    Hierarchies" subjects against the sections' patterns):
    the reference agrees with the document, and the server with the reference, for every pair."""
    for (pattern, subject), documented in DOCUMENTED.items():
        assert matches(pattern, subject) is documented, (pattern, subject)
    patterns = list(dict.fromkeys(pattern for pattern, _ in DOCUMENTED))
    subjects = list(dict.fromkeys(subject for _, subject in DOCUMENTED))
    clear_mappings(server)
    observation = observe_subscriptions(server.url, patterns, subjects)
    cases = cases_of(judge_matching(context, patterns, subjects, observation))
    recorder.extend(cases)
    assert not observation.failure, observation.failure
    by_pair = {(case.source, case.subject): case for case in cases}
    for (pattern, subject), documented in DOCUMENTED.items():
        case = by_pair[(pattern, subject)]
        assert case.observed == ("match" if documented else "no-match"), describe_divergences([case])
    diverged = [case for case in cases if case.verdict != "agree"]
    assert not diverged, describe_divergences(diverged)
