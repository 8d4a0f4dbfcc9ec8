"""Publish many subjects to a live server and observe, per case, on which subjects they arrived.

The case id of a subject is its position in the list, and each message carries it as payload; a wire
tap (`>`) on a second connection collects every delivery. Publishing is pipelined in chunks: each
chunk ends with a round trip, and the publisher runs at most `window` chunks ahead of the tap, so the
server never sees the tap as a slow consumer. The result says, for every case id, the subjects it
arrived on (none: not delivered; two: delivered twice).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from fixtures.wire import WireConnection, WireError

TAP_SID = 1
MSG_FRAME = re.compile(r"MSG ([^ ]+) 1 \d+\r\n(\d+)\r\n", re.ASCII)
"""A tap delivery whose payload is a case id. Subjects never hold spaces or CR/LF (subjects.ru.md)."""


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
    """Reads MSG frames from the tap connection as fast as it can.

    Bytes are decoded up to the last complete line (CR LF never sits inside a UTF-8 sequence), every
    complete frame is matched at once by `MSG_FRAME`, and the text after the last match is kept for
    the next read. Subjects keep undecodable bytes as surrogate escapes, as the reference does.
    """

    def __init__(self, sock: socket.socket, leftover: bytes, observation: Observation) -> None:
        super().__init__(daemon=True, name="nats-conformance-tap")
        self.sock = sock
        self.leftover = leftover
        self.observation = observation
        self.stopping = threading.Event()
        self.error = ""

    def run(self) -> None:
        sock = self.sock
        sock.settimeout(0.05)
        pending = bytearray(self.leftover)
        text = ""
        observation = self.observation
        note, first = observation.note, observation.first
        size = len(first)
        while not self.stopping.is_set():
            try:
                chunk = sock.recv(1 << 20)
            except TimeoutError:
                continue
            except OSError as error:
                self.error = f"tap connection lost: {error}"
                return
            if not chunk:
                self.error = "the server closed the tap connection"
                return
            pending += chunk
            cut = pending.rfind(b"\r\n") + 2
            if cut < 2:
                continue
            text += pending[:cut].decode("utf-8", "surrogateescape")
            del pending[:cut]
            end = 0
            for match in MSG_FRAME.finditer(text):
                case_id = int(match[2])
                if case_id < size and first[case_id] is None:  # the common case, inlined
                    first[case_id] = match[1]
                    observation.received += 1
                else:
                    note(case_id, match[1])
                end = match.end()
            if "PING\r\n" in text:
                sock.sendall(b"PONG\r\n")
            start = text.rfind("MSG ", end)
            text = text[start:] if start >= 0 else ""


def publish_frames(subjects: Sequence[str], first_id: int) -> bytes:
    """PUB frames for `subjects`, the payload of each its case id (`first_id` onwards)."""
    return "".join(
        [
            f"PUB {subject} {len(key)}\r\n{key}\r\n"
            for subject, key in zip(
                subjects, map(str, range(first_id, first_id + len(subjects))), strict=True
            )
        ]
    ).encode("utf-8", "surrogateescape")


def publish_and_observe(
    url: str,
    subjects: Sequence[str],
    *,
    expected_deliveries: int | None = None,
    chunk: int = 10_000,
    window: int = 3,
    settle: float = 0.3,
    timeout: float = 30.0,
) -> Observation:
    """Publish every subject (case id = its index); return where each arrived.

    `expected_deliveries` (default: one per subject) lets the wait end as soon as everything has
    arrived; otherwise it ends once nothing arrived for `settle` seconds after the last round trip.
    """
    observation = Observation(first=[None] * len(subjects))
    want = len(subjects) if expected_deliveries is None else expected_deliveries
    try:
        tap_connection = WireConnection(url, name="nats-conformance-tap")
    except WireError as error:
        observation.failure = str(error)
        return observation
    try:
        tap_connection.subscribe(">", TAP_SID)
        tap_connection.flush()
        tap = Tap(*tap_connection.detach(), observation)
        tap.start()
        try:
            with WireConnection(url, name="nats-conformance-publisher") as publisher:
                for start in range(0, len(subjects), chunk):
                    _wait_for(tap, min(want, start - chunk * (window - 1)), settle, timeout)
                    if tap.error:
                        break
                    publisher.queue_frames(publish_frames(subjects[start : start + chunk], start))
                    publisher.flush(timeout=timeout)
                    observation.published = min(start + chunk, len(subjects))
            _wait_for(tap, want, settle, timeout)
        except WireError as error:
            observation.failure = str(error)
        finally:
            tap.stopping.set()
            tap.join()
        if tap.error and not observation.failure:
            observation.failure = tap.error
    finally:
        tap_connection.close()
    return observation


def _wait_for(tap: Tap, count: int, settle: float, timeout: float) -> None:
    """Wait until the tap received `count` messages, or nothing new came for `settle` seconds."""
    observation = tap.observation
    deadline = time.monotonic() + timeout
    last, last_change = observation.received, time.monotonic()
    while observation.received < count and not tap.error:
        now = time.monotonic()
        if observation.received != last:
            last, last_change = observation.received, now
        elif now - last_change > settle or now > deadline:
            return
        time.sleep(0.0005)
