"""JetStream RePublish on live servers, compared with ``reference.republish``
(ADR-28, https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-28.md).

The plugin's JetStream server of each target runs them (`nats_jetstream_server`: the session server has
no JetStream, and enabling it by reload would disturb other suites); the drawn scenarios are the
republish family's, run through the registry as a campaign runs them. Tests drive the JetStream API
over the raw protocol (``fixtures.clients.jetstream``) and watch a ``>`` tap for republished messages
(no reply subject, see ``suites.republish.is_republished``). Every configuration and every republished
message is a recorded case with feature ``republish``; a test fails only on an unexpected divergence.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixtures.clients.jetstream import JetStreamClient, api_error
from fixtures.options import Target
from fixtures.servers.base import Backend
from fixtures.session import Session
from records.schema import Case
from records.writer import RecordWriter
from reference.republish import (
    HEADER_LAST_SEQUENCE,
    HEADER_MSG_SIZE,
    HEADER_SEQUENCE,
    HEADER_STREAM,
    HEADER_SUBJECT,
    HEADER_TIME_STAMP,
    PublishOutcome,
    RePublish,
    RePublishRules,
    StreamModel,
    StreamSet,
    parse_time_stamp,
    rules_for,
)
from reference.versions import Version
from suites.engine.family import check, divergences, record
from suites.engine.verdicts import RunContext, make_case
from suites.families import FAMILIES
from suites.reproduce import assert_agrees, describe_divergences
from suites.republish import (
    FEATURE,
    MessageLedger,
    describe_message,
    is_republished,
    judge_configuration,
    judge_message,
    stream_config,
    timed_publish,
)
from suites.republish_strategies import (
    options,
    stream_subject_layouts,
    valid_options,
)

pytestmark = [pytest.mark.live, pytest.mark.republish, pytest.mark.min_server("2.8.3")]

DELIVERY_TIMEOUT = 2.0
"""How long a predicted republished message may take to arrive (it is usually there within 1 ms)."""

_NAMES = itertools.count(1)


def fresh(prefix: str) -> str:
    """A stream name or subject namespace used once in this session (`S12`, `s12`)."""
    return f"{prefix}{next(_NAMES)}"


@pytest.fixture
def rules(jetstream_server: Backend) -> RePublishRules:
    return rules_for(jetstream_server.version)


@pytest.fixture
def js(jetstream_server: Backend) -> Iterator[JetStreamClient]:
    """A JetStream client with a `>` tap collecting republished messages."""
    with JetStreamClient(jetstream_server.url) as client:
        client.tap(">", is_republished)
        yield client


def record_all(recorder: RecordWriter, cases: list[Case]) -> None:
    for case in cases:
        recorder.add(case)


def assert_no_divergence(cases: list[Case]) -> None:
    diverged = [case for case in cases if case.verdict == "diverge"]
    assert not diverged, describe_divergences(diverged)


def publish(
    js: JetStreamClient,
    model: StreamModel,
    ledger: MessageLedger,
    subject: str,
    *,
    payload: bytes = b"",
    headers: tuple[tuple[str, str], ...] = (),
) -> tuple[dict[str, object], PublishOutcome]:
    """Publish with an ack, let the model ingest the same message, and note the publish window."""
    ack, window = timed_publish(js, subject, payload, headers)
    outcome = model.publish(subject, payload, headers)
    if not outcome.duplicate:
        ledger.windows[outcome.sequence] = window
    return ack, outcome


def collect(
    js: JetStreamClient, model: StreamModel, ledger: MessageLedger, context: RunContext
) -> list[Case]:
    """Wait for the predicted messages, look for stray ones, and judge everything."""
    js.wait_until(lambda: ledger.complete(model.republished, js.tapped), DELIVERY_TIMEOUT)
    js.settle(0.05)
    return ledger.judge(context, model.republished, js.tapped, final=True)


# ---------------------------------------------------------------------------------------------------
# The ADR's worked example and its headers


def test_adr_example_configuration(
    js: JetStreamClient, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """ "In the configuration above, a published message at one.foo.bar will be ingested into Stream1 as
    one.foo.bar and re-published as uno.foo.bar. Published messages at four.foo.bar will be ingested
    into Stream1 but not re-published." (RePublish Configuration Option)"""
    subjects = ("one.>", "four.>")
    option = RePublish("one.>", "uno.>", headers_only=False)
    config = {
        "name": "Stream1",
        "subjects": list(subjects),
        "republish": {"src": "one.>", "dest": "uno.>", "headers_only": False},
        "retention": "limits",
        "storage": "memory",
    }
    reply = js.create_stream(config)
    created = judge_configuration(context, rules, subjects, option, reply)
    recorder.add(created)
    assert created.verdict == "agree", describe_divergences([created])
    try:
        model = StreamModel("Stream1", subjects, option, rules)
        ledger = MessageLedger(subjects, option)
        first, _ = publish(js, model, ledger, "one.foo.bar", payload=b"hello")
        second, _ = publish(js, model, ledger, "four.foo.bar", payload=b"not republished")
        assert (first.get("seq"), second.get("seq")) == (1, 2), "both messages are ingested"
        cases = collect(js, model, ledger, context)
    finally:
        js.delete_stream("Stream1")
    record_all(recorder, cases)
    assert_no_divergence(cases)
    if all(case.verdict == "agree" for case in cases):
        assert [(m.subject, m.payload) for m in js.tapped] == [("uno.foo.bar", b"hello")], [
            describe_message(m) for m in js.tapped
        ]


@pytest.mark.parametrize("headers_only", [False, True], ids=["with-body", "headers-only"])
def test_every_documented_header(
    js: JetStreamClient,
    rules: RePublishRules,
    context: RunContext,
    recorder: RecordWriter,
    headers_only: bool,
) -> None:
    """RePublish Headers: Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Last-Sequence and, with
    headers only, Nats-Msg-Size (and an empty body); application headers are preserved; the release's
    time stamp (Nats-Time-Stamp from 2.10) lies between the publish and its ack."""
    name, namespace = fresh("H"), fresh("h")
    subjects = (f"{namespace}.>",)
    option = RePublish(f"{namespace}.>", f"r{namespace}.>", headers_only=headers_only)
    reply = js.create_stream(stream_config(name, subjects, option))
    created = judge_configuration(context, rules, subjects, option, reply)
    recorder.add(created)
    assert created.verdict == "agree", describe_divergences([created])
    model = StreamModel(name, subjects, option, rules)
    ledger = MessageLedger(subjects, option)
    try:
        publish(js, model, ledger, f"{namespace}.a", payload=b"first", headers=(("X-App", "kept"),))
        publish(js, model, ledger, f"{namespace}.a", payload=b"second!")
        publish(js, model, ledger, f"{namespace}.b", payload=b"")
        cases = collect(js, model, ledger, context)
    finally:
        js.delete_stream(name)
    record_all(recorder, cases)
    assert_no_divergence(cases)
    assert len(js.tapped) == 3
    first, second, third = (m.header_map() for m in js.tapped)
    # Each header, as the ADR's table states it (values of this publish sequence).
    assert [h[HEADER_STREAM] for h in (first, second, third)] == [[name]] * 3
    assert [h[HEADER_SEQUENCE] for h in (first, second, third)] == [["1"], ["2"], ["3"]]
    assert [h[HEADER_LAST_SEQUENCE] for h in (first, second, third)] == [["0"], ["1"], ["0"]]
    assert first["X-App"] == ["kept"]
    if rules.subject_header:
        assert [h[HEADER_SUBJECT] for h in (first, second, third)] == [
            [f"{namespace}.a"],
            [f"{namespace}.a"],
            [f"{namespace}.b"],
        ]
    if headers_only and rules.headers_only:
        assert [m.payload for m in js.tapped] == [b"", b"", b""]
        assert [h[HEADER_MSG_SIZE] for h in (first, second, third)] == [["5"], ["7"], ["0"]]
    else:
        assert [m.payload for m in js.tapped] == [b"first", b"second!", b""]
        assert all(HEADER_MSG_SIZE not in h for h in (first, second, third))
    if rules.time_stamp_header:
        stamps = [parse_time_stamp(h[HEADER_TIME_STAMP][0]) for h in (first, second, third)]
        assert None not in stamps
        assert stamps == sorted(stamps)  # type: ignore[type-var]
    else:
        assert all(HEADER_TIME_STAMP not in h for h in (first, second, third))


def test_last_sequence_when_the_last_message_was_deleted(
    js: JetStreamClient, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """Nats-Last-Sequence is "the stream sequence id of the last message ingested to the same original
    subject (or 0 if none or deleted)": after the last message on a subject is deleted the model says 0;
    a purge of the subject gives 0 too."""
    name, namespace = fresh("L"), fresh("l")
    subjects = (f"{namespace}.*",)
    option = RePublish(f"{namespace}.*", f"r{namespace}.$1")
    reply = js.create_stream(stream_config(name, subjects, option))
    recorder.add(judge_configuration(context, rules, subjects, option, reply))
    model = StreamModel(name, subjects, option, rules)
    ledger = MessageLedger(subjects, option)
    try:
        publish(js, model, ledger, f"{namespace}.k", payload=b"1")
        publish(js, model, ledger, f"{namespace}.k", payload=b"2")
        assert js.delete_message(name, 2).get("success") is model.delete(2) is True
        publish(js, model, ledger, f"{namespace}.k", payload=b"3")  # ADR: 0 (2 was deleted)
        assert js.purge(name, subject=f"{namespace}.k").get("purged") == model.purge(f"{namespace}.k") == 2
        publish(js, model, ledger, f"{namespace}.k", payload=b"4")  # none left: 0
        cases = collect(js, model, ledger, context)
    finally:
        js.delete_stream(name)
    record_all(recorder, cases)
    assert_no_divergence(cases)
    assert "last-sequence" not in cases[-1].case_class, "with no message left on the subject it is 0"


def test_republish_may_be_edited_after_creation(
    js: JetStreamClient, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """ "RePublish option configuration MAY be edited after stream creation": a new destination and
    headers-only apply to the messages ingested after the update."""
    name, namespace = fresh("E"), fresh("e")
    subjects = (f"{namespace}.>",)
    before = RePublish(f"{namespace}.>", f"r{namespace}.>")
    after = RePublish(f"{namespace}.>", f"q{namespace}.>", headers_only=True)
    reply = js.create_stream(stream_config(name, subjects, before))
    recorder.add(judge_configuration(context, rules, subjects, before, reply))
    model = StreamModel(name, subjects, before, rules)
    ledger = MessageLedger(subjects, before)
    try:
        publish(js, model, ledger, f"{namespace}.x", payload=b"before")
        cases = collect(js, model, ledger, context)
        updated = js.update_stream(stream_config(name, subjects, after))
        update_case = judge_configuration(context, rules, subjects, after, updated, operation="update")
        cases.append(update_case)
        if api_error(updated) is None:
            model.reconfigure(after)
            ledger.republish = after
        publish(js, model, ledger, f"{namespace}.x", payload=b"after")
        cases += collect(js, model, ledger, context)
    finally:
        js.delete_stream(name)
    record_all(recorder, cases)
    assert_no_divergence(cases)


# ---------------------------------------------------------------------------------------------------
# Validation


@given(data=st.data())
def test_server_accepts_exactly_the_options_the_reference_accepts(
    jetstream_server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    """A stream create (or an update of a stream created with a valid option) is accepted iff the
    reference finds no broken rule for the release, and a refusal names one of the broken rules."""
    rules = rules_for(jetstream_server.version)
    namespace = fresh("v")
    subjects = data.draw(stream_subject_layouts(namespace), label="subjects")
    option = data.draw(options(subjects, f"r{namespace}", rules.profile), label="option")
    operation = data.draw(st.sampled_from(["create", "update"]), label="operation")
    name = fresh("V")
    with JetStreamClient(jetstream_server.url) as js:
        if operation == "update":
            initial = data.draw(valid_options(subjects, f"r{namespace}", rules.profile), label="initial")
            reply = js.create_stream(stream_config(name, subjects, initial))
            assert api_error(reply) is None, f"a valid option was refused: {api_error(reply)}"
            reply = js.update_stream(stream_config(name, subjects, option))
        else:
            reply = js.create_stream(stream_config(name, subjects, option))
        try:
            case = judge_configuration(context, rules, subjects, option, reply, operation=operation)
        finally:
            js.delete_stream(name)
    recorder.add(case)
    assert case.verdict != "diverge", describe_divergences([case])


KNOWN_OPTIONS = [
    pytest.param(("one.>", "four.>"), RePublish("one.>", "uno.>"), id="adr-example"),
    pytest.param(("one.>",), RePublish("", "uno.>"), id="default-source"),
    pytest.param(("one.>",), RePublish(">", ">"), id="destination-all-wildcard"),
    pytest.param(("one.>",), RePublish("one.>", "one.>"), id="destination-is-stream-subject"),
    pytest.param(("one.>",), RePublish("one.>", "*.>"), id="destination-subset-overlap"),
    pytest.param(("one.>",), RePublish("one.>", ""), id="empty-destination"),
    pytest.param(("one.*",), RePublish("one.*", "$1"), id="destination-only-placeholder"),
    pytest.param(("one.>",), RePublish("one.>", "x y.>"), id="destination-with-space"),
    pytest.param(("one.>",), RePublish("two.>", "uno.>"), id="source-outside-stream"),
    pytest.param(("one.*", "uno.b"), RePublish("one.*", "uno.$1"), id="placeholder-reaches-stream"),
    pytest.param(("one.*.*",), RePublish("one.*.*", "x.$1"), id="wildcard-not-used"),
    pytest.param(("one.*",), RePublish("one.*", "x.{{left(1,2)}}"), id="left"),
    pytest.param(("one.*",), RePublish("one.*", "x.{{random(3)}}"), id="random"),
]


@pytest.mark.parametrize(("subjects", "option"), KNOWN_OPTIONS)
def test_documented_and_known_options(
    js: JetStreamClient,
    context: RunContext,
    recorder: RecordWriter,
    subjects: tuple[str, ...],
    option: RePublish,
) -> None:
    """The ADR's validation rules, one option each (and the release differences found so far)."""
    rules = rules_for(js.version)
    prefix = fresh("k")
    subjects = tuple(f"{prefix}{s}" for s in subjects)
    option = RePublish(
        f"{prefix}{option.source}" if option.source and option.source != ">" else option.source,
        f"{prefix}{option.destination}" if option.destination[:1].isalpha() else option.destination,
        option.headers_only,
    )
    name = fresh("K")
    reply = js.create_stream(stream_config(name, subjects, option))
    if api_error(reply) is None:
        js.delete_stream(name)
    case = judge_configuration(context, rules, subjects, option, reply)
    recorder.add(case)
    assert case.verdict in ("agree", "expected"), describe_divergences([case])


# ---------------------------------------------------------------------------------------------------
# Findings made visible: what servers do with options the ADR forbids


def test_placeholder_destination_is_ingested_again(
    js: JetStreamClient, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """Loop Prevention: "Valid Destination configuration checks insures that re-published messages are
    not immediately ingested into the original stream". Servers check the destination's text only, so
    `n.*` -> `m.$1` with stream subjects `n.*` and `m.b` is accepted and `n.b` comes back as `m.b`."""
    namespace = fresh("p")
    subjects = (f"{namespace}.n.*", f"{namespace}.m.b")
    option = RePublish(f"{namespace}.n.*", f"{namespace}.m.$1")
    name = fresh("P")
    reply = js.create_stream(stream_config(name, subjects, option) | {"max_msgs": 100})
    case = judge_configuration(context, rules, subjects, option, reply)
    recorder.add(case)
    assert case.verdict in ("agree", "expected"), describe_divergences([case])
    if api_error(reply) is not None:
        return
    try:
        js.publish(f"{namespace}.n.b", b"once")
        js.settle(0.1)
        last = js.stream_info(name)["state"]["last_seq"]
    finally:
        js.delete_stream(name)
    # 2.9+: once (m.b is not matched by the source); 2.8 applies no source and loops (see expectations).
    assert last >= 2, "the republished message was ingested into the same stream"


def test_whitespace_destination_reaches_subscribers_as_a_broken_protocol_line(
    jetstream_server: Backend, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """A destination token with a space is accepted by every release (the model rejects it: no valid
    subject has one). 2.9-2.11 then send `HMSG x y.q ...`, which a client reads as subject `x`, sid `y.q`;
    2.12 and later drop the message with a warning; 2.8 delivers it under the original subject."""
    namespace = fresh("w")
    subjects = (f"{namespace}.>",)
    option = RePublish(f"{namespace}.>", f"x{namespace} y.>")
    name = fresh("W")
    with JetStreamClient(jetstream_server.url) as js:
        reply = js.create_stream(stream_config(name, subjects, option))
        case = judge_configuration(context, rules, subjects, option, reply)
        recorder.add(case)
        assert case.verdict in ("agree", "expected"), describe_divergences([case])
        if api_error(reply) is not None:
            return
        host, port = jetstream_server.url.removeprefix("nats://").split(":")
        with socket.create_connection((host, int(port)), timeout=2) as raw:
            raw.recv(65536)
            raw.sendall(b'CONNECT {"verbose":false,"headers":true}\r\nSUB > 1\r\nPING\r\n')
            received = b""
            while b"PONG" not in received:
                received += raw.recv(65536)
            js.publish(f"{namespace}.q", b"z")
            js.delete_stream(name)
            raw.sendall(b"PING\r\n")
            received = b""
            while b"PONG" not in received:
                received += raw.recv(65536)
    lines = [line for line in received.split(b"\r\n") if line.startswith(b"HMSG")]
    if rules.version.line in (Version(2, 9), Version(2, 10), Version(2, 11)):
        assert lines, "the republished message was not delivered"
        assert lines[0].startswith(f"HMSG x{namespace} y.q ".encode()), lines
    elif rules.version >= Version(2, 12, 0):
        assert lines == [], lines


def test_empty_destination_republishes_nothing(
    js: JetStreamClient, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """The destination is required (configuration table); 2.8 and 2.9 refuse an empty one, later
    releases accept it and republish nothing."""
    namespace = fresh("z")
    subjects = (f"{namespace}.>",)
    option = RePublish(f"{namespace}.>", "")
    name = fresh("Z")
    reply = js.create_stream(stream_config(name, subjects, option))
    case = judge_configuration(context, rules, subjects, option, reply)
    recorder.add(case)
    assert case.verdict in ("agree", "expected"), describe_divergences([case])
    if api_error(reply) is None:
        try:
            js.publish(f"{namespace}.a", b"x")
            js.settle(0.1)
        finally:
            js.delete_stream(name)
        assert js.tapped == []


def test_subject_purge_after_limit_and_delete(
    js: JetStreamClient, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """Not RePublish's own rule but the stream state its headers describe: with max_msgs_per_subject 2,
    three messages on one subject (the first evicted) and the newest deleted, a purge of the subject
    removes the one left (2.9 removes nothing and keeps it)."""
    name, namespace = fresh("Q"), fresh("q")
    subjects = (f"{namespace}.*",)
    option = RePublish(f"{namespace}.*", f"r{namespace}.$1")
    reply = js.create_stream(stream_config(name, subjects, option, max_msgs_per_subject=2))
    recorder.add(judge_configuration(context, rules, subjects, option, reply))
    model = StreamModel(name, subjects, option, rules, max_msgs_per_subject=2)
    ledger = MessageLedger(subjects, option)
    try:
        for body in (b"1", b"2", b"3"):
            publish(js, model, ledger, f"{namespace}.k", payload=body)
        assert js.delete_message(name, 3).get("success") is model.delete(3) is True
        purged = js.purge(name, subject=f"{namespace}.k").get("purged")
        cases = collect(js, model, ledger, context)
    finally:
        js.delete_stream(name)
    expected = model.purge(f"{namespace}.k")
    cases.append(
        make_case(
            context,
            feature=FEATURE,
            functions=(),
            source=option.source,
            destination=option.destination,
            subject=f"{namespace}.k",
            expected=f"purge: {expected}",
            observed=f"purge: {purged}",
            difference="" if purged == expected else "wrong-purge",
            detail="max_msgs_per_subject=2, publish x3, delete 3, purge",
            stream_subjects=subjects,
            headers_only=option.headers_only,
        )
    )
    record_all(recorder, cases)
    assert_no_divergence(cases)


# ---------------------------------------------------------------------------------------------------
# The documented caution: two streams that republish into each other

LOOP_HOPS = 12


def test_two_streams_with_overlapping_destinations_loop(
    js: JetStreamClient, rules: RePublishRules, context: RunContext, recorder: RecordWriter
) -> None:
    """Loop Prevention, Caution: "It is possible to create a loop condition between two streams sharing
    an overlap in republish destinations and subject filters within a single account." Both options are
    valid on their own; one publish then bounces between the streams, every hop carrying the earlier
    hops' headers as application headers. The first hops must be the model's; the loop must go on past
    them (servers end it when the header block nears 64 KiB, which the ADR does not say)."""
    a, b = fresh("la"), fresh("lb")
    names = (fresh("A"), fresh("B"))
    options_ = (RePublish(f"{a}.>", f"{b}.>"), RePublish(f"{b}.>", f"{a}.>"))
    models = []
    cases: list[Case] = []
    try:
        for name, space, option in zip(names, (a, b), options_, strict=True):
            subjects = (f"{space}.>",)
            config = stream_config(name, subjects, option) | {"max_msgs": 1000}
            reply = js.create_stream(config)
            cases.append(judge_configuration(context, rules, subjects, option, reply))
            models.append(StreamModel(name, subjects, option, rules))
        assert [c.verdict for c in cases] == ["agree", "agree"], describe_divergences(cases)
        chain = StreamSet(models).publish(f"{a}.x", b"ping", hops=LOOP_HOPS)
        js.publish(f"{a}.x", b"ping")
        js.wait_for(LOOP_HOPS, DELIVERY_TIMEOUT)
        for index, expected in enumerate(chain):
            observed = js.tapped[index] if index < len(js.tapped) else None
            space = (a, b)[index % 2]
            cases.append(judge_message(context, (f"{space}.>",), options_[index % 2], expected, observed))
        js.settle(0.3)
        hops = len(js.tapped)
    finally:
        for name in names:
            js.delete_stream(name)
    cases.append(
        make_case(
            context,
            feature=FEATURE,
            functions=(),
            source=f"{a}.> <-> {b}.>",
            destination=f"{b}.> <-> {a}.>",
            subject=f"{a}.x",
            expected=f"loop: more than {LOOP_HOPS} republishes",
            observed=f"loop: {hops} republishes",
            difference="" if hops > LOOP_HOPS else "no-loop",
            detail=f"last header block {len(js.tapped[-1].headers or b'')} bytes" if js.tapped else "",
        )
    )
    record_all(recorder, cases)
    assert_no_divergence(cases)


# ---------------------------------------------------------------------------------------------------
# The property, through the family registry


@given(data=st.data())
def test_republished_messages_follow_the_model(
    target: Target,
    jetstream_server: Backend,
    context: RunContext,
    recorder: RecordWriter,
    data: st.DataObject,
) -> None:
    """The republish family's scenarios (a stream, an option, publishes with headers and message ids,
    duplicates, deletes, purges and option edits), run and judged as the campaign runs them: every
    republished message equals the model's, message by message."""
    if target.backend != "process":
        pytest.skip("the RePublish scenarios run on the process backend only (the server is the same)")
    family = FAMILIES["republish"]
    session = Session.of(jetstream_server, jetstream_server.config)
    scenario = data.draw(family.units(session.profile), label="scenario")
    judged = check(family, session, context, scenario)
    record(recorder, judged)
    assert_agrees(divergences(judged))
