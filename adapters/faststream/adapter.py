"""Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with FastStream's
NATS broker, pinned in requirements.txt. Every answer comes from one of its functions; this file only
reads requests and writes answers:

- match: faststream.nats.schemas.js_stream.is_subject_match_wildcard(subject, pattern), what
  TestNatsBroker (faststream.nats.testing) delivers a published message by, in place of a server;
- contains: SubjectsCollection, the subject list of a JStream, which drops a subject that another one
  already covers: `filter` appended to `[within]` leaves the list as it was when `within` covers it.
"""

import json
import sys
from importlib.metadata import version

from faststream.nats.schemas.js_stream import SubjectsCollection, is_subject_match_wildcard

ANSWERED_BY = {
    "match": "faststream.nats.schemas.js_stream.is_subject_match_wildcard",
    "contains": "faststream.nats.schemas.js_stream.SubjectsCollection.append",
}


def answer(request: object) -> dict[str, object]:
    if not isinstance(request, dict):
        return {"id": None, "error": "bad-request", "detail": "not an object"}
    ident = request.get("id")
    op = request.get("op")
    if op == "hello":
        return {
            "id": ident,
            "protocol": 2,
            "implementation": f"faststream {version('faststream')}",
            "server_version": None,
            "ops": ["hello", "match", "contains"],
            "answered_by": ANSWERED_BY,
        }
    names = {"match": ("pattern", "subject"), "contains": ("filter", "within")}.get(str(op))
    if names is None:
        return {"id": ident, "error": "bad-request", "detail": f"unknown op {json.dumps(op)}"}
    first, second = (request.get(name) for name in names)
    if not isinstance(first, str) or not isinstance(second, str):
        return {"id": ident, "error": "bad-request", "detail": f"fields {names} must be strings"}
    try:
        if op == "match":
            return {"id": ident, "match": bool(is_subject_match_wildcard(second, first))}
        listed = SubjectsCollection([second])
        before = list(listed)
        listed.append(first)
        return {"id": ident, "contained": list(listed) == before}
    except Exception as error:  # a crash of the library is data (internal-error), never fatal
        return {"id": ident, "error": "internal-error", "detail": f"{type(error).__name__}: {error}"[:200]}


def reply_to(line: bytes) -> dict[str, object]:
    try:
        return answer(json.loads(line))
    except ValueError:
        return {"id": None, "error": "bad-request", "detail": "line is not JSON"}


def main() -> None:
    for line in filter(bytes.strip, sys.stdin.buffer):
        sys.stdout.write(json.dumps(reply_to(line), ensure_ascii=True) + "\n")  # ASCII, as the protocol says
        sys.stdout.flush()


if __name__ == "__main__":
    main()
