"""Observe deliveries to many subscriptions at once: which subscription received which publication.

One connection subscribes every pattern (subscription id = position + 1), then publishes the subjects
itself, each message carrying its publication index as payload (NATS echoes a connection's own messages
to its subscriptions by default). Publications go in chunks, each followed by a PING; publisher and
observer being one connection, its PONG is the whole barrier of `fixtures.clients.wire`: when it arrives every
delivery of the chunk has been read. No settle time is needed, and a missing delivery is a real absence.

A chunk is sized so that even if every publication matched every subscription, the deliveries it causes
stay far below the socket buffers and the server's slow-consumer limit.

Used by ``suites/test_matching.py`` ("Subject-Based Messaging" - "Wildcards",
https://docs.nats.io/nats-concepts/subjects#wildcards), and with a single ``>``
subscription by the partition and weighted properties, where mappings rewrite the subjects.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from fixtures.clients.wire import WireConnection, WireError, publish_frames
from fixtures.config import ServerConfig
from fixtures.deadlines import within
from fixtures.servers.base import Backend
from records.schema import Case
from reference.matching import SubjectIndex
from suites.engine.verdicts import RunContext, make_case

__all__ = [
    "CHUNK_DELIVERIES",
    "SubscriptionObservation",
    "collect_until_pong",
    "judge_matching",
    "observe_subscriptions",
    "wildcard_kinds",
]

CHUNK_DELIVERIES: Final = 5_000
"""Upper bound on the deliveries one chunk can cause (publications x subscriptions)."""


@dataclass(slots=True)
class SubscriptionObservation:
    """What one observation saw.

    Attributes:
        deliveries: (subscription id, publication index) -> the subjects it was delivered with, in order
            (one entry per delivery: two entries mean the subscription received it twice).
        published: how many publications were sent and confirmed by a round trip.
        failure: why the observation ended early (empty when it completed).
    """

    deliveries: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    published: int = 0
    failure: str = ""

    def subjects_for(self, sid: int, index: int) -> list[str]:
        """The subjects publication ``index`` reached subscription ``sid`` with (empty: not delivered)."""
        return self.deliveries.get((sid, index), [])

    def received(self, index: int) -> bool:
        """True iff publication ``index`` was confirmed sent (its absence from a subscription means
        something), which holds for every publication unless the observation failed."""
        return index < self.published


def collect_until_pong(
    connection: WireConnection, observation: SubscriptionObservation, timeout: float
) -> None:
    """Read deliveries (payload = publication index; others, like the reload probe's, are not ours)
    until the connection's next PONG; raise `WireError` if none comes within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    deliveries = observation.deliveries
    while True:
        frames = connection.receive(deadline)
        if frames is None:
            raise WireError(f"no PONG from the server within {timeout:.0f}s")
        for sid, payload, subject in zip(frames.sids, frames.payloads, frames.subjects, strict=True):
            if payload.isdigit():
                deliveries.setdefault((sid, int(payload)), []).append(subject)
        if frames.count("PONG"):
            return


def observe_subscriptions(
    url: str,
    patterns: Sequence[str],
    subjects: Sequence[str],
    *,
    publisher_url: str = "",
    chunk_deliveries: int = CHUNK_DELIVERIES,
    timeout: float = 10.0,
) -> SubscriptionObservation:
    """Subscribe ``patterns`` (sids 1..N), publish ``subjects`` (payload = index) on the same connection,
    or on a connection to ``publisher_url`` (another account's user), and return every delivery. Never
    raises for server or network trouble: ``failure`` says what ended the observation, and
    ``published`` how far it got.

    With a publisher of its own, its PONG comes first: the deliveries of its publications are then
    queued for the subscribing connection, whose own PING/PONG proves they were read.
    """
    timeout = within(timeout)
    observation = SubscriptionObservation()
    with contextlib.ExitStack() as opened:
        try:
            connection = opened.enter_context(
                WireConnection(url, name="nats-conformance-subscriptions", timeout=timeout)
            )
            publisher = connection
            if publisher_url:
                publisher = opened.enter_context(
                    WireConnection(publisher_url, name="nats-conformance-publisher", timeout=timeout)
                )
            for sid, pattern in enumerate(patterns, start=1):
                connection.subscribe(pattern, sid)
            connection.flush()
            per_chunk = max(1, chunk_deliveries // max(1, len(patterns)))
            for start in range(0, len(subjects), per_chunk):
                stop = min(start + per_chunk, len(subjects))
                publisher.queue_frames(publish_frames(subjects[start:stop], start))
                if publisher is not connection:
                    publisher.flush()
                connection.ping()
                collect_until_pong(connection, observation, timeout)
                observation.published = stop
        except WireError as error:
            observation.failure = str(error)
    return observation


def wildcard_kinds(pattern: str) -> tuple[str, ...]:
    """The wildcards a pattern uses, as the `functions` column of its cases: ``partial`` for ``*``,
    ``full`` for a final ``>`` (empty for a literal pattern)."""
    tokens = pattern.split(".")
    kinds = []
    if "*" in tokens:
        kinds.append("partial")
    if tokens[-1] == ">":
        kinds.append("full")
    return tuple(kinds)


def judge_matching(
    context: RunContext,
    patterns: Sequence[str],
    subjects: Sequence[str],
    observation: SubscriptionObservation,
    *,
    seed: int = 0,
    duration_us: int = 0,
) -> list[Case]:
    """One case per (pattern, subject): the reference (``SubjectIndex``, built on ``matches``) says
    ``match`` or ``no-match``; the server delivered the publication to the pattern's subscription once
    (``match``), never (``no-match``), or more often (``match|match``...). Patterns are subscribed in
    order, subscription id = position + 1."""
    index = SubjectIndex(patterns)
    cases: list[Case] = []
    kinds = [wildcard_kinds(pattern) for pattern in patterns]
    for position, subject in enumerate(subjects):
        matched = index.match(subject)
        confirmed = observation.received(position)
        for slot, pattern in enumerate(patterns):
            expected = "match" if pattern in matched else "no-match"
            arrived = observation.subjects_for(slot + 1, position)
            observed = "|".join("match" if got == subject else f"match:{got}" for got in arrived)
            observed = observed or "no-match"
            if not arrived and not confirmed:
                difference, observed = "unknown", ""
            elif observed == expected:
                difference = ""
            elif not arrived:
                difference = "not-delivered"
            elif expected == "no-match":
                difference = "unexpected-delivery"
            elif len(arrived) > 1:
                difference = "duplicated"
            else:
                difference = "wrong-subject"
            cases.append(
                make_case(
                    context,
                    feature="matching",
                    functions=kinds[slot],
                    source=pattern,
                    destination="",
                    subject=subject,
                    expected=expected,
                    observed=observed,
                    difference=difference,
                    detail=observation.failure if difference == "unknown" else "",
                    seed=seed,
                    duration_us=duration_us,
                )
            )
    return cases


def clear_mappings(server: Backend) -> None:
    """Run with no user mappings (only the probe's), so every subject arrives as published."""
    if server.config.mappings or server.config.accounts:
        server.apply(ServerConfig())
