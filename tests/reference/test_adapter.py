"""The adapter protocol: every op, every error kind reachable, and survival of any input line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance.reference import MAPPING_ERROR_KINDS
from nats_conformance.reference.adapter import MAX_LINE_BYTES, OPERATIONS, handle_line, serve

ROOT = Path(__file__).resolve().parents[2]


def ask(request: object) -> dict[str, object]:
    return handle_line(json.dumps(request).encode())


def test_transform_answers_the_mapped_subject() -> None:
    answer = ask({"id": 7, "op": "transform", "source": "foo.*", "destination": "bar.$1", "subject": "foo.x"})
    assert answer == {"id": 7, "subject": "bar.x"}


def test_transform_uses_the_requested_release() -> None:
    request = {"id": "a", "op": "transform", "source": "foo.*.*", "destination": "b.$1", "subject": "foo.x.y"}
    assert ask(request) == {"id": "a", "subject": "b.x"}
    answer = ask({**request, "server_version": "2.9.25"})
    assert answer["error"] == "wildcards-not-used"
    assert isinstance(answer["detail"], str)


def test_match_and_valid_subject() -> None:
    assert ask({"id": 1, "op": "match", "pattern": "a.>", "subject": "a.b.c"}) == {"id": 1, "match": True}
    assert ask({"id": 2, "op": "match", "pattern": "a.*", "subject": "a.b.c"}) == {"id": 2, "match": False}
    assert ask({"id": 3, "op": "valid_subject", "subject": "a.*"}) == {"id": 3, "valid": True}
    assert ask({"id": 4, "op": "valid_subject", "subject": "a.*", "literal": True}) == {
        "id": 4,
        "valid": False,
    }


def test_partition_and_weighted_ops() -> None:
    assert ask({"id": 1, "op": "partition", "tokens": ["customerid2"], "n": 3}) == {"id": 1, "partition": 2}
    request = {
        "id": 2,
        "op": "weighted",
        "source": "s",
        "subject": "s",
        "destinations": [{"destination": "s", "weight": "50%"}],
        "draw": 75,
    }
    assert ask(request) == {"id": 2, "subject": None}
    assert ask({**request, "draw": 10}) == {"id": 2, "subject": "s"}


def test_hello_lists_the_dispatch_table() -> None:
    answer = ask({"id": 0, "op": "hello"})
    assert answer["ops"] == sorted(OPERATIONS)
    assert answer["protocol"] == 2  # contains, valid_mapping and lenient subject rules (version 2)


# one request per mapping error kind, plus the non-mapping kinds
KIND_REQUESTS: dict[str, tuple[str, ...]] = {
    "invalid-source": ("foo bar", "x", "x"),
    "invalid-destination": ("foo.*", "bar.*", "foo.x"),
    "unknown-function": ("foo.*", "bar.{{nope(1)}}", "foo.x"),
    "unsupported-function": ("foo.*", "bar.{{left(1,2)}}", "foo.x", "2.10.14"),
    "function-not-available": ("foo.*", "bar.{{account-hash()}}", "foo.x", "2.14.10"),
    "wrong-argument-count": ("foo.*", "bar.{{wildcard()}}", "foo.x"),
    "invalid-argument": ("foo.*", "bar.{{wildcard(x)}}", "foo.x"),
    "wildcard-index-out-of-range": ("foo.*", "bar.$2", "foo.x"),
    "subject-mismatch": ("foo.*", "bar.$1", "baz.x"),
}


@pytest.mark.parametrize("kind", sorted(KIND_REQUESTS))
def test_transform_error_kinds_are_reachable(kind: str) -> None:
    source, destination, subject, *version = KIND_REQUESTS[kind]
    request = {"id": 1, "op": "transform", "source": source, "destination": destination, "subject": subject}
    answer = ask({**request, "server_version": version[0]} if version else request)
    assert answer["error"] == kind
    assert answer["id"] == 1


def test_remaining_kinds_are_reachable() -> None:
    base = {"id": 1, "op": "transform", "source": "a.*.*", "destination": "b.$1", "subject": "a.x.y"}
    assert ask({**base, "server_version": "2.9"})["error"] == "wildcards-not-used"
    assert ask({**base, "server_version": "9.9"})["error"] == "unknown-version"
    weighted = {"id": 2, "op": "weighted", "source": "s", "subject": "s", "draw": 0}
    cases = {
        "invalid-weight": [{"destination": "x", "weight": 101}],
        "total-weight-exceeded": [{"destination": "x", "weight": 60}, {"destination": "y", "weight": 60}],
        "duplicate-destination": [{"destination": "x", "weight": 10}, {"destination": "x", "weight": 10}],
    }
    for kind, destinations in cases.items():
        assert ask({**weighted, "destinations": destinations})["error"] == kind
    reached = set(KIND_REQUESTS) | {"wildcards-not-used"} | set(cases)
    assert set(MAPPING_ERROR_KINDS) <= reached


@pytest.mark.parametrize(
    "line",
    [
        b"garbage",
        b"[1,2]",
        b"42",
        b"null",
        b'"text"',
        b"{}",
        b'{"id": 1}',
        b'{"id": 1, "op": "nope"}',
        b'{"id": 1, "op": 5}',
        b'{"id": [1], "op": "match"}',
        b'{"id": 1, "op": "match"}',
        b'{"id": 1, "op": "match", "pattern": 5, "subject": "a"}',
        b'{"id": 1, "op": "transform", "source": "a", "destination": "b", "subject": true}',
        b'{"id": 1, "op": "transform", "source": "a", "destination": "b", "subject": "a", '
        b'"server_version": 2}',
        b'{"id": 1, "op": "partition", "tokens": ["a", 1], "n": 3}',
        b'{"id": 1, "op": "partition", "tokens": [], "n": 0}',
        b'{"id": 1, "op": "weighted", "source": "s", "subject": "s", "destinations": [1], "draw": 0}',
        b'{"id": 1, "op": "weighted", "source": "s", "subject": "s", "destinations": [], "draw": 100}',
        b"\xff\xfe\xfd",
        b'{"id": 1, "op": "match", "pattern": "\xc3", "subject": "a"}',
        b"[" * 100_000,
        b'{"id": 1, "op": "valid_subject", "subject": "' + b"a" * 500_000 + b'"}',
    ],
)
def test_malformed_lines_get_a_bad_request_answer(line: bytes) -> None:
    answer = handle_line(line)
    if "valid" in answer:  # the huge-but-valid request is answered normally
        assert answer == {"id": 1, "valid": True}
        return
    assert answer["error"] == "bad-request"
    assert isinstance(answer["detail"], str)
    assert answer["detail"]
    assert answer["id"] in (None, 1)


def test_serve_answers_in_order_and_skips_oversized_lines() -> None:
    lines = [
        b'{"id": 1, "op": "match", "pattern": "a", "subject": "a"}\n',
        b"x" * (MAX_LINE_BYTES + 10) + b"\n",
        b"\n",
        b"\xff\n",
        b'{"id": 2, "op": "valid_subject", "subject": "a"}',
    ]
    out = io.BytesIO()
    serve(io.BytesIO(b"".join(lines)), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a.get("id") for a in answers] == [1, None, None, 2]
    assert answers[1]["error"] == answers[2]["error"] == "bad-request"
    assert "longer than" in answers[1]["detail"]


def test_serve_process_survives_garbage_and_flushes_each_answer() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "nats_conformance.reference", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        for i, garbage in enumerate([b"{{{", b"\xff", b"[]", b'{"op": "transform"}']):
            proc.stdin.write(garbage + b"\n")
            proc.stdin.write(
                json.dumps({"id": i, "op": "match", "pattern": "*", "subject": "x"}).encode() + b"\n"
            )
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["error"] == "bad-request"
            assert json.loads(proc.stdout.readline()) == {"id": i, "match": True}
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        assert proc.stderr is not None
        assert proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
