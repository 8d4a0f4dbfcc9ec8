"""An adapter with deliberate bugs, to prove that the suite finds them (tests/suites/test_library.py).

It answers like the reference except for three planted bugs, each a classic of mapping engines:

1. Partition hashing with a separator: the key of `{{partition(n, i, j, ...)}}` with two or more
   wildcards (and the `partition` operation with two or more tokens) is the tokens joined by `.`, where
   the document's key is the tokens concatenated ("Deterministic Subject token Partitioning").
2. An off-by-one in slicing: `{{sliceFromLeft(i, size)}}` cuts up to and including the token's end, so a
   token whose length is a multiple of `size` gets an empty last token (`aa` by 1 gives `a.a.`).
3. `>` matches nothing after it: `foo.>` matches `foo` (the document: `>` matches one or more tokens).

Run it as a target:
python -m nats_conformance.suites campaign --target "adapter:python examples/adapters/planted_bugs.py"
"""

from __future__ import annotations

import re
import sys
from typing import Any

import nats_conformance.reference.functions
from nats_conformance.reference.adapter import handle_request, serve
from nats_conformance.reference.functions import _cut, _length
from nats_conformance.reference.matching import matches
from nats_conformance.reference.partition import fnv1a32

NAME = "example-planted-bugs-adapter"
PARTITION = re.compile(r"\{\{\s*partition\s*\(\s*(\d+)\s*((?:,\s*-?\d+\s*){2,})\)\s*\}\}", re.IGNORECASE)
ONE_TOKEN = re.compile(r"[^{}$]*|\$\d+|\{\{\s*wildcard\s*\(\s*\d+\s*\)\s*\}\}", re.IGNORECASE)


def slice_from_left(token: str, size: int) -> str:
    """Bug 2: the cuts run to the token's length inclusive."""
    n = _length(token)
    if not 0 < size < n:
        return token
    return _cut(token, list(range(size, n + 1, size)))


def separated_hash(keys: list[str], n: int) -> int:
    """Bug 1: the key's tokens are joined by a dot."""
    return fnv1a32(".".join(keys).encode("utf-8", "surrogateescape")) % n


def transform(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Bug 1 in mappings: recompute a multi-key partition token that follows only one-token parts."""
    tokens = str(request.get("destination", "")).split(".")
    found = [(i, PARTITION.fullmatch(t)) for i, t in enumerate(tokens) if PARTITION.fullmatch(t)]
    if "error" in answer or len(found) != 1:
        return answer
    position, match = found[0]
    if not all(ONE_TOKEN.fullmatch(t) for t in tokens[:position]):
        return answer
    source, subject = request["source"].split("."), request["subject"].split(".")
    wildcards = [subject[i] for i, part in enumerate(source) if part == "*"]
    indexes = [int(x) for x in match.group(2).replace(" ", "").strip(",").split(",")]
    n = int(match.group(1))
    if n < 1 or not all(1 <= i <= len(wildcards) for i in indexes):
        return answer
    mapped = answer["subject"].split(".")
    mapped[position] = str(separated_hash([wildcards[i - 1] for i in indexes], n))
    return {**answer, "subject": ".".join(mapped)}


def handle(request: Any) -> dict[str, Any]:
    answer = handle_request(request)
    if not isinstance(request, dict) or "error" in answer:
        return answer
    op = request.get("op")
    if op == "hello":
        answer["implementation"] = NAME
        answer["answered_by"] = {"transform": "transform", "partition": "separated_hash", "match": "handle"}
    elif op == "transform":
        answer = transform(request, answer)
    elif op == "partition" and len(request["tokens"]) >= 2:
        answer["partition"] = separated_hash(request["tokens"], request["n"])
    elif op == "match" and request["pattern"].endswith(".>"):
        answer["match"] = answer["match"] or matches(request["pattern"][:-2], request["subject"])
    return answer


if __name__ == "__main__":
    nats_conformance.reference.functions.slice_from_left = slice_from_left
    serve(sys.stdin.buffer, sys.stdout.buffer, handle)
