"""A mapping engine written without the project's reference model, as a third party would write one,
behind the adapter protocol (docs/adapter-protocol.md).

It implements the account mappings of nats-server 2.14 as the public pages describe them:

- subjects and wildcards: https://docs.nats.io/nats-concepts/subjects
- mapping functions: https://docs.nats.io/nats-concepts/subject_mapping ("Subject Token Reordering",
  "Splitting Tokens", "Slicing Tokens", left and right)
- the transform's design: https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-30.md

Where the pages are silent (how arguments are read, how `split` joins empty pieces, cuts at byte
offsets) it follows the public server source, https://github.com/nats-io/nats-server
(server/subject_transform.go, server/sublist.go). Its hello says what it is: account mode, no
`partition` or `weighted` operations and no `partition` or `random` functions, and its own error names
with the protocol's kinds they stand for. It imports nothing from this project.

Run it as a target:
python -m nats_conformance.suites campaign --target "adapter:python examples/adapters/independent.py"
The suite must find no divergence here (tests/suites/test_independent_adapter.py).
"""

from __future__ import annotations

import json
import re
import sys
from itertools import pairwise
from typing import Any

NAME = "example-independent-adapter"
RELEASE = "2.14.5"
FUNCTIONS = ("wildcard", "split", "splitFromLeft", "splitFromRight", "sliceFromLeft", "sliceFromRight")
FUNCTIONS_SINCE_2_10_16 = ("left", "right")
KNOWN_UNIMPLEMENTED = ("partition", "random")

ERROR_KINDS = {
    "bad-source": "invalid-source",
    "bad-destination": "invalid-destination",
    "no-such-function": "unknown-function",
    "not-enough-args": "wrong-argument-count",
    "too-many-args": "wrong-argument-count",
    "bad-argument": "invalid-argument",
    "no-such-wildcard": "wildcard-index-out-of-range",
    "no-match": "subject-mismatch",
}
"""This engine's error names, and the protocol kind each one is."""

WHITESPACE = "\t\n\f\r "
"""What a subject token may not contain (the server's list; the page names the space)."""
FORBIDDEN_BY_DOCUMENT = WHITESPACE + "\x00*>"
"""Characters a token may not contain by "Characters allowed and recommended for subject names"."""
INTEGER = re.compile(r"[+-]?[0-9]+")
"""An integer argument as the server reads one (Go's strconv.Atoi: a sign, ASCII digits)."""
ARGUMENTS = re.compile(r",[\t\n\f\r ]*")


class MappingRefused(Exception):
    """A mapping, or a subject, this engine refuses; `kind` is its own error name."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


# Subjects: "Subject-Based Messaging" (docs.nats.io/nats-concepts/subjects).


def valid_subject(subject: str, *, literal: bool) -> bool:
    """Tokens separated by `.`, none empty; `*` and `>` only as whole tokens, `>` only last (never in a
    literal subject, which is what publishers use); no null, whitespace, `*` or `>` inside a token."""
    tokens = subject.split(".")
    for position, token in enumerate(tokens):
        if token in ("*", ">") and not literal:
            if token == ">" and position != len(tokens) - 1:
                return False
        elif not token or any(character in FORBIDDEN_BY_DOCUMENT for character in token):
            return False
    return True


def matches(pattern: str, subject: str) -> bool:
    """`*` matches exactly one token, a final `>` one or more; other tokens match themselves."""
    want, have = pattern.split("."), subject.split(".")
    for position, token in enumerate(want):
        if token == ">" and position == len(want) - 1:
            return len(have) > position
        if position >= len(have) or token not in ("*", have[position]):
            return False
    return len(want) == len(have)


def server_valid(subject: str) -> bool:
    """A subject the server takes as a mapping source: no empty token, no whitespace, `>` last only."""
    tokens = subject.split(".")
    return all(
        token and not any(c in WHITESPACE for c in token) and (token != ">" or i == len(tokens) - 1)
        for i, token in enumerate(tokens)
    )


# Mapping functions: "Subject Mapping and Partitioning" (docs.nats.io/nats-concepts/subject_mapping).


def name_pattern(name: str) -> str:
    """ "The upper camel case on all subject mapping function names is optional": each word's initial
    may be either case (`splitFromLeft` -> `[sS]plit[fF]rom[lL]eft`)."""
    words = re.findall(r"[a-z]+|[A-Z][a-z]*", name)
    return "".join(f"[{word[0].lower()}{word[0].upper()}]{word[1:]}" for word in words)


CALLS = {
    name: re.compile(r"\{\{[\t\n\f\r ]*" + name_pattern(name) + r"[\t\n\f\r ]*\((.*)\)[\t\n\f\r ]*\}\}")
    for name in (*FUNCTIONS, *FUNCTIONS_SINCE_2_10_16, *KNOWN_UNIMPLEMENTED)
}
"""How each function is called in a destination token (searched inside `{{...}}`)."""


def is_call(token: str) -> bool:
    return len(token) > 4 and token.startswith("{{") and token.endswith("}}")


def integer(text: str, token: str, *, bits: int = 64) -> int:
    text = text.strip(" ")
    if not INTEGER.fullmatch(text) or not -(2 ** (bits - 1)) <= int(text) < 2 ** (bits - 1):
        raise MappingRefused("bad-argument", f"{token}: {text!r} is not a {bits}-bit integer")
    return int(text)


def parse(token: str) -> tuple[str, int, int | str]:
    """A destination token as (function, wildcard index, argument); ('', 0, token) for a literal."""
    if token.startswith("$") and len(token) > 1:
        return ("wildcard", int(token[1:]), 0) if INTEGER.fullmatch(token[1:]) else ("", 0, token)
    if not is_call(token):
        return "", 0, token
    for name, call in CALLS.items():
        found = call.search(token)
        if found is None:
            continue
        if name in KNOWN_UNIMPLEMENTED:
            raise MappingRefused("not-implemented", f"{token}: this engine does not implement {name}")
        arguments = ARGUMENTS.split(found.group(1))
        if name == "wildcard":
            if arguments == [""]:
                raise MappingRefused("not-enough-args", f"{token}: wildcard takes an index")
            if len(arguments) > 1:
                raise MappingRefused("too-many-args", f"{token}: wildcard takes one index")
            return name, integer(arguments[0], token), 0
        if len(arguments) < 2:
            raise MappingRefused("not-enough-args", f"{token}: {name} takes two arguments")
        if len(arguments) > 2:
            raise MappingRefused("too-many-args", f"{token}: {name} takes two arguments")
        index = integer(arguments[0], token)
        if name == "split":
            if " " in arguments[1] or "." in arguments[1]:
                raise MappingRefused("bad-argument", f"{token}: a separator has no space or dot")
            return name, index, arguments[1]
        return name, index, integer(arguments[1], token, bits=32)
    raise MappingRefused("no-such-function", f"{token} names no mapping function")


def check_destination(destination: str, *, open_ended: bool) -> None:
    """The account mapping validator: no empty token or token after `>`, every `{{...}}` token a known
    function, no whitespace in other tokens; no `*` token, and a final `>` exactly when the source
    (`open_ended`) has one."""
    if not destination:
        raise MappingRefused("bad-destination", "the destination is empty")
    tokens = destination.split(".")
    for position, token in enumerate(tokens):
        if not token or ">" in tokens[:position]:
            raise MappingRefused("bad-destination", f"{destination!r} has an empty token or '>' not last")
        if is_call(token):
            if not any(call.search(token) for call in CALLS.values()):
                raise MappingRefused("no-such-function", f"{token} names no mapping function")
        elif token != ">" and any(c in WHITESPACE for c in token):
            raise MappingRefused("bad-destination", f"{token!r} holds whitespace")
    if "*" in tokens:
        raise MappingRefused("bad-destination", "a destination has no '*' token")
    if (tokens[-1] == ">") != open_ended:
        raise MappingRefused("bad-destination", "'>' ends both source and destination, or neither")


def to_bytes(token: str) -> bytes:
    return token.encode("utf-8", "surrogateescape")


def to_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def cut(token: str, positions: list[int]) -> str:
    """The token cut at byte offsets, the pieces joined by `.` (a cut may fall inside a character)."""
    data = to_bytes(token)
    bounds = [0, *positions, len(data)]
    return ".".join(to_text(data[a:b]) for a, b in pairwise(bounds))


def apply_function(name: str, token: str, argument: int | str) -> str:
    """One function on one source token; sizes and positions count bytes, and a token too short to
    cut is left whole ("Splitting Tokens", "Slicing Tokens")."""
    if name == "wildcard":
        return token
    if name == "split":
        return split(token, str(argument))
    n, size = len(to_bytes(token)), int(argument)
    if not 0 < size < n:
        return token
    if name == "splitFromLeft":
        return cut(token, [size])
    if name == "splitFromRight":
        return cut(token, [n - size])
    if name == "sliceFromLeft":
        return cut(token, list(range(size, n, size)))
    if name == "sliceFromRight":
        return cut(token, list(range(n % size or size, n, size)))
    data = to_bytes(token)
    return to_text(data[:size] if name == "left" else data[n - size :])


def split(token: str, separator: str) -> str:
    """`{{split(i, sep)}}` ("Splitting Tokens", `foo-bar` -> `foo.bar`): empty pieces are dropped, and
    as the server joins them a dot goes before a non-empty piece unless only empty pieces lead (so
    `--a` gives `.a`); an empty separator cuts between characters."""
    pieces = token.split(separator) if separator else list(token)
    joined = ""
    for j, piece in enumerate(pieces):
        joined += piece
        if j < len(pieces) - 1 and pieces[j + 1] and not (j == 0 and not piece):
            joined += "."
    return joined


def transform(source: str, destination: str, subject: str) -> str:
    """The subject a message published on `subject` is mapped to by the account mapping."""
    if not server_valid(source):
        raise MappingRefused("bad-source", f"{source!r} is not a valid subject")
    source_tokens = source.split(".")
    open_ended = source_tokens[-1] == ">"
    check_destination(destination, open_ended=open_ended)
    wildcards = [i for i, token in enumerate(source_tokens) if token == "*"]
    parts = []
    for token in destination.split("."):
        name, index, argument = parse(token)
        if name and not 1 <= index <= len(wildcards):
            raise MappingRefused("no-such-wildcard", f"{token}: the source has {len(wildcards)} '*'")
        parts.append((name, index, argument))
    tokens = subject.split(".")
    if not matches(source, subject) or any(tokens[i] in ("", ">") for i in wildcards):
        raise MappingRefused("no-match", f"{subject!r} does not match {source!r}")
    if open_ended and "" in tokens[len(source_tokens) - 1 :]:
        raise MappingRefused("no-match", f"{subject!r} does not match {source!r}")
    out = []
    for name, index, argument in parts:
        if not name and argument == ">":
            out.append(".".join(tokens[len(source_tokens) - 1 :]))
        elif not name:
            out.append(str(argument))
        else:
            out.append(apply_function(name, tokens[wildcards[index - 1]], argument))
    return ".".join(out)


# The protocol: JSON lines in, one JSON line out per request, in order.


def field(request: dict[str, Any], name: str, kind: type) -> Any:
    value = request.get(name)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise MappingRefused("bad-request", f"field {name!r} must be a {kind.__name__}")
    return value


def answer(request: Any) -> dict[str, Any]:
    if not isinstance(request, dict):
        return {"id": None, "error": "bad-request", "detail": "a request is a JSON object"}
    op = request.get("op")
    try:
        if op == "hello":
            result: dict[str, Any] = {
                "protocol": 1,
                "implementation": NAME,
                "server_version": RELEASE,
                "ops": ["hello", "match", "transform", "valid_subject"],
                "functions": [*FUNCTIONS, *FUNCTIONS_SINCE_2_10_16],
                "mode": "account",
                "error_kinds": ERROR_KINDS,
            }
        elif op == "transform":
            source, destination = field(request, "source", str), field(request, "destination", str)
            result = {"subject": transform(source, destination, field(request, "subject", str))}
        elif op == "match":
            result = {"match": matches(field(request, "pattern", str), field(request, "subject", str))}
        elif op == "valid_subject":
            literal = request.get("literal") is True
            result = {"valid": valid_subject(field(request, "subject", str), literal=literal)}
        else:
            raise MappingRefused("bad-request", f"unknown op {op!r}")
    except MappingRefused as refused:
        return {"id": request.get("id"), "error": refused.kind, "detail": str(refused)}
    return {"id": request.get("id"), **result}


def main() -> None:
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            request = None
        sys.stdout.write(json.dumps(answer(request), ensure_ascii=True) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
