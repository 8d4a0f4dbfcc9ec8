"""Publish many subjects to a live server and observe, per case, on which subjects they arrived.

The case id of a subject is its position in the list, and each message carries it as payload; a wire
tap (`>`) on a second connection collects every delivery. Publishing is pipelined in chunks, each ended
by a PING. When a chunk's PONG is back on the publisher, a PING goes to the tap, and its PONG proves
every delivery of that chunk has been read (the rule in `fixtures.clients.wire`): the result is complete when
the last chunk's tap PONG is in, with no quiet window. The publisher runs at most `window` chunks ahead
of the tap, so the server never sees the tap as a slow consumer. The result says, for every case id,
the subjects it arrived on (none: not delivered; two: delivered twice).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from fixtures.clients.wire import WireConnection, WireError, publish_frames
from fixtures.deadlines import within

TAP_SID = 1


@dataclass(slots=True)
class Observation:
    """What the tap saw: the first subject per case id (None: not delivered), later ones for the few
    cases delivered more than once, and the failure that ended the batch early, if any."""

    first: list[str | None]
    more: dict[int, list[str]] = field(default_factory=dict)
    failure: str = ""
    published: int = 0
    received: int = 0

    def subjects_of(self, case_id: int) -> list[str]:
        subject = self.first[case_id]
        if subject is None:
            return []
        return [subject, *self.more.get(case_id, ())]

    def note(self, case_id: int, subject: str) -> None:
        """One delivery of `case_id` on `subject`; ids outside the batch are someone else's message."""
        if not 0 <= case_id < len(self.first):
            return
        self.received += 1
        if self.first[case_id] is None:
            self.first[case_id] = subject
        else:
            self.more.setdefault(case_id, []).append(subject)


class Tap(threading.Thread):
    """Reads the tap connection as fast as it can, noting every delivery whose payload is a case id
    (others, such as the reload probe's, are not ours) and counting PONGs for `wait_pongs`."""

    def __init__(self, connection: WireConnection, observation: Observation) -> None:
        super().__init__(daemon=True, name="nats-conformance-tap")
        self.connection = connection
        self.observation = observation
        self.stopping = threading.Event()
        self.error = ""
        self.pongs = 0
        self.changed = threading.Condition()

    def run(self) -> None:
        observation = self.observation
        note, first = observation.note, observation.first
        size = len(first)
        try:
            while not self.stopping.is_set():
                frames = self.connection.receive(time.monotonic() + 0.05)
                if frames is None:
                    continue
                for subject, payload in zip(frames.subjects, frames.payloads, strict=True):
                    if not payload.isdigit():
                        continue
                    case_id = int(payload)
                    if case_id < size and first[case_id] is None:  # the common case, inlined
                        first[case_id] = subject
                        observation.received += 1
                    else:
                        note(case_id, subject)
                pongs = frames.count("PONG")
                if pongs:
                    with self.changed:
                        self.pongs += pongs
                        self.changed.notify_all()
        except WireError as error:
            if self.stopping.is_set():
                return
            self.error = f"tap connection: {error}"
            with self.changed:
                self.changed.notify_all()

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
) -> Observation:
    """Publish every subject (case id = its index); return where each arrived.

    `timeout` bounds each wait for a PONG; `failure` says what ended the batch early, `published`
    how many publications the server confirmed.
    """
    timeout = within(timeout)
    observation = Observation(first=[None] * len(subjects))
    try:
        tap_connection = WireConnection(url, name="nats-conformance-tap", timeout=timeout)
    except WireError as error:
        observation.failure = str(error)
        return observation
    try:
        tap_connection.subscribe(">", TAP_SID)
        tap_connection.flush()
        tap = Tap(tap_connection, observation)
        tap.start()
        try:
            with WireConnection(url, name="nats-conformance-publisher", timeout=timeout) as publisher:
                starts = range(0, len(subjects), chunk)
                for sent, start in enumerate(starts):
                    tap.wait_pongs(sent + 1 - window, timeout)
                    publisher.queue_frames(publish_frames(subjects[start : start + chunk], start))
                    publisher.ping()
                    if sent:
                        _confirm(publisher, tap, observation, start, timeout)
                publisher.await_pong(timeout)
                tap.ping(timeout)
                observation.published = len(subjects)
                tap.wait_pongs(len(starts), timeout)
        except WireError as error:
            observation.failure = str(error)
        finally:
            tap.stopping.set()
            tap_connection.close()
            tap.join()
    finally:
        tap_connection.close()
    return observation


def _confirm(
    publisher: WireConnection, tap: Tap, observation: Observation, published: int, timeout: float
) -> None:
    """The publisher's PONG for the chunk before the last one sent: the server has handled those
    publications, so the tap's PING now fences every delivery of them."""
    publisher.await_pong(timeout)
    observation.published = published
    tap.ping(timeout)
