"""Publish many subjects to a live server and observe, per case, on which subjects they arrived.

Each message carries its case id as payload; a wire tap (`>`) on a second connection collects every
delivery. Publishing goes in chunks, each confirmed by a round trip and followed by a wait until the
tap has caught up, so the server never sees the tap as a slow consumer. The result says, for every
case id, the list of subjects it arrived on (empty: not delivered; two: delivered twice).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from fixtures.wire import CRLF, WireConnection, WireError

TAP_SID = 1


@dataclass(slots=True)
class Observation:
    """What the tap saw: subjects per case id, and the failure that ended the batch early, if any."""

    arrivals: dict[int, list[str]] = field(default_factory=dict)
    failure: str = ""
    published: int = 0

    def subjects_of(self, case_id: int) -> list[str]:
        return self.arrivals.get(case_id, [])


class _Tap(threading.Thread):
    """Reads MSG frames from the tap connection as fast as it can (payload = ASCII case id)."""

    def __init__(self, connection: WireConnection, observation: Observation) -> None:
        super().__init__(daemon=True, name="nats-conformance-tap")
        self.connection = connection
        self.observation = observation
        self.received = 0
        self.stopping = threading.Event()
        self.error = ""

    def run(self) -> None:
        sock, leftover = self.connection.detach()
        sock.settimeout(0.05)
        buffer = bytearray(leftover)
        arrivals = self.observation.arrivals
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
            buffer += chunk
            position = 0
            while True:
                end = buffer.find(CRLF, position)
                if end < 0:
                    break
                line = buffer[position:end]
                if line[:4] == b"MSG ":
                    parts = line.split(b" ")
                    size = int(parts[-1])
                    body_end = end + 2 + size
                    if body_end + 2 > len(buffer):
                        break
                    payload = buffer[end + 2 : body_end]
                    position = body_end + 2
                    if payload.isdigit():
                        arrivals.setdefault(int(payload), []).append(
                            parts[1].decode("utf-8", "surrogateescape")
                        )
                        self.received += 1
                    continue
                if line[:4] == b"PING":
                    sock.sendall(b"PONG\r\n")
                position = end + 2
            del buffer[:position]


def publish_and_observe(
    url: str,
    publications: Sequence[tuple[int, str]],
    *,
    expected_deliveries: int | None = None,
    chunk: int = 20_000,
    settle: float = 0.3,
    timeout: float = 30.0,
) -> Observation:
    """Publish (case id, subject) pairs; return where each arrived.

    `expected_deliveries` (default: one per publication) lets the wait end as soon as everything has
    arrived; otherwise it ends once nothing arrived for `settle` seconds after the last round trip.
    """
    observation = Observation()
    want = len(publications) if expected_deliveries is None else expected_deliveries
    try:
        tap_connection = WireConnection(url, name="nats-conformance-tap")
    except WireError as error:
        observation.failure = str(error)
        return observation
    try:
        tap_connection.subscribe(">", TAP_SID)
        tap_connection.flush()
        tap = _Tap(tap_connection, observation)
        tap.start()
        try:
            with WireConnection(url, name="nats-conformance-publisher") as publisher:
                for start in range(0, len(publications), chunk):
                    for case_id, subject in publications[start : start + chunk]:
                        publisher.publish(subject, str(case_id).encode())
                    publisher.flush(timeout=timeout)
                    observation.published = min(start + chunk, len(publications))
                    _wait_for(tap, min(want, observation.published), settle, timeout)
                    if tap.error:
                        break
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


def _wait_for(tap: _Tap, count: int, settle: float, timeout: float) -> None:
    """Wait until the tap received `count` messages, or nothing new came for `settle` seconds."""
    deadline = time.monotonic() + timeout
    last, last_change = tap.received, time.monotonic()
    while tap.received < count and not tap.error:
        now = time.monotonic()
        if tap.received != last:
            last, last_change = tap.received, now
        elif now - last_change > settle or now > deadline:
            return
        time.sleep(0.001)
