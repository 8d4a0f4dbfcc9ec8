"""JetStream RePublish on a live server, judged against ``reference.republish``: one verdict per case.

Two kinds of case, both with feature ``republish`` so reports show RePublish as one row:

* validation: a stream create (or update) with a RePublish option; the server must accept it iff the
  reference finds no broken rule, and a refusal must name one of the broken rules. ``expected`` is
  ``accept`` or ``reject:<kind>+<kind>``, ``observed`` is ``accept`` or ``reject:<kind>`` and ``detail``
  keeps the server's ``err_code``, ``code`` and description.
* message: one republished message; subject, body and every header must be what the model predicts.
  A message has one verdict: its differences are listed in ``detail``, and the case class names the
  first difference no expectation explains (so a listed divergence cannot hide another).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fixtures.clients.jetstream import ApiError, JetStreamClient, JsonObject, api_error
from fixtures.clients.wire import Message
from records.schema import Case
from reference.errors import ConformanceError
from reference.functions import canonical_functions
from reference.profiles import nearest_profile
from reference.republish import (
    HEADER_LAST_SEQUENCE,
    HEADER_SEQUENCE,
    HEADER_STREAM,
    HEADER_SUBJECT,
    SERVER_KINDS,
    STORE_TIME,
    InvalidTransformError,
    RePublish,
    RePublishedMessage,
    RePublishRules,
    parse_time_stamp,
    reportable_by,
    republish_violations,
    rules_for,
)
from reference.transform import compile_transform
from suites.engine.verdicts import NOT_ARRIVED, RunContext, is_literal, make_case
from suites.expected import functions_named

FEATURE = "republish"
TAP_IGNORED_PREFIXES = ("$JS.", "_INBOX.", "$SYS.", "_nc_")
"""Subjects a `>` tap sees that are not republished messages: API traffic, replies, advisories, probes."""

STORE_FAILURES = frozenset({10049})
"""JetStream error codes that say the server failed, not that it judged the option: "error creating
store for stream" (seen once in many runs on 2.14.5 with file storage; not reproduced)."""

STAMP_SLACK_NS = 2_000_000
"""Allowance for the time stamp (ns): the server's clock is read between our send and the ack's arrival;
its text has nanoseconds, ours are read with `time.time_ns` on the same machine."""


def is_republished(message: Message) -> bool:
    """True iff a message seen by a `>` tap can be a republished one: republished messages have no reply
    subject (every publish of these suites asks for an ack, so its echo has one)."""
    return message.reply is None and not message.subject.startswith(TAP_IGNORED_PREFIXES)


def refusal_kind(error: ApiError) -> str:
    """The rule a server's refusal names (see ``reference.republish.SERVER_KINDS``), or ``other``."""
    text = error.description.lower()
    return next((kind for needle, kind in SERVER_KINDS if needle in text), "other")


def stream_config(
    name: str,
    subjects: Sequence[str],
    republish: RePublish | None,
    *,
    storage: str = "memory",
    max_msgs_per_subject: int = -1,
) -> JsonObject:
    """The JSON of a limits stream with an optional RePublish option."""
    config: JsonObject = {
        "name": name,
        "subjects": list(subjects),
        "storage": storage,
        "retention": "limits",
        "max_msgs_per_subject": max_msgs_per_subject,
    }
    if republish is not None:
        config["republish"] = republish.to_json()
    return config


def expected_outcome(subjects: Sequence[str], republish: RePublish, rules: RePublishRules) -> tuple[str, ...]:
    """The kinds of rule the configuration breaks (empty: the server must accept it)."""
    return tuple(error.kind for error in republish_violations(subjects, republish, rules))


def accepted_difference(subjects: Sequence[str], republish: RePublish, rules: RePublishRules) -> str:
    """The difference of an option the server accepts against the reference: the first rule broken,
    with the transform engine's cause for an invalid transform, told apart for a source without
    wildcards (``...-server-accept-literal-source``), as the mapping validation family does."""
    first = republish_violations(subjects, republish, rules)[0]
    rule = f"{first.kind}-{first.cause}" if isinstance(first, InvalidTransformError) else first.kind
    suffix = "-literal-source" if is_literal(republish.effective_source) else ""
    return f"reference-reject-{rule}-server-accept{suffix}"


def judge_configuration(
    context: RunContext,
    rules: RePublishRules,
    subjects: Sequence[str],
    republish: RePublish,
    reply: Mapping[str, object],
    *,
    operation: str = "create",
    seed: int = 0,
    duration_us: int = 0,
) -> Case:
    """The verdict on a create/update reply for a stream with ``subjects`` and ``republish``.

    The reference's expectation is the ADR's: a RePublish option may be edited after creation, so an
    update is judged by the new option alone.
    """
    kinds = expected_outcome(subjects, republish, rules)
    error = api_error(reply)
    expected = "reject:" + "+".join(kinds) if kinds else "accept"
    observed = f"reject:{refusal_kind(error)}" if error else "accept"
    if error is not None and error.err_code in STORE_FAILURES:
        difference = "unknown"  # the server could not store the stream: no verdict on the option
    elif error is None and not kinds:
        difference = ""
    elif error is None:
        difference = accepted_difference(subjects, republish, rules)
    elif not kinds:
        difference = f"reference-accept-server-reject-{refusal_kind(error)}"
    elif refusal_kind(error) in reportable_by(kinds):
        difference = ""
    else:
        difference = f"reference-reject-{kinds[0]}-server-reject-{refusal_kind(error)}"
    server = f"err_code {error.err_code} (code {error.code}): {error.description}" if error else "accepted"
    detail = f"{operation}: {server}"
    return make_case(
        context,
        feature=FEATURE,
        functions=functions_named(republish.destination),
        source=republish.source,
        destination=republish.destination,
        subject="",
        expected=expected,
        observed=observed,
        difference=difference,
        detail=detail,
        seed=seed,
        duration_us=duration_us,
        stream_subjects=subjects,
        headers_only=republish.headers_only,
    )


def create_and_judge(
    js: JetStreamClient,
    context: RunContext,
    rules: RePublishRules,
    name: str,
    *,
    subjects: Sequence[str],
    republish: RePublish,
    seed: int = 0,
    keep: bool = False,
) -> tuple[Case, bool]:
    """Create the stream, judge the reply, delete the stream unless ``keep``; (case, created)."""
    began = time.perf_counter()
    reply = js.create_stream(stream_config(name, subjects, republish))
    duration_us = int((time.perf_counter() - began) * 1e6)
    case = judge_configuration(context, rules, subjects, republish, reply, seed=seed, duration_us=duration_us)
    created = api_error(reply) is None
    if created and not keep:
        js.delete_stream(name)
    return case, created


# ---------------------------------------------------------------------------------------------------
# Republished messages


@dataclass(frozen=True, slots=True)
class Window:
    """When a publish was sent and its ack came back (ns since the epoch): the store time lies inside."""

    sent_ns: int
    acked_ns: int


def timed_publish(
    js: JetStreamClient, subject: str, payload: bytes = b"", headers: Sequence[tuple[str, str]] = ()
) -> tuple[JsonObject, Window]:
    """Publish with an ack; the stream's acknowledgement and the window its store time lies in."""
    sent = time.time_ns()
    ack = js.publish(subject, payload, headers=headers_of(headers) or None)
    return ack, Window(sent, time.time_ns())


def judge_stream_reply(
    context: RunContext,
    subjects: Sequence[str],
    republish: RePublish,
    what: str,
    *,
    expected: object,
    observed: object,
    state: str,
) -> Case | None:
    """A stream operation's reply (an ack's sequence, a delete's success, a purge's count) that differs
    from the model's (``wrong-<what>``); None when they agree. `state` describes the model."""
    if expected == observed:
        return None
    return make_case(
        context,
        feature=FEATURE,
        functions=(),
        source=republish.source,
        destination=republish.destination,
        subject="",
        expected=f"{what}: {expected}",
        observed=f"{what}: {observed}",
        difference=f"wrong-{what}",
        detail=state,
        stream_subjects=tuple(subjects),
        headers_only=republish.headers_only,
    )


def describe_message(message: Message, headers: Mapping[str, list[str]] | None = None) -> str:
    """Compact text of an observed message, in the form of ``RePublishedMessage.describe``."""
    parsed = message.header_map() if headers is None else headers
    text = " ".join(f"{name}={value}" for name, values in parsed.items() for value in values)
    return f"{message.subject} body={len(message.payload)}B {text}".rstrip()


def message_differences(
    expected: RePublishedMessage,
    observed: Message,
    window: Window | None,
    headers: Mapping[str, list[str]] | None = None,
) -> list[str]:
    """What differs between a predicted and an observed republished message, as short kebab-case names
    (empty when they agree). `window` bounds the time stamp when known."""
    found: list[str] = []
    if not expected.accepts_subject(observed.subject):
        found.append("original-subject" if observed.subject == expected.original_subject else "wrong-subject")
    if observed.payload != expected.payload:
        found.append("wrong-body")
    want = expected.header_lists()
    got = observed.header_map() if headers is None else headers
    for name, values in want.items():
        seen = got.get(name, [])
        if STORE_TIME in values:
            found += _stamp_differences(values, seen, window)
        elif seen != values:
            if name == HEADER_LAST_SEQUENCE and seen == [str(expected.last_sequence_remaining)]:
                found.append("last-sequence-of-remaining")
            else:
                found.append(f"header-{name.lower()}")
    found += [f"extra-header-{name.lower()}" for name in got if name not in want]
    return found


def _stamp_differences(want: list[str], seen: list[str], window: Window | None) -> list[str]:
    """Time stamps: as many as predicted, each RFC 3339 UTC, and the one this republish added (the
    last) inside the publish window."""
    if len(seen) != len(want):
        return ["header-nats-time-stamp"]
    stamps = [parse_time_stamp(value) for value in seen]
    for wanted, value, stamp in zip(want, seen, stamps, strict=True):
        if wanted == STORE_TIME and stamp is None:
            return ["time-stamp-format"]
        if wanted not in (STORE_TIME, value):
            return ["header-nats-time-stamp"]
    last = stamps[-1]
    if window is not None and last is not None:
        low, high = window.sent_ns - STAMP_SLACK_NS, window.acked_ns + STAMP_SLACK_NS
        if not low <= last <= high:
            return ["time-stamp-outside-publish"]
    return []


def _original_subject(observed: Message | None) -> str:
    """The ingested subject an unpredicted message names in its last ``Nats-Subject`` (2.9+), if any."""
    subjects = observed.header_map().get(HEADER_SUBJECT, []) if observed else []
    return subjects[-1] if subjects else ""


def functions_of(republish: RePublish, version: str) -> tuple[str, ...]:
    """Canonical names of the functions the option's transform uses on this release (as message cases
    name them), or the names its destination spells when the transform does not compile."""
    try:
        profile = rules_for(nearest_profile(version)).profile
        transform = compile_transform(
            republish.effective_source, republish.destination, profile, engine_only=True
        )
    except ConformanceError:
        return functions_named(republish.destination)
    return transform.functions


def choose_difference(context: RunContext, functions: Sequence[str], differences: Sequence[str]) -> str:
    """The first difference no expectation explains (so the case diverges), else the first one."""
    names = "+".join(canonical_functions(functions))
    for difference in differences:
        found = context.expectations.classify(
            context.implementation,
            context.server_version,
            feature=FEATURE,
            functions=names,
            difference=difference,
        )
        if found is None:
            return difference
    return differences[0] if differences else ""


def judge_message(
    context: RunContext,
    subjects: Sequence[str],
    republish: RePublish,
    expected: RePublishedMessage | None,
    observed: Message | None,
    *,
    window: Window | None = None,
    seed: int = 0,
    headers: Mapping[str, list[str]] | None = None,
) -> Case:
    """One republished message's verdict: predicted and delivered, predicted only, or delivered only
    (`headers`: the observed message's parsed headers, when the caller has them)."""
    functions = expected.transform.functions if expected else functions_of(republish, context.server_version)
    if observed is not None and headers is None:
        headers = observed.header_map()
    if expected is not None and observed is not None:
        differences = message_differences(expected, observed, window, headers)
    elif expected is not None:
        differences = [NOT_ARRIVED]
    else:
        differences = ["unexpected-message"]
    difference = choose_difference(context, functions, differences)
    detail = f"differences: {', '.join(differences) or 'none'}"
    return make_case(
        context,
        feature=FEATURE,
        functions=functions,
        source=republish.source,
        destination=republish.destination,
        subject=expected.original_subject if expected else _original_subject(observed),
        expected=expected.describe() if expected else "(nothing)",
        observed=describe_message(observed, headers) if observed else "",
        difference=difference,
        detail=detail,
        seed=seed,
        stream_subjects=subjects,
        headers_only=republish.headers_only,
    )


def republish_key(message: Message, headers: Mapping[str, list[str]] | None = None) -> tuple[str, int] | None:
    """(stream, sequence) of a republished message: the last ``Nats-Stream`` and ``Nats-Sequence``
    values (earlier ones are application headers, e.g. from another stream's republish)."""
    headers = message.header_map() if headers is None else headers
    streams, sequences = headers.get(HEADER_STREAM), headers.get(HEADER_SEQUENCE)
    if not streams or not sequences or not sequences[-1].isdigit():
        return None
    return streams[-1], int(sequences[-1])


@dataclass(slots=True)
class MessageLedger:
    """Pairs the tap's messages with the model's predictions by (stream, sequence) and judges each pair
    once: a delivery nobody predicted is an `unexpected-message` case at once, a prediction nothing
    answered a `not-delivered` case at the end."""

    subjects: Sequence[str]
    republish: RePublish
    windows: dict[int, Window] = field(default_factory=dict)
    seen: int = 0
    matched: set[int] = field(default_factory=set)
    cases: list[Case] = field(default_factory=list)

    def complete(self, predicted: Sequence[RePublishedMessage], tapped: Sequence[Message]) -> bool:
        """True iff every prediction has a delivery with its key among `tapped`."""
        keys = {republish_key(message) for message in tapped}
        return all((p.stream, p.sequence) in keys for p in predicted)

    def judge(
        self,
        context: RunContext,
        predicted: Sequence[RePublishedMessage],
        tapped: Sequence[Message],
        *,
        final: bool,
        seed: int = 0,
    ) -> list[Case]:
        """Judge the deliveries not judged yet, and (when ``final``) the predictions never delivered."""
        new: list[Case] = []
        index_of = {(p.stream, p.sequence): i for i, p in enumerate(predicted)}
        for message in tapped[self.seen :]:
            headers = message.header_map()
            index = index_of.get(republish_key(message, headers) or ("", -1))
            want = predicted[index] if index is not None and index not in self.matched else None
            if index is not None and want is not None:
                self.matched.add(index)
            window = self.windows.get(want.sequence) if want else None
            new.append(
                judge_message(
                    context,
                    self.subjects,
                    self.republish,
                    want,
                    message,
                    window=window,
                    seed=seed,
                    headers=headers,
                )
            )
        self.seen = len(tapped)
        if final:
            for index, want in enumerate(predicted):
                if index not in self.matched:
                    self.matched.add(index)
                    new.append(judge_message(context, self.subjects, self.republish, want, None, seed=seed))
        self.cases += new
        return new


def headers_of(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Headers for ``WireConnection.publish`` (names are unique in what the suites publish)."""
    return dict(pairs)


__all__ = [
    "FEATURE",
    "MessageLedger",
    "Window",
    "choose_difference",
    "create_and_judge",
    "describe_message",
    "expected_outcome",
    "headers_of",
    "is_republished",
    "judge_configuration",
    "judge_message",
    "judge_stream_reply",
    "message_differences",
    "refusal_kind",
    "republish_key",
    "stream_config",
    "timed_publish",
]
