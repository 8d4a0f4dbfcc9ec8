"""The wire tap's frame parsing: byte streams cut anywhere still give every delivery exactly once."""

from __future__ import annotations

import socket
import time

import pytest

from suites.harness import Observation, Tap, publish_frames

FRAMES = (
    b"MSG out.a 1 1\r\n0\r\n"
    b"MSG out.\xc3\xb6.b 1 1\r\n1\r\n"  # UTF-8 subject
    b"PING\r\n"
    b"MSG _nc_probed.gen3 1 5\r\nprobe\r\n"  # not a case payload: ignored
    b"MSG out.\xff 1 1\r\n2\r\n"  # not UTF-8: kept as a surrogate escape
    b"MSG out.a 1 1\r\n0\r\n"  # case 0 again: a duplicate
    b"MSG out.zzz 1 2\r\n99\r\n"  # outside the batch
    b"MSG out.c 1 1\r\n3\r\n"
)


def tap_over(chunks: list[bytes], cases: int) -> tuple[Observation, bytes]:
    """Feed `chunks` to a tap through a socket pair; return what it observed and what it answered."""
    ours, theirs = socket.socketpair()
    observation = Observation(first=[None] * cases)
    tap = Tap(theirs, b"", observation)
    tap.start()
    for chunk in chunks:
        ours.sendall(chunk)
        time.sleep(0.002)
    deadline = time.monotonic() + 5
    while observation.received < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    tap.stopping.set()
    tap.join()
    ours.setblocking(False)
    try:
        answer = ours.recv(100)
    except BlockingIOError:
        answer = b""
    ours.close()
    theirs.close()
    return observation, answer


@pytest.mark.parametrize("cut", [1, 2, 3, 7, 13, len(FRAMES)])
def test_frames_cut_anywhere_are_all_seen(cut: int) -> None:
    chunks = [FRAMES[i : i + cut] for i in range(0, len(FRAMES), cut)]
    observation, answer = tap_over(chunks, cases=4)
    assert observation.subjects_of(0) == ["out.a", "out.a"]
    assert observation.subjects_of(1) == ["out.ö.b"]
    assert observation.subjects_of(2) == ["out.\udcff"]
    assert observation.subjects_of(3) == ["out.c"]
    assert observation.received == 5
    assert answer == b"PONG\r\n"


def test_a_closed_connection_is_a_failure() -> None:
    ours, theirs = socket.socketpair()
    observation = Observation(first=[None])
    tap = Tap(theirs, b"", observation)
    tap.start()
    ours.close()
    tap.join(timeout=5)
    assert tap.error == "the server closed the tap connection"
    assert observation.subjects_of(0) == []
    theirs.close()


def test_publish_frames_carry_case_ids_from_the_first() -> None:
    assert publish_frames(["a.b", "ö"], 9) == b"PUB a.b 1\r\n9\r\nPUB \xc3\xb6 2\r\n10\r\n"
    assert publish_frames(["x.\udcff"], 0) == b"PUB x.\xff 1\r\n0\r\n"
