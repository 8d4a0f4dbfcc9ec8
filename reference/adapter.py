"""The adapter protocol: JSON lines in, one JSON line out per request, in order.

Specified in ``docs/adapter-protocol.md``.

Third-party implementations speak the same protocol, so suites can drive any of them like the reference.
Operations live in the :data:`OPERATIONS` dispatch table; each takes the decoded request object and returns
the answer fields: it parses the request into its typed question, answers it with a typed answer and
returns that answer's fields (`reference.protocol` is the one place that knows the field names). Nothing
here raises: every failure becomes an answer with ``error`` and ``detail``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import IO, Any, Final

from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.matching import contains, matches
from nats_conformance.reference.partition import partition
from nats_conformance.reference.profiles import NEWEST, ReleaseProfile, for_version
from nats_conformance.reference.protocol import (
    INTERNAL_ERROR,
    PROTOCOL_VERSION,
    QUESTIONS,
    BadRequestError,
    Contained,
    ContainsQuestion,
    Greeting,
    Hello,
    Mapped,
    Matched,
    MatchQuestion,
    Partitioned,
    PartitionQuestion,
    Question,
    Refusal,
    TransformQuestion,
    Validity,
    ValidMappingQuestion,
    ValidSubjectQuestion,
    WeightedQuestion,
    answer_fields,
)
from nats_conformance.reference.protocol import Answer as Reply
from nats_conformance.reference.subjects import is_valid_publish_subject, is_valid_subject
from nats_conformance.reference.transform import Transform, compile_transform
from nats_conformance.reference.weighted import (
    WeightedDestination,
    WeightedMapping,
    compile_weighted,
    parse_weight,
)

__all__ = [
    "MAX_LINE_BYTES",
    "OPERATIONS",
    "PROTOCOL_VERSION",
    "BadRequestError",
    "handle_line",
    "handle_request",
    "reply",
    "serve",
    "transform_answer",
    "transform_reply",
]

#: Longest request line accepted; longer lines are answered with ``bad-request`` and skipped.
MAX_LINE_BYTES: Final = 1 << 20

Request = Mapping[str, Any]
Answer = dict[str, Any]


def _profile(version: str | None) -> ReleaseProfile:
    return NEWEST if version is None else for_version(version)


@functools.lru_cache(maxsize=4096)
def _compiled(
    source: str, destination: str, version: str | None, engine_only: bool
) -> Transform | ConformanceError:
    """A mapping compiled once however many subjects are asked about (a refusal is kept too)."""
    try:
        return compile_transform(source, destination, _profile(version), engine_only=engine_only)
    except ConformanceError as refusal:
        return refusal


def _mapping(question: TransformQuestion) -> Transform:
    compiled = _compiled(question.source, question.destination, question.server_version, question.engine_only)
    if isinstance(compiled, ConformanceError):
        raise compiled.with_traceback(None)  # the kept refusal, without the traceback of earlier raises
    return compiled


def _transform(question: TransformQuestion) -> Mapped:
    return Mapped(_mapping(question).apply(question.subject))


def transform_reply(
    source: str, destination: str, subject: str, version: str | None, engine_only: bool = False
) -> Mapped | Refusal:
    """The reference's answer to a well-formed transform question (its fields, not built into a
    `TransformQuestion`: this is the judging's hot path), the mapping compiled once, no request checks
    per subject. Never raises."""
    compiled = _compiled(source, destination, version, engine_only)
    try:
        if isinstance(compiled, ConformanceError):
            raise compiled.with_traceback(None)
        return Mapped(compiled.apply(subject))
    except ConformanceError as exc:
        return Refusal(exc.kind, str(exc))
    except Exception as exc:  # as handle_request: reported as data
        return Refusal(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


def transform_answer(
    source: str, destination: str, subject: str, version: str | None, engine_only: bool = False
) -> Answer:
    """The answer `handle_request` gives a well-formed transform request, without its id (the answer
    fields of `transform_reply`). Never raises."""
    return answer_fields(transform_reply(source, destination, subject, version, engine_only))


def _match(question: MatchQuestion) -> Matched:
    return Matched(matches(question.pattern, question.subject))


def _valid_subject(question: ValidSubjectQuestion) -> Validity:
    subject = question.subject
    return Validity(is_valid_publish_subject(subject) if question.literal else is_valid_subject(subject))


def _contains(question: ContainsQuestion) -> Contained:
    return Contained(contains(question.filter, question.within))


def mapping_refusal(question: ValidMappingQuestion) -> ConformanceError | None:
    """Why the reference refuses a weighted mapping (None: it is valid): `compile_weighted`'s checks,
    the rules of "Weighted Mappings" (https://docs.nats.io/nats-concepts/subject_mapping, "Weighted
    Mappings": weights 0..100 that add up to 100 at most; each destination a valid mapping of the
    source)."""
    profile = _profile(question.server_version)  # an unknown release is an error answer
    try:
        entries = [
            WeightedDestination(entry.destination, parse_weight(entry.weight), entry.cluster)
            for entry in question.destinations
        ]
        compile_weighted(question.source, entries, profile)
    except ConformanceError as refusal:
        return refusal.with_traceback(None)
    return None


def _valid_mapping(question: ValidMappingQuestion) -> Validity:
    refused = mapping_refusal(question)
    return Validity(True) if refused is None else Validity(False, refused.kind)


def _partition(question: PartitionQuestion) -> Partitioned:
    return Partitioned(partition(question.tokens, question.n))


def _weighted_mapping(question: WeightedQuestion) -> WeightedMapping:
    entries = [
        WeightedDestination(entry.destination, parse_weight(entry.weight), entry.cluster)
        for entry in question.destinations
    ]
    return compile_weighted(question.source, entries, _profile(question.server_version), question.cluster)


def _weighted(question: WeightedQuestion) -> Mapped:
    return Mapped(_weighted_mapping(question).apply(question.subject, question.draw))


def _hello(_question: Hello) -> Greeting:
    return Greeting(
        implementation="nats-conformance reference",
        protocol=PROTOCOL_VERSION,
        server_version=NEWEST.name,
        ops=frozenset(OPERATIONS),
    )


def reply(question: Question) -> Reply:
    """The reference's answer to a question (raises the `ConformanceError` of a refusal)."""
    return REPLIES[question.op](question)


REPLIES: Final[Mapping[str, Callable[[Any], Reply]]] = {
    Hello.op: _hello,
    TransformQuestion.op: _transform,
    MatchQuestion.op: _match,
    ValidSubjectQuestion.op: _valid_subject,
    PartitionQuestion.op: _partition,
    WeightedQuestion.op: _weighted,
    ContainsQuestion.op: _contains,
    ValidMappingQuestion.op: _valid_mapping,
}
"""The reference's answer to each operation's question, by ``op`` name."""


PARSERS: Final[Mapping[str, Callable[[Request], Question]]] = {
    **QUESTIONS,
    TransformQuestion.op: functools.partial(TransformQuestion.parse, check=_mapping),
    WeightedQuestion.op: functools.partial(WeightedQuestion.parse, check=_weighted_mapping),
}
"""Each operation's request parsed as the reference always has: a mapping refused before the subject
(and a weighted list's draw) is read."""


def _wired(op: str) -> Callable[[Request], Answer]:
    answered, parse = REPLIES[op], PARSERS[op]
    return lambda request: answer_fields(answered(parse(request)))


#: The operations, by ``op`` name: each takes a request object and returns the answer fields (the
#: typed question parsed, answered, and its answer's fields). Later protocol versions add entries;
#: answers only gain fields.
OPERATIONS: Final[Mapping[str, Callable[[Request], Answer]]] = {op: _wired(op) for op in REPLIES}


def _error(request_id: Any, kind: str, detail: str) -> Answer:
    return {"id": request_id, "error": kind, "detail": detail}


def handle_request(request: Any) -> Answer:
    """The answer to one decoded request (any JSON value). Never raises."""
    if not isinstance(request, dict):
        return _error(None, "bad-request", f"request must be a JSON object (got {type(request).__name__})")
    request_id = request.get("id")
    if isinstance(request_id, (dict, list)):
        return _error(None, "bad-request", "field 'id' must be a string, number or null")
    op = request.get("op")
    handler = OPERATIONS.get(op) if isinstance(op, str) else None
    if handler is None:
        return _error(request_id, "bad-request", f"unknown op {op!r}; known: {', '.join(sorted(OPERATIONS))}")
    try:
        answer = handler(request)
    except ConformanceError as exc:
        return _error(request_id, exc.kind, str(exc))
    except Exception as exc:  # the adapter must survive anything; report it as data
        return _error(request_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
    return {"id": request_id, **answer}


def handle_line(line: bytes, handle: Callable[[Any], Answer] = handle_request) -> Answer:
    """The answer to one raw request line (bytes, newline optional). Never raises."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(None, "bad-request", f"line is not valid UTF-8 (byte {exc.start})")
    try:
        request = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return _error(None, "bad-request", f"line is not JSON: {str(exc)[:200]}")
    return handle(request)


def _encode(answer: Answer) -> bytes:
    # ensure_ascii: lone surrogates (bytes cut mid-character) travel as \\udcXX escapes.
    return json.dumps(answer, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def serve(stdin: IO[bytes], stdout: IO[bytes], handle: Callable[[Any], Answer] = handle_request) -> None:
    """Answer every line of ``stdin`` on ``stdout``, in order, flushing after each, until end of input.
    ``handle`` answers one decoded request (another implementation can wrap the reference's)."""
    while True:
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # skip the rest of the oversized line
                rest = stdin.readline(MAX_LINE_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            answer = _error(None, "bad-request", f"line longer than {MAX_LINE_BYTES} bytes")
        elif not line.strip():
            continue
        else:
            answer = handle_line(line, handle)
        stdout.write(_encode(answer))
        stdout.flush()
