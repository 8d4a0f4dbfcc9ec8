"""The adapter protocol: JSON lines in, one JSON line out per request, in order.

Specified in ``docs/adapter-protocol.md``.

Third-party implementations speak the same protocol, so suites can drive any of them like the reference.
Operations live in the :data:`OPERATIONS` dispatch table; each takes the decoded request object and returns
the answer fields. Nothing here raises: every failure becomes an answer with ``error`` and ``detail``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import IO, Any, Final

from reference.errors import ConformanceError
from reference.matching import matches
from reference.partition import partition
from reference.profiles import NEWEST, ReleaseProfile, for_version
from reference.subjects import is_valid_publish_subject, is_valid_subject
from reference.transform import Transform, compile_transform
from reference.weighted import WeightedDestination, compile_weighted, parse_weight

__all__ = [
    "MAX_LINE_BYTES",
    "OPERATIONS",
    "PROTOCOL_VERSION",
    "BadRequestError",
    "handle_line",
    "serve",
    "transform_answer",
]

PROTOCOL_VERSION: Final = 1
#: Longest request line accepted; longer lines are answered with ``bad-request`` and skipped.
MAX_LINE_BYTES: Final = 1 << 20

Request = Mapping[str, Any]
Answer = dict[str, Any]


class BadRequestError(ConformanceError, ValueError):
    """A request line that is not a well-formed request (answered, never fatal)."""

    kind = "bad-request"


def _field(request: Request, name: str, kind: type, *, optional: bool = False) -> Any:
    if name not in request or request[name] is None:
        if optional:
            return None
        raise BadRequestError(f"missing field {name!r}")
    value = request[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadRequestError(f"field {name!r} must be a {kind.__name__} (got {type(value).__name__})")
    return value


def _profile(request: Request) -> ReleaseProfile:
    spec = _field(request, "server_version", str, optional=True)
    return NEWEST if spec is None else for_version(spec)


@functools.lru_cache(maxsize=4096)
def _compiled(
    source: str, destination: str, version: str | None, engine_only: bool
) -> Transform | ConformanceError:
    """A mapping compiled once however many subjects are asked about (a refusal is kept too)."""
    try:
        return compile_transform(
            source, destination, NEWEST if version is None else for_version(version), engine_only=engine_only
        )
    except ConformanceError as refusal:
        return refusal


def _op_transform(request: Request) -> Answer:
    compiled = _compiled(
        _field(request, "source", str),
        _field(request, "destination", str),
        _field(request, "server_version", str, optional=True),
        bool(_field(request, "engine_only", bool, optional=True)),
    )
    if isinstance(compiled, ConformanceError):
        raise compiled.with_traceback(None)  # the kept refusal, without the traceback of earlier raises
    return {"subject": compiled.apply(_field(request, "subject", str))}


def transform_answer(
    source: str, destination: str, subject: str, version: str | None, engine_only: bool = False
) -> Answer:
    """The answer `handle_request` gives a well-formed transform request, without its id: the mapping
    compiled once, no request checks per subject. Never raises."""
    compiled = _compiled(source, destination, version, engine_only)
    try:
        if isinstance(compiled, ConformanceError):
            raise compiled.with_traceback(None)
        return {"subject": compiled.apply(subject)}
    except ConformanceError as exc:
        return {"error": exc.kind, "detail": str(exc)}
    except Exception as exc:  # as handle_request: reported as data
        return {"error": "internal-error", "detail": f"{type(exc).__name__}: {exc}"}


def _op_match(request: Request) -> Answer:
    return {"match": matches(_field(request, "pattern", str), _field(request, "subject", str))}


def _op_valid_subject(request: Request) -> Answer:
    subject = _field(request, "subject", str)
    literal = bool(_field(request, "literal", bool, optional=True))
    return {"valid": is_valid_publish_subject(subject) if literal else is_valid_subject(subject)}


def _op_partition(request: Request) -> Answer:
    tokens = _field(request, "tokens", list)
    if not all(isinstance(t, str) for t in tokens):
        raise BadRequestError("field 'tokens' must be a list of strings")
    n = _field(request, "n", int)
    if n < 1:
        raise BadRequestError(f"field 'n' must be >= 1 (got {n})")
    return {"partition": partition(tokens, n)}


def _op_weighted(request: Request) -> Answer:
    raw = _field(request, "destinations", list)
    entries = []
    for item in raw:
        if not isinstance(item, dict):
            raise BadRequestError("field 'destinations' must be a list of objects")
        weight = item.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, (int, str)):
            raise BadRequestError("field 'weight' must be an integer or text like '50%'")
        entries.append(
            WeightedDestination(
                _field(item, "destination", str),
                parse_weight(weight),
                _field(item, "cluster", str, optional=True),
            )
        )
    source = _field(request, "source", str)
    cluster = _field(request, "cluster", str, optional=True)
    mapping = compile_weighted(source, entries, _profile(request), cluster)
    draw = _field(request, "draw", int)
    if not 0 <= draw <= 99:
        raise BadRequestError(f"field 'draw' must be 0..99 (got {draw})")
    return {"subject": mapping.apply(_field(request, "subject", str), draw)}


def _op_hello(request: Request) -> Answer:
    return {
        "protocol": PROTOCOL_VERSION,
        "implementation": "nats-conformance reference",
        "server_version": NEWEST.name,
        "ops": sorted(OPERATIONS),
    }


#: The operations, by ``op`` name. Later protocol versions add entries; answers only gain fields.
OPERATIONS: Final[Mapping[str, Callable[[Request], Answer]]] = {
    "hello": _op_hello,
    "transform": _op_transform,
    "match": _op_match,
    "valid_subject": _op_valid_subject,
    "partition": _op_partition,
    "weighted": _op_weighted,
}


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
        return _error(request_id, "internal-error", f"{type(exc).__name__}: {exc}")
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
