"""JetStream RePublish (ADR-28,
https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-28.md): configuration, validation
per release, and
a stream model that predicts every republished message.

Documented rules (ADR sections in quotes):

* "RePublish Configuration Option": ``src`` (optional, default ``>``), ``dest`` (required),
  ``headers_only`` (default false). The destination must have at least one non-wildcard token, may not
  match or subset the stream's subjects, and source and destination must form a valid transform. The
  option may be edited after the stream is created.
* "RePublish Transform": the republish subject is the transform of the ingested subject; messages whose
  subject the source does not match are not republished.
* "RePublish Headers": ``Nats-Stream``, ``Nats-Subject``, ``Nats-Sequence``, ``Nats-Last-Sequence`` and,
  with headers only, ``Nats-Msg-Size`` (the body's size; the body is then empty). Application headers
  are preserved.
* "Loop Prevention": a valid destination guarantees republished messages are not ingested into the
  same stream again; two streams may still loop ("Caution").

Per release (nats-server release notes, https://github.com/nats-io/nats-server/releases/tag/vX.Y.Z, then
observed on 2.8.4, 2.9.25, 2.10.27, 2.11.17, 2.12.15 and
2.14.5 through the JetStream API; see :data:`RELEASE_RULES`):

=========  ===========================================================================================
release    rule
=========  ===========================================================================================
2.8.3      first form: no ``headers_only`` (the field is ignored: the body is republished), no
           ``Nats-Subject`` (release notes of 2.8.3); the source must share a subject with the stream's
           subjects
           (observed: "republish source is not valid subset of subjects"; the ADR is silent).
2.9.0      + ``headers_only``, ``Nats-Subject``, ``Nats-Msg-Size`` (release notes of 2.9.0); source overlap
still
           required (observed).
2.10.0     + ``Nats-Time-Stamp`` (release notes of 2.10.0; RFC 3339 UTC time the message was stored); the
source no
           longer needs to overlap the stream's subjects (observed: accepted, nothing is republished).
=========  ===========================================================================================

The transform is the release's transform engine (``compile_transform(..., engine_only=True)``): RePublish
does not go through the account-mapping validator (observed: ``left``/``right`` accepted from 2.10.16,
``random`` from 2.12, as the engine has them).

Where a server contradicts the ADR, the model keeps the ADR and the difference is a finding listed in
``expectations.toml`` (2.8 requires ``src``; 2.9 refuses to edit RePublish; 2.10+ accept an empty
destination; every release accepts destinations without a literal token, with whitespace, or whose
placeholders can produce stream subjects; ``Nats-Last-Sequence`` names a deleted message's predecessor).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar, Final

from nats_conformance.reference.errors import ConformanceError, MappingError
from nats_conformance.reference.functions import MAPPING_FUNCTIONS
from nats_conformance.reference.matching import matches
from nats_conformance.reference.profiles import ReleaseProfile, for_version
from nats_conformance.reference.subjects import (
    FULL_WILDCARD,
    PARTIAL_WILDCARD,
    has_wildcards,
    is_server_valid_subject,
)
from nats_conformance.reference.templates import FunctionNode, LiteralNode, looks_like_function, parse_token
from nats_conformance.reference.transform import Transform, compile_transform
from nats_conformance.reference.versions import Version

__all__ = [
    "HEADER_LAST_SEQUENCE",
    "HEADER_MSG_ID",
    "HEADER_MSG_SIZE",
    "HEADER_SEQUENCE",
    "HEADER_STREAM",
    "HEADER_SUBJECT",
    "HEADER_TIME_STAMP",
    "RELEASE_RULES",
    "SERVER_KINDS",
    "STORE_TIME",
    "CompiledRePublish",
    "PublishOutcome",
    "RePublish",
    "RePublishError",
    "RePublishRules",
    "RePublishedMessage",
    "StreamModel",
    "StreamSet",
    "compile_republish",
    "configuration_violations",
    "parse_time_stamp",
    "reportable_by",
    "republish_violations",
    "rules_for",
    "stream_violations",
    "subjects_collide",
]

HEADER_STREAM: Final = "Nats-Stream"
HEADER_SUBJECT: Final = "Nats-Subject"
HEADER_SEQUENCE: Final = "Nats-Sequence"
HEADER_LAST_SEQUENCE: Final = "Nats-Last-Sequence"
HEADER_MSG_SIZE: Final = "Nats-Msg-Size"
HEADER_TIME_STAMP: Final = "Nats-Time-Stamp"
STORE_TIME: Final = "<store time>"
"""The model's value of ``Nats-Time-Stamp``: the RFC 3339 UTC time the server stored the message, which
only the server knows (checked for form and against the publish window)."""
HEADER_MSG_ID: Final = "Nats-Msg-Id"
"""The JetStream de-duplication header (a publish repeating a stored id is not ingested)."""


# ---------------------------------------------------------------------------------------------------
# Configuration and release rules


@dataclass(frozen=True, slots=True)
class RePublish:
    """The stream's ``republish`` option ("RePublish Configuration Option").

    Attributes:
        source: ``src``, a subject filter; empty means the default ``>``.
        destination: ``dest``, the destination template (required).
        headers_only: ``headers_only``; republish headers without the body.
    """

    source: str
    destination: str
    headers_only: bool = False

    @property
    def effective_source(self) -> str:
        """The source with the documented default applied (empty -> ``>``)."""
        return self.source or FULL_WILDCARD

    def to_json(self, *, omit_empty_source: bool = True) -> dict[str, object]:
        """The JSON object of the JetStream API (``src`` left out when empty and ``omit_empty_source``)."""
        body: dict[str, object] = {"dest": self.destination}
        if self.source or not omit_empty_source:
            body["src"] = self.source
        if self.headers_only:
            body["headers_only"] = True
        return body


@dataclass(frozen=True, slots=True)
class RePublishRules:
    """What one release does with RePublish (module table).

    Attributes:
        profile: the release's transform rules.
        supported: the release has RePublish (2.8.3 and later).
        headers_only: ``headers_only`` is known (2.9.0); earlier releases ignore the field.
        subject_header: ``Nats-Subject`` is sent (2.9.0).
        msg_size_header: ``Nats-Msg-Size`` is sent with headers only (2.9.0).
        time_stamp_header: ``Nats-Time-Stamp`` is sent (2.10.0).
        source_must_overlap: the source must share a subject with the stream's subjects (before 2.10,
            observed; the ADR is silent).
    """

    profile: ReleaseProfile
    supported: bool
    headers_only: bool
    subject_header: bool
    msg_size_header: bool
    time_stamp_header: bool
    source_must_overlap: bool

    @property
    def version(self) -> Version:
        return self.profile.version

    def __repr__(self) -> str:
        return f"rules_for({self.profile.name!r})"


#: First release of each RePublish rule (nats-server release notes; overlap rule observed).
RELEASE_RULES: Final[Mapping[str, Version]] = {
    "supported": Version(2, 8, 3),
    "headers_only": Version(2, 9, 0),
    "subject_header": Version(2, 9, 0),
    "msg_size_header": Version(2, 9, 0),
    "time_stamp_header": Version(2, 10, 0),
    "source_may_miss_stream": Version(2, 10, 0),
}


def rules_for(release: str | ReleaseProfile) -> RePublishRules:
    """The RePublish rules of a release given as text (``"2.10.27"``, a line ``"2.10"``) or a profile.

    Raises:
        UnknownVersionError: the text names no known release.
    """
    profile = for_version(release) if isinstance(release, str) else release
    v = profile.version
    return RePublishRules(
        profile=profile,
        supported=v >= RELEASE_RULES["supported"],
        headers_only=v >= RELEASE_RULES["headers_only"],
        subject_header=v >= RELEASE_RULES["subject_header"],
        msg_size_header=v >= RELEASE_RULES["msg_size_header"],
        time_stamp_header=v >= RELEASE_RULES["time_stamp_header"],
        source_must_overlap=v < RELEASE_RULES["source_may_miss_stream"],
    )


# ---------------------------------------------------------------------------------------------------
# Validation


class RePublishError(ConformanceError, ValueError):
    """A RePublish configuration that breaks a rule; ``kind`` names the rule (stable, kebab-case)."""

    kind: ClassVar[str] = "invalid-republish"

    def __init__(self, detail: str) -> None:
        super().__init__(" ".join(detail.split()) or self.kind)


class EmptyDestinationError(RePublishError):
    """ "Destination ... Required: Y" (configuration table)."""

    kind = "empty-destination"


class DestinationWithoutLiteralError(RePublishError):
    """ "Destination MUST have at least 1 non-wildcard token": a token that is neither ``*``, ``>``, a
    ``$n`` placeholder nor a mapping-function token (read as "a literal token")."""

    kind = "destination-without-literal"


class InvalidDestinationSubjectError(RePublishError):
    """A literal destination token holds whitespace, so no republished subject is a valid subject
    (ADR-30 via "must otherwise comply"; https://docs.nats.io/nats-concepts/subjects forbids whitespace in
    subjects)."""

    kind = "invalid-destination-subject"


class DestinationOverlapsStreamError(RePublishError):
    """ "Destination MAY not match or subset the subject filter(s) of the stream": the destination, read
    as a subject filter, shares a subject with one of the stream's subjects."""

    kind = "destination-overlaps-stream"


class PlaceholderOutputOverlapsStreamError(RePublishError):
    """ "Loop Prevention": a subject the transform can produce from an ingested subject is one of the
    stream's subjects, so a republished message would be ingested again (placeholders read as any
    token they can stand for; functions other than ``wildcard`` as any token, or tokens)."""

    kind = "placeholder-output-overlaps-stream"


class InvalidTransformError(RePublishError):
    """ "Source and Destination must otherwise comply with requirements specified in ADR-30": the
    release's transform engine rejects the pair; ``cause`` is the mapping error's kind."""

    kind = "invalid-transform"

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(f"{cause}: {detail}")
        self.cause = cause


class SourceOutsideStreamError(RePublishError):
    """Before 2.10 the source must share a subject with the stream's subjects (observed; ADR silent)."""

    kind = "source-outside-stream"


class InvalidStreamSubjectError(RePublishError):
    """One of the stream's own subjects is no subject: an empty token, or ``>`` before the last token
    ("Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects: ``>`` matches the tail
    of a subject, so it is the last token). The "Streams" page says a stream consumes subjects and is
    silent on one that is not; observed on 2.8.4 to 2.15.3: the stream is refused, "invalid subject",
    by the server's subject rule (`is_server_valid_subject`)."""

    kind = "invalid-stream-subject"


class StreamSubjectsOverlapError(RePublishError):
    """Two of the stream's own subjects share a subject (`subjects_collide`), so a message on it would be
    stored twice. docs.nats.io, "Streams" (nats-concepts/jetstream/streams): a stream consumes many
    subjects; the page is silent on subjects of one stream that overlap, so what servers do decides
    (observed on 2.9.25 to 2.15.3: the stream is refused, 'subject "A" overlaps with "B"')."""

    kind = "stream-subjects-overlap"


#: How servers word their refusals, as kinds (``description`` of the JetStream API error).
SERVER_KINDS: Final = (
    ("republish source is not valid subset", SourceOutsideStreamError.kind),
    ("republish destination forms a cycle", DestinationOverlapsStreamError.kind),
    ("can not change republish", "update-not-allowed"),
    ("overlaps with", StreamSubjectsOverlapError.kind),
    ("republish", InvalidTransformError.kind),
    ("invalid subject", InvalidStreamSubjectError.kind),
)

_REPORTABLE: Final[Mapping[str, frozenset[str]]] = {
    SourceOutsideStreamError.kind: frozenset({SourceOutsideStreamError.kind}),
    DestinationOverlapsStreamError.kind: frozenset({DestinationOverlapsStreamError.kind}),
    InvalidTransformError.kind: frozenset({InvalidTransformError.kind}),
    EmptyDestinationError.kind: frozenset({InvalidTransformError.kind}),
    InvalidDestinationSubjectError.kind: frozenset({InvalidTransformError.kind}),
    DestinationWithoutLiteralError.kind: frozenset(
        {DestinationOverlapsStreamError.kind, InvalidTransformError.kind}
    ),
    PlaceholderOutputOverlapsStreamError.kind: frozenset({DestinationOverlapsStreamError.kind}),
    StreamSubjectsOverlapError.kind: frozenset({StreamSubjectsOverlapError.kind}),
    InvalidStreamSubjectError.kind: frozenset({InvalidStreamSubjectError.kind}),
}


def reportable_by(kinds: Iterable[str]) -> frozenset[str]:
    """The server refusal kinds (see :data:`SERVER_KINDS`) that report one of the model's ``kinds``."""
    found: set[str] = set()
    for kind in kinds:
        found |= _REPORTABLE.get(kind, frozenset())
    return frozenset(found)


def subjects_collide(first: str, second: str) -> bool:
    """True iff some literal subject matches both filters (``*`` one token, ``>`` one or more, last).

    Tokens compare as text otherwise, so ``{{wildcard(1)}}`` or ``$1`` are literal here (the ADR's
    "match or subset" reads the destination as a subject filter). An empty token (``s..>``) makes no
    subject ("Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects); the ADR is silent
    on such a filter, so what servers do decides (observed on 2.9.25-2.15.3, nats-server's
    ``SubjectsCollide``): two filters that meet an empty token in turn do not collide, except that the
    empty token of a filter without wildcards still falls under the other's ``>``.
    """
    if first == second:
        return True
    a, b = first.split("."), second.split(".")
    for index in range(max(len(a), len(b))):
        if index >= len(a) or index >= len(b):
            return False
        x, y = a[index], b[index]
        if not x or not y:
            literal, other = (first, y) if not x else (second, x)
            return other == FULL_WILDCARD and not has_wildcards(literal)
        if (x == FULL_WILDCARD and index == len(a) - 1) or (y == FULL_WILDCARD and index == len(b) - 1):
            return True
        if PARTIAL_WILDCARD not in (x, y) and x != y:
            return False
    return True


def _intersection(source: list[str], subject_filter: list[str]) -> list[str] | None:
    """The filter matching exactly the subjects both match (token lists), or None if they share none."""
    result: list[str] = []
    for index in range(max(len(source), len(subject_filter))):
        if index >= len(source) or index >= len(subject_filter):
            return None
        a, b = source[index], subject_filter[index]
        a_full = a == FULL_WILDCARD and index == len(source) - 1
        b_full = b == FULL_WILDCARD and index == len(subject_filter) - 1
        if a_full:
            return result + subject_filter[index:]
        if b_full:
            return result + source[index:]
        if a == PARTIAL_WILDCARD:
            result.append(b)
        elif b in (PARTIAL_WILDCARD, a):
            result.append(a)
        else:
            return None
    return result


# Output pattern atoms: a literal token, any one token, or one or more tokens.
_ONE: Final = "\x00one"
_MANY: Final = "\x00many"
_ONE_TOKEN_FUNCTIONS: Final = frozenset(function.name for function in MAPPING_FUNCTIONS if function.one_token)


def _output_pattern(
    destination_nodes: Sequence[LiteralNode | FunctionNode],
    source: list[str],
    shared: list[str],
) -> list[str]:
    """What the destination can produce from subjects matching ``shared`` (a refinement of ``source``)."""
    stars = [i for i, token in enumerate(source) if token == PARTIAL_WILDCARD]
    open_ended = source[-1] == FULL_WILDCARD
    out: list[str] = []
    for position, node in enumerate(destination_nodes):
        if isinstance(node, LiteralNode):
            if node.text == FULL_WILDCARD and position == len(destination_nodes) - 1 and open_ended:
                tail = shared[len(source) - 1 :]
                out += [_MANY if t == FULL_WILDCARD else _ONE if t == PARTIAL_WILDCARD else t for t in tail]
            else:
                out.append(node.text)
        elif node.name == "wildcard":
            index = node.indexes[0]
            token = shared[stars[index - 1]] if index > 0 else shared[0]
            out.append(_ONE if token in (PARTIAL_WILDCARD, FULL_WILDCARD) else token)
        elif node.name in _ONE_TOKEN_FUNCTIONS:
            out.append(_ONE)
        else:  # split, splitFrom*, sliceFrom*: one or more tokens
            out.append(_MANY)
    return out


def _pattern_overlaps(pattern: list[str], subject_filter: list[str]) -> bool:
    """True iff some subject is both produced by ``pattern`` (atoms) and matched by ``subject_filter``."""
    seen: set[tuple[int, int]] = set()

    def walk(i: int, j: int) -> bool:
        if (i, j) in seen:
            return False
        seen.add((i, j))
        if j < len(subject_filter) and subject_filter[j] == FULL_WILDCARD and j == len(subject_filter) - 1:
            return i < len(pattern)
        if i == len(pattern) or j == len(subject_filter):
            return i == len(pattern) and j == len(subject_filter)
        atom, token = pattern[i], subject_filter[j]
        if atom == _MANY:
            k = j
            while k < len(subject_filter):
                if subject_filter[k] == FULL_WILDCARD and k == len(subject_filter) - 1:
                    return True
                if walk(i + 1, k + 1):
                    return True
                k += 1
            return False
        if atom == _ONE or token in (PARTIAL_WILDCARD, atom):
            return walk(i + 1, j + 1)
        return False

    return walk(0, 0)


def _destination_nodes(
    source: str, destination: str, rules: RePublishRules
) -> list[LiteralNode | FunctionNode] | None:
    """The destination's tokens as the release's engine reads them (None when one does not parse)."""
    try:
        return [parse_token(token, rules.profile) for token in destination.split(".")]
    except MappingError:
        return None


def _has_literal_token(source: str, destination: str, rules: RePublishRules) -> bool:
    nodes = _destination_nodes(source, destination, rules)
    if nodes is None:
        tokens = destination.split(".")
        return any(
            t not in (PARTIAL_WILDCARD, FULL_WILDCARD)
            and not t.startswith("$")
            and not looks_like_function(t)
            for t in tokens
        )
    return any(
        isinstance(node, LiteralNode) and node.text not in (PARTIAL_WILDCARD, FULL_WILDCARD) for node in nodes
    )


_WHITESPACE: Final = re.compile(r"[ \t\r\n\f]")


def _destination_violations(
    subjects: Sequence[str], source: str, destination: str, rules: RePublishRules
) -> list[RePublishError]:
    """The rules a (non-empty) destination breaks, in the ADR's order."""
    found: list[RePublishError] = []
    if not _has_literal_token(source, destination, rules):
        found.append(
            DestinationWithoutLiteralError(f"destination {destination!r} has no literal (non-wildcard) token")
        )
    literal_tokens = [
        t for t in destination.split(".") if not looks_like_function(t) and _WHITESPACE.search(t) is not None
    ]
    if literal_tokens:
        found.append(
            InvalidDestinationSubjectError(f"destination token {literal_tokens[0]!r} has whitespace")
        )
    textual = [s for s in subjects if subjects_collide(destination, s)]
    if textual:
        found.append(
            DestinationOverlapsStreamError(
                f"destination {destination!r} overlaps stream subject {textual[0]!r}"
            )
        )
    transform: Transform | None = None
    try:
        transform = compile_transform(source, destination, rules.profile, engine_only=True)
    except MappingError as error:
        found.append(InvalidTransformError(error.kind, str(error)))
    if transform is not None and not textual:
        produced = _produced_overlap(subjects, source, destination, rules)
        if produced:
            found.append(
                PlaceholderOutputOverlapsStreamError(
                    f"destination {destination!r} can produce a subject of stream subject {produced!r}"
                )
            )
    return found


def stream_violations(subjects: Sequence[str]) -> tuple[RePublishError, ...]:
    """The stream's `subjects` that are no subject (`InvalidStreamSubjectError`), then the pairs of them
    that overlap (`StreamSubjectsOverlapError`), in order."""
    invalid = tuple(
        InvalidStreamSubjectError(f"subject {subject!r} is not a valid subject")
        for subject in subjects
        if not is_server_valid_subject(subject)
    )
    return invalid + tuple(
        StreamSubjectsOverlapError(f"subject {first!r} overlaps with {second!r}")
        for index, first in enumerate(subjects)
        for second in subjects[index + 1 :]
        if subjects_collide(first, second)
    )


def configuration_violations(
    subjects: Sequence[str], republish: RePublish, rules: RePublishRules
) -> tuple[RePublishError, ...]:
    """The stream's own (`stream_violations`), then its RePublish option's (`republish_violations`)."""
    return stream_violations(subjects) + republish_violations(subjects, republish, rules)


def republish_violations(
    subjects: Sequence[str], republish: RePublish, rules: RePublishRules
) -> tuple[RePublishError, ...]:
    """Every rule of "RePublish Configuration Option" (and the release's own) that the configuration
    breaks, in the ADR's order; empty when the stream may be created with it.

    Args:
        subjects: the stream's subjects.
        republish: the option.
        rules: the release.
    """
    found: list[RePublishError] = []
    source, destination = republish.effective_source, republish.destination
    if not destination:
        found.append(EmptyDestinationError("the republish destination is required"))
    else:
        found += _destination_violations(subjects, source, destination, rules)
    if rules.source_must_overlap and not (
        is_server_valid_subject(source) and any(subjects_collide(source, s) for s in subjects)
    ):
        found.append(SourceOutsideStreamError(f"source {source!r} shares no subject with the stream"))
    return tuple(found)


def _produced_overlap(subjects: Sequence[str], source: str, destination: str, rules: RePublishRules) -> str:
    """A stream subject that some republished subject would match, or ``""``."""
    nodes = _destination_nodes(source, destination, rules)
    if nodes is None:
        return ""
    stokens = source.split(".")
    for ingest in subjects:
        shared = _intersection(stokens, ingest.split("."))
        if shared is None:
            continue
        pattern = _output_pattern(nodes, stokens, shared)
        for subject_filter in subjects:
            if _pattern_overlaps(pattern, subject_filter.split(".")):
                return subject_filter
    return ""


@dataclass(frozen=True, slots=True)
class CompiledRePublish:
    """A valid RePublish option, ready to map ingested subjects ("RePublish Transform")."""

    republish: RePublish
    rules: RePublishRules
    transform: Transform

    @property
    def headers_only(self) -> bool:
        """Headers only, where the release knows the field (2.8 ignores it)."""
        return self.republish.headers_only and self.rules.headers_only

    def destination_of(self, subject: str) -> str | None:
        """The republish subject of an ingested ``subject``, or None when the source does not match."""
        if not self.transform.matches(subject):
            return None
        return self.transform.apply(subject)


def compile_republish(
    subjects: Sequence[str], republish: RePublish, rules: RePublishRules
) -> CompiledRePublish:
    """Validate (see :func:`republish_violations`) and compile the option.

    Raises:
        RePublishError: the first rule broken (its ``kind``).
    """
    violations = republish_violations(subjects, republish, rules)
    if violations:
        raise violations[0]
    transform = compile_transform(
        republish.effective_source, republish.destination, rules.profile, engine_only=True
    )
    return CompiledRePublish(republish, rules, transform)


# ---------------------------------------------------------------------------------------------------
# Stream model


@dataclass(frozen=True, slots=True)
class RePublishedMessage:
    """One predicted republished message ("RePublish Headers").

    Attributes:
        subject: the destination subject (one draw when the destination uses ``random``).
        payload: the body; empty with headers only.
        headers: (name, value) in order: the application's headers, then the server's; a time stamp's
            value is :data:`STORE_TIME` (only the server knows it).
        time_stamp: this republish adds a ``Nats-Time-Stamp`` header (2.10+).
        stream, original_subject, sequence, last_sequence: the header values.
        last_sequence_remaining: the newest message still stored on the subject (or 0), which is what
            ``Nats-Last-Sequence`` holds on every observed server: used only to name that divergence.
        transform: the transform that produced ``subject`` (for destinations with ``random``).
    """

    subject: str
    payload: bytes
    headers: tuple[tuple[str, str], ...]
    time_stamp: bool
    stream: str
    original_subject: str
    sequence: int
    last_sequence: int
    last_sequence_remaining: int
    transform: Transform = field(repr=False, compare=False)

    def header_lists(self) -> dict[str, list[str]]:
        """Headers as name -> values in order (the shape of ``fixtures.clients.wire.Message.header_map``)."""
        result: dict[str, list[str]] = {}
        for name, value in self.headers:
            result.setdefault(name, []).append(value)
        return result

    def accepts_subject(self, observed: str) -> bool:
        """True iff ``observed`` is a subject this message may be republished on."""
        return observed == self.subject or self.transform.accepts(self.original_subject, observed)

    def describe(self) -> str:
        """Compact text for records: subject, body size and headers."""
        headers = " ".join(f"{name}={value}" for name, value in self.headers)
        return f"{self.subject} body={len(self.payload)}B {headers}".rstrip()


@dataclass(frozen=True, slots=True)
class PublishOutcome:
    """The stream's answer to a publish: the sequence acknowledged, whether it was a duplicate, and the
    republished message (None when not ingested or not matched by the source)."""

    sequence: int
    duplicate: bool
    republished: RePublishedMessage | None


@dataclass(frozen=True, slots=True)
class _Stored:
    subject: str
    size: int


class StreamModel:
    """A limits-retention stream with a RePublish option, driven by operations in order.

    Publishes get consecutive sequences; a publish whose ``Nats-Msg-Id`` was seen before is a duplicate
    (acknowledged with the first sequence, not ingested, not republished; ids survive deletes and purges:
    observed on every release, the duplicate window being longer than a test). ``max_msgs_per_subject``
    removes the oldest messages of a subject after a publish. Deletes and purges remove messages and
    republish nothing.
    """

    def __init__(
        self,
        name: str,
        subjects: Sequence[str],
        republish: RePublish | None,
        rules: RePublishRules,
        *,
        max_msgs_per_subject: int = -1,
    ) -> None:
        self.name = name
        self.subjects = tuple(subjects)
        self.rules = rules
        self.max_msgs_per_subject = max_msgs_per_subject
        self.compiled = compile_republish(self.subjects, republish, rules) if republish else None
        self.last_sequence = 0
        self.stored: dict[int, _Stored] = {}
        self._by_subject: dict[str, list[int]] = {}
        self.last_ingested: dict[str, int] = {}
        self.msg_ids: dict[str, int] = {}
        self.republished: list[RePublishedMessage] = []

    def __repr__(self) -> str:
        republish = self.compiled.republish if self.compiled else None
        return f"StreamModel({self.name!r}, {list(self.subjects)!r}, {republish!r}, {self.rules!r})"

    def accepts(self, subject: str) -> bool:
        """True iff a publish on ``subject`` is ingested by this stream."""
        return any(matches(pattern, subject) for pattern in self.subjects)

    def reconfigure(self, republish: RePublish | None) -> None:
        """Replace the option ("RePublish option configuration MAY be edited after stream creation").

        Raises:
            RePublishError: the new option is invalid (the stream keeps the old one).
        """
        self.compiled = compile_republish(self.subjects, republish, self.rules) if republish else None

    def publish(
        self, subject: str, payload: bytes = b"", headers: Sequence[tuple[str, str]] = ()
    ) -> PublishOutcome:
        """Ingest one message (``subject`` must be one of the stream's) and predict its republish."""
        msg_id = next((value for name, value in headers if name == HEADER_MSG_ID), "")
        if msg_id and msg_id in self.msg_ids:
            return PublishOutcome(self.msg_ids[msg_id], True, None)
        self.last_sequence += 1
        sequence = self.last_sequence
        if msg_id:
            self.msg_ids[msg_id] = sequence
        previous = self.last_ingested.get(subject, 0)
        last = previous if previous in self.stored else 0
        mine = self._by_subject.setdefault(subject, [])
        remaining = mine[-1] if mine else 0
        self.stored[sequence] = _Stored(subject, len(payload))
        mine.append(sequence)
        self.last_ingested[subject] = sequence
        if 0 < self.max_msgs_per_subject < len(mine):
            for evicted in mine[: len(mine) - self.max_msgs_per_subject]:
                del self.stored[evicted]
            del mine[: len(mine) - self.max_msgs_per_subject]
        message = self._republish(
            subject, payload=payload, headers=headers, sequence=sequence, last=last, remaining=remaining
        )
        if message is not None:
            self.republished.append(message)
        return PublishOutcome(sequence, False, message)

    def _republish(
        self,
        subject: str,
        *,
        payload: bytes,
        headers: Sequence[tuple[str, str]],
        sequence: int,
        last: int,
        remaining: int,
    ) -> RePublishedMessage | None:
        compiled = self.compiled
        if compiled is None:
            return None
        destination = compiled.destination_of(subject)
        if destination is None:
            return None
        rules = self.rules
        added = [(HEADER_STREAM, self.name)]
        if rules.subject_header:
            added.append((HEADER_SUBJECT, subject))
        added.append((HEADER_SEQUENCE, str(sequence)))
        if rules.time_stamp_header:
            added.append((HEADER_TIME_STAMP, STORE_TIME))
        added.append((HEADER_LAST_SEQUENCE, str(last)))
        headers_only = compiled.headers_only
        if headers_only and rules.msg_size_header:
            added.append((HEADER_MSG_SIZE, str(len(payload))))
        return RePublishedMessage(
            subject=destination,
            payload=b"" if headers_only else payload,
            headers=(*headers, *added),
            time_stamp=rules.time_stamp_header,
            stream=self.name,
            original_subject=subject,
            sequence=sequence,
            last_sequence=last,
            last_sequence_remaining=remaining,
            transform=compiled.transform,
        )

    def delete(self, sequence: int) -> bool:
        """Delete one message; False when no such message is stored."""
        message = self.stored.pop(sequence, None)
        if message is None:
            return False
        self._by_subject[message.subject].remove(sequence)
        return True

    def purge(self, subject: str | None = None) -> int:
        """Remove every message (matching the filter ``subject`` when given); the number removed."""
        count = 0
        for stored_subject, sequences in self._by_subject.items():
            if subject is None or matches(subject, stored_subject):
                for sequence in sequences:
                    del self.stored[sequence]
                count += len(sequences)
                sequences.clear()
        return count

    def subjects_stored(self) -> list[str]:
        """The subjects that have at least one stored message, sorted."""
        return sorted(subject for subject, sequences in self._by_subject.items() if sequences)


class StreamSet:
    """Streams of one account: a publish is ingested by the stream whose subjects match it, and each
    republished message is published again ("Loop Prevention", Caution: two streams whose destinations
    and subjects overlap pass messages back and forth)."""

    def __init__(self, streams: Sequence[StreamModel]) -> None:
        self.streams = tuple(streams)

    def publish(
        self,
        subject: str,
        payload: bytes = b"",
        headers: Sequence[tuple[str, str]] = (),
        *,
        hops: int,
    ) -> list[RePublishedMessage]:
        """Publish once and follow republished messages for at most ``hops`` republishes; returns them in
        order (a republished message carries the previous ones' headers as application headers)."""
        chain: list[RePublishedMessage] = []
        current: tuple[str, bytes, Sequence[tuple[str, str]]] | None = (subject, payload, headers)
        while current is not None and len(chain) < hops:
            target = next((s for s in self.streams if s.accepts(current[0])), None)
            if target is None:
                break
            outcome = target.publish(*current)
            message = outcome.republished
            if message is None:
                break
            chain.append(message)
            current = (message.subject, message.payload, message.headers)
        return chain


_TIME_STAMP: Final = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z")


def parse_time_stamp(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 UTC time (``2024-05-01T10:00:00.123456789Z``, the
    form of ``Nats-Time-Stamp``), or None when ``text`` has another form."""
    found = _TIME_STAMP.fullmatch(text)
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(found.group(i)) for i in range(1, 7))
    fraction = (found.group(7) or "").ljust(9, "0")
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    return int(moment.timestamp()) * 1_000_000_000 + int(fraction)
