"""Publish many subjects to a live server and observe which deliveries they cause, in one of two ways.

One tap, many cases (`publish_and_observe`): the case id of a subject is its position in the list, and
each message carries it as payload; a wire tap (`>`) on a second connection collects every delivery.
Publishing is pipelined in chunks, each ended by a PING. When a chunk's PONG is back on the publisher, a
PING goes to the tap, and its PONG proves every delivery of that chunk has been read (the rule in
`fixtures.clients.wire`): the result is complete when the last chunk's tap PONG is in, with no quiet
window. The publisher runs at most `window` chunks ahead of the tap, so the server never sees the tap as
a slow consumer. The result says, for every case id, the subjects it arrived on (none: not delivered;
two: delivered twice).

Published through another server (a leaf node, `publisher_url`), a publisher's PONG says only that
that server has passed the chunk on: a fence message then follows each chunk on the same connection,
and its delivery to the tap, after every delivery of the chunk, stands for the tap's PONG.

N subscriptions, one connection (`observe_subscriptions`): which subscription received which
publication. One connection subscribes every pattern (subscription id = position + 1), then publishes
the subjects itself, each message carrying its publication index as payload (NATS echoes a connection's
own messages to its subscriptions by default). Publications go in chunks, each followed by a PING;
publisher and observer being one connection, its PONG is the whole barrier of `fixtures.clients.wire`:
when it arrives every delivery of the chunk has been read. No settle time is needed, and a missing
delivery is a real absence. A chunk is sized so that even if every publication matched every
subscription, the deliveries it causes stay far below the socket buffers and the server's slow-consumer
limit. Used by the matching family ("Subject-Based Messaging" - "Wildcards",
https://docs.nats.io/nats-concepts/subjects#wildcards), and with a single ``>`` subscription by the
partition property and the weighted, overlap and imports families, where mappings rewrite the
subjects.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pyarrow as pa

from nats_conformance.fixtures.clients.wire import MessageRun, WireConnection, WireError, publish_frames, text
from nats_conformance.fixtures.config import ServerConfig
from nats_conformance.fixtures.deadlines import within
from nats_conformance.fixtures.servers.base import Backend

TAP_SID = 1
FENCE_SUBJECT = "_nc_fence"
FENCE_ID = 10**17
"""The payload of a fence (`publisher_url`): numbers outside a batch are not its cases."""
READY_ID = FENCE_ID + 1
"""The payload of the messages that wait for the publisher's server to forward to the tap's."""
READY_POLL = 0.05
NOT_FORWARDED: Final = "nothing published on the publisher's server reached the tap"
"""How an observation through another server fails when that server never passes messages on."""
CHUNK_DELIVERIES: Final = 5_000
"""Upper bound on the deliveries one chunk can cause (publications x subscriptions)."""


@dataclass(slots=True)
class Observation:
    """What the tap saw: the case id (`ids`) and subject (`subjects`, an Arrow binary array) of every
    delivery of the batch, in arrival order, where the first delivery of each case is (`first`: its
    position, -1 if none), the cases delivered more than once (`repeated`: all their positions), the
    failure that ended the batch early if any, and how many publications the server confirmed."""

    ids: np.ndarray
    subjects: pa.Array
    first: np.ndarray
    repeated: dict[int, list[int]] = field(default_factory=dict)
    failure: str = ""
    published: int = 0

    @classmethod
    def of(cls, size: int, ids: np.ndarray, subjects: pa.Array, failure: str = "") -> Observation:
        """The observation of a batch of `size` cases from every delivery the tap read: payloads as
        numbers (`ids`, -1 for one that is not a number; numbers outside the batch are someone else's
        message) and the subjects they arrived on (binary or binary view)."""
        subjects = subjects.cast(pa.binary())
        ours = (ids >= 0) & (ids < size)
        if not ours.all():
            ids, subjects = ids[ours], subjects.filter(pa.array(ours))
        first = np.full(size, -1, np.int64)
        repeated: dict[int, list[int]] = {}
        if bool(np.all(ids[1:] > ids[:-1])):  # each case once, in order: the common case
            first[ids] = np.arange(len(ids))
        else:
            unique, where, counts = np.unique(ids, return_index=True, return_counts=True)
            first[unique] = where
            for case_id in unique[counts > 1].tolist():
                repeated[case_id] = np.flatnonzero(ids == case_id).tolist()
        return cls(ids, subjects, first, repeated, failure)

    @property
    def received(self) -> int:
        """Deliveries of the batch's cases (repeats included)."""
        return len(self.ids)

    def first_subjects(self, offset: int, count: int) -> pa.Array:
        """The first subject each of the cases `offset`... arrived on (binary; null: not delivered)."""
        where = self.first[offset : offset + count]
        return self.subjects.take(pa.array(where, mask=where < 0))

    def subjects_of(self, case_id: int) -> list[str]:
        """Every subject `case_id` arrived on, in arrival order (bytes that are not UTF-8 as surrogate
        escapes)."""
        positions = self.repeated.get(case_id) or ([] if self.first[case_id] < 0 else [self.first[case_id]])
        return [text(self.subjects[int(position)].as_py()) for position in positions]


class Tap(threading.Thread):
    """Reads the tap connection as fast as it can, keeping every delivery's subject and payload (as a
    number, see `fixtures.clients.wire.MessageRun`) in columns and counting PONGs for `wait_pongs`."""

    def __init__(self, connection: WireConnection, *, fenced: bool = False) -> None:
        """`fenced`: count fences (`FENCE_ID`) instead of PONGs, and note the first `READY_ID`."""
        super().__init__(daemon=True, name="nats-conformance-tap")
        self.connection = connection
        self.fenced = fenced
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.error = ""
        self.pongs = 0
        self.changed = threading.Condition()
        self.runs: list[MessageRun] = []

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                frames = self.connection.receive(time.monotonic() + 0.05, columns=True)
                if frames is None:
                    continue
                pongs = self._fences(frames.runs) if self.fenced else frames.count("PONG")
                with self.changed:
                    self.runs += frames.runs
                    if frames.subjects:  # frames the columns do not take (headers, CR LF in a payload)
                        self.runs.append(MessageRun.of(frames.subjects, frames.payloads))
                    if pongs:
                        self.pongs += pongs
                        self.changed.notify_all()
        except WireError as error:
            if self.stopping.is_set():
                return
            self.error = f"tap connection: {error}"
            with self.changed:
                self.changed.notify_all()

    def _fences(self, runs: Sequence[MessageRun]) -> int:
        fences = 0
        for run in runs:
            fences += int(np.count_nonzero(run.numbers == FENCE_ID))
            if not self.ready.is_set() and bool(np.any(run.numbers == READY_ID)):
                self.ready.set()
        return fences

    def begin(self) -> None:
        """Forget what was read: deliveries and PONGs (or fences) count from here."""
        with self.changed:
            self.runs = []
            self.pongs = 0

    def observation(self, size: int, failure: str) -> Observation:
        """What was read since `begin`, as the observation of a batch of `size` cases."""
        with self.changed:
            runs = list(self.runs)
        return Observation.of(
            size,
            np.concatenate([run.numbers for run in runs] or [np.empty(0, np.int64)]),
            pa.concat_arrays([run.subjects for run in runs] or [pa.array([], pa.binary_view())]),
            failure,
        )

    def ping(self, timeout: float) -> None:
        """PING the tap; if its connection is gone, fail with the reader's account of why (once it has
        read what the server sent before closing)."""
        try:
            self.connection.ping()
        except WireError as error:
            self.join(timeout)
            raise WireError(self.error or f"tap connection: {error}") from error

    def wait_pongs(self, count: int, timeout: float) -> None:
        """Wait until the tap has read `count` PONGs; raise `WireError` if it fails or time runs out."""
        with self.changed:
            if not self.changed.wait_for(lambda: self.pongs >= count or bool(self.error), timeout):
                raise WireError(f"no PONG on the tap within {timeout:.0f}s")
        if self.error:
            raise WireError(self.error)


def publish_and_observe(
    url: str,
    subjects: Sequence[str],
    *,
    chunk: int = 10_000,
    window: int = 3,
    timeout: float = 30.0,
    publisher_url: str = "",
) -> Observation:
    """Publish every subject (case id = its index) on `publisher_url` (default `url`, the tap's server);
    return where each arrived (`Observer.observe`, on two connections of its own)."""
    with Observer(url, publisher_url) as observer:
        return observer.observe(subjects, chunk=chunk, window=window, timeout=timeout)


class Observer:
    """`publish_and_observe`'s tap on `url` and publisher on `publisher_url` (default `url`), kept open
    from one observation to the next: a family that observes unit after unit on one server opens them
    once (`fixtures.session.Session.keep`). Before each observation a kept pair proves it still reaches
    the server (a PING on each, and through a relaying server a message from the publisher to the tap);
    a pair that does not, as after a restart, is opened anew, and one that fails during an observation is
    closed."""

    def __init__(self, url: str, publisher_url: str = "") -> None:
        self.url = url
        self.publisher_url = publisher_url or url
        self.relayed = self.publisher_url != url
        self._tap: Tap | None = None
        self._publisher: WireConnection | None = None
        self._closing: weakref.finalize[[Tap, WireConnection], Observer] | None = None

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def observe(
        self, subjects: Sequence[str], *, chunk: int = 10_000, window: int = 3, timeout: float = 30.0
    ) -> Observation:
        """Publish every subject (case id = its index); return where each arrived. `timeout` bounds each
        wait for a PONG; `failure` says what ended the batch early, `published` how many publications
        the server confirmed."""
        timeout = within(timeout)
        try:
            tap, publisher = self._connections(timeout)
        except WireError as error:
            self.close()
            return Observation.of(len(subjects), np.empty(0, np.int64), pa.array([], pa.binary()), str(error))
        if not subjects:  # the connections proved the publisher's server reaches the tap's
            return tap.observation(0, "")
        published, failure = 0, ""

        def fence() -> None:
            if self.relayed:
                publisher.queue_frames(publish_frames([FENCE_SUBJECT], FENCE_ID))
                publisher.send()
            else:
                tap.ping(timeout)

        try:
            starts = range(0, len(subjects), chunk)
            for sent, start in enumerate(starts):
                tap.wait_pongs(sent + 1 - window, timeout)
                publisher.queue_frames(publish_frames(subjects[start : start + chunk], start))
                publisher.ping()
                if sent:
                    # The PONG of the chunk before: the server has handled those publications, so the
                    # tap's PING now fences every delivery of them.
                    publisher.await_pong(timeout)
                    published = start
                    fence()
            publisher.await_pong(timeout)
            fence()
            published = len(subjects)
            tap.wait_pongs(len(starts), timeout)
        except WireError as error:
            failure = str(error)
            self.close()  # the tap reads no more once closed
        observation = tap.observation(len(subjects), failure)
        observation.published = published
        return observation

    def _connections(self, timeout: float) -> tuple[Tap, WireConnection]:
        """The kept tap and publisher once they prove they reach the server, else new ones; the tap
        counts from now (`Tap.begin`)."""
        if self._tap is not None and self._publisher is not None:
            tap, publisher = self._tap, self._publisher
            try:
                publisher.flush(timeout)
                if self.relayed:
                    tap.ready.clear()
                    _await_forwarding(publisher, tap, timeout)
                else:
                    tap.begin()
                    tap.ping(timeout)
                    tap.wait_pongs(1, timeout)
                tap.begin()
                return tap, publisher
            except WireError:
                self.close()
        connection = WireConnection(self.url, name="nats-conformance-tap", timeout=timeout)
        try:
            connection.subscribe(">", TAP_SID)
            connection.flush()
        except WireError:
            connection.close()
            raise
        self._tap = tap = Tap(connection, fenced=self.relayed)
        tap.start()
        self._publisher = publisher = WireConnection(
            self.publisher_url, name="nats-conformance-publisher", timeout=timeout
        )
        # An observer dropped unclosed (its session gone) still closes both and ends the tap's reader.
        self._closing = weakref.finalize(self, _end, tap, publisher)
        if self.relayed:
            _await_forwarding(publisher, tap, timeout)
        tap.begin()
        return tap, publisher

    def close(self) -> None:
        """Close both connections and end the tap's reader."""
        tap, publisher, self._tap, self._publisher = self._tap, self._publisher, None, None
        if self._closing is not None:
            self._closing.detach()
        if publisher is not None:
            publisher.close()
        if tap is not None:
            _end(tap)
            tap.join()


def _end(tap: Tap, publisher: WireConnection | None = None) -> None:
    """Close the publisher and the tap's connection; the tap's reader then ends."""
    if publisher is not None:
        publisher.close()
    tap.stopping.set()
    tap.connection.close()


def _await_forwarding(publisher: WireConnection, tap: Tap, timeout: float) -> None:
    """Publish `READY_ID` on the publisher's server until one reaches the tap: the tap's interest has
    reached that server (a leaf node learns it from its hub after the tap subscribed)."""
    deadline = time.monotonic() + timeout
    while True:
        publisher.queue_frames(publish_frames([FENCE_SUBJECT], READY_ID))
        publisher.send()
        if tap.ready.wait(READY_POLL):
            return
        if tap.error:
            raise WireError(tap.error)
        if time.monotonic() > deadline:
            raise WireError(f"{NOT_FORWARDED} within {timeout:.0f}s")


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
    warm: bool = False,
    queued: Collection[int] = (),
) -> SubscriptionObservation:
    """Subscribe ``patterns`` (sids 1..N), publish ``subjects`` (payload = index) on the same connection,
    or on a connection to ``publisher_url`` (another account's user), and return every delivery. Never
    raises for server or network trouble: ``failure`` says what ended the observation, and
    ``published`` how far it got. With ``warm``, every subject is published once before the first
    subscription (to no one): the server then holds them in its match cache, and each subscription is
    added to the cached results it matches (``addToCache``), a path of its own. A pattern at a position
    in ``queued`` is subscribed in a queue group of its own (``q`` and its sid).

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
            if warm:
                for start in range(0, len(subjects), chunk_deliveries):
                    publisher.queue_frames(publish_frames(subjects[start : start + chunk_deliveries], start))
                    publisher.flush()
            for sid, pattern in enumerate(patterns, start=1):
                connection.subscribe(pattern, sid, f"q{sid}" if sid - 1 in queued else None)
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


def pedantic_refusals(url: str, subjects: Sequence[str], *, timeout: float = 10.0) -> list[bool]:
    """Publish ``subjects`` one at a time on a pedantic connection (document section "Pedantic mode",
    https://docs.nats.io/nats-concepts/subjects#pedantic-mode) and say of each whether the server
    answered ``-ERR 'Invalid Publish Subject'`` before the PONG of the PING sent after it. Raises
    `WireError` for server or network trouble."""
    refused = []
    with WireConnection(url, name="nats-conformance-pedantic", timeout=timeout, pedantic=True) as connection:
        for subject in subjects:
            before = connection.refused_publishes
            connection.publish(subject)
            connection.ping()
            connection.await_pong()
            refused.append(connection.refused_publishes > before)
    return refused


def clear_mappings(server: Backend) -> None:
    """Run with no user mappings (only the probe's), so every subject arrives as published."""
    if server.config.mappings or server.config.accounts:
        server.apply(ServerConfig())
