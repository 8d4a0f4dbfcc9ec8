"""suites.subscriptions: frames, the MSG reader, and the (pattern, subject) judgement."""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator

import pytest

from fixtures.wire import WireError
from records.expectations import Expectations
from suites.differential import RunContext
from suites.subscriptions import (
    SubscriptionObservation,
    _Reader,
    judge_matching,
    publication_frames,
    wildcard_kinds,
)


def test_publication_frames_carry_their_index_and_end_with_a_ping() -> None:
    frames = publication_frames(["a.b", "ö.c", "x"], 1, 3)
    assert frames == b"PUB \xc3\xb6.c 1\r\n1\r\nPUB x 1\r\n2\r\nPING\r\n"


@pytest.mark.parametrize(
    ("pattern", "kinds"),
    [("a.b", ()), ("a.*", ("partial",)), ("a.>", ("full",)), ("*.a.>", ("partial", "full")), ("a>", ())],
)
def test_wildcard_kinds(pattern: str, kinds: tuple[str, ...]) -> None:
    assert wildcard_kinds(pattern) == kinds


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, server = socket.socketpair()
    try:
        yield ours, server
    finally:
        ours.close()
        server.close()


def test_reader_collects_msg_frames_split_anywhere_until_pong(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, server = pair
    observation = SubscriptionObservation()
    stream = (
        b"MSG a.b 1 1\r\n0\r\nMSG a.b 2 1\r\n0\r\nMSG _nc_probed.gen1 1 5\r\nprobe\r\n"
        b"PING\r\nMSG a.x 1 reply 2\r\n12\r\nMSG a.b 1 1\r\n0\r\n+OK\r\nPONG\r\nMSG late 1 1\r\n3\r\n"
    )
    reader = _Reader(ours, stream[:7], observation)
    for start in range(7, len(stream), 5):
        server.sendall(stream[start : start + 5])
    reader.until_pong(timeout=2)
    assert observation.deliveries == {(1, 0): ["a.b", "a.b"], (2, 0): ["a.b"], (1, 12): ["a.x"]}
    assert server.recv(100) == b"PONG\r\n"  # the server's PING was answered
    assert bytes(reader.buffer).startswith(b"MSG late")  # what follows the PONG is kept for next time


def test_reader_raises_on_err_and_on_silence(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, server = pair
    server.sendall(b"-ERR 'Invalid Subject'\r\n")
    with pytest.raises(WireError, match="Invalid Subject"):
        _Reader(ours, b"", SubscriptionObservation()).until_pong(timeout=2)
    with pytest.raises(WireError, match="no PONG"):
        _Reader(ours, b"", SubscriptionObservation()).until_pong(timeout=0.1)


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
