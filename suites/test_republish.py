"""JetStream RePublish on live servers, compared with ``reference.republish``
(ADR-28, https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-28.md).

The plugin's JetStream server of each target runs them (`nats_jetstream_server`: the session server has
no JetStream, and enabling it by reload would disturb other suites). Tests of one stream (the ADR's
example, the headers, last sequences, an edit, a subject purge, known options, drawn creates and updates)
are each one scenario of the republish family, run through the registry (`FAMILIES["republish"]`:
execute, then judge) with the family's stream (`STREAM`) and subjects (under `NAMESPACE`, destinations
under `DESTINATIONS`); the last test draws the family's own scenarios, as a campaign does. Tests of two
streams or of what a client reads off the wire drive the JetStream API over the raw protocol themselves
(``fixtures.clients.jetstream``) and watch a ``>`` tap for republished messages (no reply subject, see
``suites.families.republish.is_republished``). Every configuration and every republished message is a recorded
case with feature ``republish``; a test fails only on an unexpected divergence.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.fixtures.clients.jetstream import JetStreamClient, api_error
from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.republish import (
    HEADER_LAST_SEQUENCE,
    HEADER_MSG_SIZE,
    HEADER_SEQUENCE,
    HEADER_STREAM,
    HEADER_SUBJECT,
    HEADER_TIME_STAMP,
    RePublish,
    RePublishRules,
    StreamModel,
    StreamSet,
    parse_time_stamp,
    rules_for,
)
from nats_conformance.reference.versions import Version
from nats_conformance.suites.engine.family import cases_of, check, divergences, record
from nats_conformance.suites.engine.verdicts import RunContext, make_case
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.republish import (
    DESTINATIONS,
    FEATURE,
    NAMESPACE,
    STREAM,
    Delete,
    Edit,
    Publish,
    Purge,
    RepublishObservation,
    RepublishScenario,
    describe_message,
    is_republished,
    judge_configuration,
    judge_message,
    options,
    stream_config,
    stream_subject_layouts,
    valid_options,
)
from nats_conformance.suites.reproduce import assert_agrees, describe_divergences

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


def run(
    jetstream_server: Backend, context: RunContext, recorder: RecordWriter, scenario: RepublishScenario
) -> tuple[RepublishObservation, list[Case]]:
    """Run one scenario through the registry's republish family (execute, then judge), record its cases,
    and return what was observed with the cases (the creation's verdict first)."""
    family = FAMILIES["republish"]
    session = Session.of(jetstream_server, jetstream_server.config)
    observed: RepublishObservation = family.execute(session, scenario)
    judged = family.judge(context, session.profile, scenario, observed)
    record(recorder, judged)
    return observed, cases_of(judged)


# ---------------------------------------------------------------------------------------------------
# The ADR's worked example and its headers


def test_adr_example_configuration(
    jetstream_server: Backend, context: RunContext, recorder: RecordWriter
) -> None:
    """ "In the configuration above, a published message at one.foo.bar will be ingested into Stream1 as
    one.foo.bar and re-published as uno.foo.bar. Published messages at four.foo.bar will be ingested
    into Stream1 but not re-published." (RePublish Configuration Option; here in the family's stream
    and namespaces: `s.one.>` republished as `rs.uno.>`)"""
    one, four, uno = f"{NAMESPACE}.one", f"{NAMESPACE}.four", f"{DESTINATIONS}.uno"
    scenario = RepublishScenario(
        (f"{one}.>", f"{four}.>"),
        RePublish(f"{one}.>", f"{uno}.>", headers_only=False),
        operations=(
            Publish(f"{one}.foo.bar", b"hello", ()),
            Publish(f"{four}.foo.bar", b"not republished", ()),
        ),
    )
    observed, cases = run(jetstream_server, context, recorder, scenario)
    assert cases[0].verdict == "agree", describe_divergences(cases[:1])
    acks = [reply.body.get("seq") for reply in observed.replies]
    assert acks == [1, 2], "both messages are ingested"
    assert_agrees(cases)
    if all(case.verdict == "agree" for case in cases):
        assert [(m.subject, m.payload) for m in observed.tapped] == [(f"{uno}.foo.bar", b"hello")], [
            describe_message(m) for m in observed.tapped
        ]


@pytest.mark.parametrize("headers_only", [False, True], ids=["with-body", "headers-only"])
def test_every_documented_header(
    jetstream_server: Backend,
    rules: RePublishRules,
    context: RunContext,
    recorder: RecordWriter,
    headers_only: bool,
) -> None:
    """RePublish Headers: Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Last-Sequence and, with
    headers only, Nats-Msg-Size (and an empty body); application headers are preserved; the release's
    time stamp (Nats-Time-Stamp from 2.10) lies between the publish and its ack."""
    scenario = RepublishScenario(
        (f"{NAMESPACE}.>",),
        RePublish(f"{NAMESPACE}.>", f"{DESTINATIONS}.>", headers_only=headers_only),
        operations=(
            Publish(f"{NAMESPACE}.a", b"first", (("X-App", "kept"),)),
            Publish(f"{NAMESPACE}.a", b"second!", ()),
            Publish(f"{NAMESPACE}.b", b"", ()),
        ),
    )
    observed, cases = run(jetstream_server, context, recorder, scenario)
    assert cases[0].verdict == "agree", describe_divergences(cases[:1])
    assert_agrees(cases)
    tapped = observed.tapped
    assert len(tapped) == 3
    first, second, third = (m.header_map() for m in tapped)
    # Each header, as the ADR's table states it (values of this publish sequence).
    assert [h[HEADER_STREAM] for h in (first, second, third)] == [[STREAM]] * 3
    assert [h[HEADER_SEQUENCE] for h in (first, second, third)] == [["1"], ["2"], ["3"]]
    assert [h[HEADER_LAST_SEQUENCE] for h in (first, second, third)] == [["0"], ["1"], ["0"]]
    assert first["X-App"] == ["kept"]
    if rules.subject_header:
        assert [h[HEADER_SUBJECT] for h in (first, second, third)] == [
            [f"{NAMESPACE}.a"],
            [f"{NAMESPACE}.a"],
            [f"{NAMESPACE}.b"],
        ]
    if headers_only and rules.headers_only:
        assert [m.payload for m in tapped] == [b"", b"", b""]
        assert [h[HEADER_MSG_SIZE] for h in (first, second, third)] == [["5"], ["7"], ["0"]]
    else:
        assert [m.payload for m in tapped] == [b"first", b"second!", b""]
        assert all(HEADER_MSG_SIZE not in h for h in (first, second, third))
    if rules.time_stamp_header:
        stamps = [parse_time_stamp(h[HEADER_TIME_STAMP][0]) for h in (first, second, third)]
        assert None not in stamps
        assert stamps == sorted(stamps)  # type: ignore[type-var]
    else:
        assert all(HEADER_TIME_STAMP not in h for h in (first, second, third))


def test_last_sequence_when_the_last_message_was_deleted(
    jetstream_server: Backend, context: RunContext, recorder: RecordWriter
) -> None:
    """Nats-Last-Sequence is "the stream sequence id of the last message ingested to the same original
    subject (or 0 if none or deleted)": after the last message on a subject is deleted the model says 0;
    a purge of the subject gives 0 too."""
    subject = f"{NAMESPACE}.k"
    scenario = RepublishScenario(
        (f"{NAMESPACE}.*",),
        RePublish(f"{NAMESPACE}.*", f"{DESTINATIONS}.$1"),
        operations=(
            Publish(subject, b"1", ()),
            Publish(subject, b"2", ()),
            Delete(2),
            Publish(subject, b"3", ()),  # ADR: 0 (2 was deleted)
            Purge(subject),
            Publish(subject, b"4", ()),  # none left: 0
        ),
    )
    observed, cases = run(jetstream_server, context, recorder, scenario)
    replies = [reply.body for reply in observed.replies]
    assert (replies[2].get("success"), replies[4].get("purged")) == (True, 2)
    wrong = [c for c in cases if c.difference in ("wrong-delete", "wrong-purge")]
    assert not wrong, "the model's delete and purge replies are the server's"
    assert_agrees(cases)
    assert "last-sequence" not in cases[-1].case_class, "with no message left on the subject it is 0"


def test_republish_may_be_edited_after_creation(
    jetstream_server: Backend, context: RunContext, recorder: RecordWriter
) -> None:
    """ "RePublish option configuration MAY be edited after stream creation": a new destination and
    headers-only apply to the messages ingested after the update."""
    before = RePublish(f"{NAMESPACE}.>", f"{DESTINATIONS}.>")
    after = RePublish(f"{NAMESPACE}.>", f"{DESTINATIONS}.q.>", headers_only=True)
    scenario = RepublishScenario(
        (f"{NAMESPACE}.>",),
        before,
        operations=(
            Publish(f"{NAMESPACE}.x", b"before", ()),
            Edit(after),
            Publish(f"{NAMESPACE}.x", b"after", ()),
        ),
    )
    observed, cases = run(jetstream_server, context, recorder, scenario)
    assert_agrees(cases)
    if all(case.verdict == "agree" for case in cases):  # the edit was taken (not on 2.9) and applied
        delivered = [(m.subject, m.payload) for m in observed.tapped]
        assert delivered == [(f"{DESTINATIONS}.x", b"before"), (f"{DESTINATIONS}.q.x", b"")], delivered


# ---------------------------------------------------------------------------------------------------
# Validation


@given(data=st.data())
def test_server_accepts_exactly_the_options_the_reference_accepts(
    jetstream_server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    """A stream create (or an update of a stream created with a valid option) is accepted iff the
    reference finds no broken rule for the release, and a refusal names one of the broken rules. Each is
    a scenario of the family: a create has no operations, an update is one `Edit` (an edit the server
    takes to an option the reference refuses is the update's divergence, and ends the scenario)."""
    rules = rules_for(jetstream_server.version)
    operation = data.draw(st.sampled_from(["create", "update"]), label="operation")
    subjects = data.draw(stream_subject_layouts(NAMESPACE), label="subjects")
    option = data.draw(options(subjects, DESTINATIONS, rules.profile), label="option")
    if operation == "create":
        scenario = RepublishScenario(subjects, option)
    else:
        initial = data.draw(valid_options(subjects, DESTINATIONS, rules.profile), label="initial")
        scenario = RepublishScenario(subjects, initial, operations=(Edit(option),))
    _, cases = run(jetstream_server, context, recorder, scenario)
    assert_agrees(cases)


ONE, UNO = f"{NAMESPACE}.one", f"{DESTINATIONS}.uno"
"""The ADR example's `one` in the family's stream namespace and `uno` in its destinations."""

KNOWN_OPTIONS = [
    pytest.param((f"{ONE}.>", f"{NAMESPACE}.four.>"), RePublish(f"{ONE}.>", f"{UNO}.>"), id="adr-example"),
    pytest.param((f"{ONE}.>",), RePublish("", f"{UNO}.>"), id="default-source"),
    pytest.param((f"{ONE}.>",), RePublish(">", ">"), id="destination-all-wildcard"),
    pytest.param((f"{ONE}.>",), RePublish(f"{ONE}.>", f"{ONE}.>"), id="destination-is-stream-subject"),
    pytest.param((f"{ONE}.>",), RePublish(f"{ONE}.>", "*.>"), id="destination-subset-overlap"),
    pytest.param((f"{ONE}.>",), RePublish(f"{ONE}.>", ""), id="empty-destination"),
    pytest.param((f"{ONE}.*",), RePublish(f"{ONE}.*", "$1"), id="destination-only-placeholder"),
    pytest.param((f"{ONE}.>",), RePublish(f"{ONE}.>", f"{DESTINATIONS}.x y.>"), id="destination-with-space"),
    pytest.param((f"{ONE}.>",), RePublish(f"{NAMESPACE}.two.>", f"{UNO}.>"), id="source-outside-stream"),
    pytest.param(
        (f"{ONE}.*", f"{NAMESPACE}.uno.b"),
        RePublish(f"{ONE}.*", f"{NAMESPACE}.uno.$1"),
        id="placeholder-reaches-stream",
    ),
    pytest.param((f"{ONE}.*.*",), RePublish(f"{ONE}.*.*", f"{DESTINATIONS}.x.$1"), id="wildcard-not-used"),
    pytest.param((f"{ONE}.*",), RePublish(f"{ONE}.*", f"{DESTINATIONS}.x.{{{{left(1,2)}}}}"), id="left"),
    pytest.param((f"{ONE}.*",), RePublish(f"{ONE}.*", f"{DESTINATIONS}.x.{{{{random(3)}}}}"), id="random"),
]
"""One option each, in the family's namespaces (a destination meant to reach the stream in the stream's)."""


@pytest.mark.parametrize(("subjects", "option"), KNOWN_OPTIONS)
def test_documented_and_known_options(
    jetstream_server: Backend,
    context: RunContext,
    recorder: RecordWriter,
    subjects: tuple[str, ...],
    option: RePublish,
) -> None:
    """The ADR's validation rules, one option each (and the release differences found so far): a
    scenario of the family with no operations, the stream only created (and deleted)."""
    _, cases = run(jetstream_server, context, recorder, RepublishScenario(subjects, option))
    assert [case.verdict for case in cases] in (["agree"], ["expected"]), describe_divergences(cases)


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
    jetstream_server: Backend, context: RunContext, recorder: RecordWriter
) -> None:
    """Not RePublish's own rule but the stream state its headers describe: with max_msgs_per_subject 2,
    three messages on one subject (the first evicted) and the newest deleted, a purge of the subject
    removes the one left (2.9 removes nothing and keeps it). The family judges the purge's count (a
    `wrong-purge` case when it is not the model's)."""
    subject = f"{NAMESPACE}.k"
    scenario = RepublishScenario(
        (f"{NAMESPACE}.*",),
        RePublish(f"{NAMESPACE}.*", f"{DESTINATIONS}.$1"),
        max_msgs_per_subject=2,
        operations=(*(Publish(subject, body, ()) for body in (b"1", b"2", b"3")), Delete(3), Purge(subject)),
    )
    observed, cases = run(jetstream_server, context, recorder, scenario)
    assert "purged" in observed.replies[-1].body, observed.replies[-1].body
    assert_agrees(cases)


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
