"""How republish cases are judged (``suites.families.republish``), on hand-built replies, messages and
observations: every difference has its name, expectations explain only what they list, replays carry the
stream, and a scenario ends where the model cannot follow the server."""

from __future__ import annotations

import itertools
import shlex

import pytest
from hypothesis import find, settings

from nats_conformance.fixtures.clients.jetstream import ApiError
from nats_conformance.fixtures.clients.wire import Message
from nats_conformance.records.expectations import Expectation, Expectations
from nats_conformance.records.replay import replay_command
from nats_conformance.reference.republish import RePublish, StreamModel, republish_violations, rules_for
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.republish import (
    STREAM,
    Edit,
    MessageLedger,
    Publish,
    Reply,
    RepublishFamily,
    RepublishObservation,
    RepublishScenario,
    Window,
    is_republished,
    judge_configuration,
    message_differences,
    options,
    refusal_kind,
    steps_of,
)

RULES = rules_for("2.14.5")
OPTION = RePublish("s.*", "r.$1")
SUBJECTS = ("s.*",)


def context(*entries: Expectation, version: str = "2.14.5") -> RunContext:
    counter = itertools.count()
    return RunContext("run", "nats-server", version, "process", Expectations(entries), lambda: next(counter))


def wire(
    subject: str, headers: list[tuple[str, str]], payload: bytes = b"", reply: str | None = None
) -> Message:
    block = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return Message(subject, 2, reply, block.encode(), payload)


def predicted(*subjects: str, payload: bytes = b"x") -> StreamModel:
    model = StreamModel("S", SUBJECTS, OPTION, RULES)
    for subject in subjects:
        model.publish(subject, payload)
    return model


STAMP = "2026-11-21T15:15:36.5Z"
STAMP_NS = 1795274136_500_000_000


def server_headers(sequence: int, last: int, subject: str = "s.a") -> list[tuple[str, str]]:
    return [
        ("Nats-Stream", "S"),
        ("Nats-Subject", subject),
        ("Nats-Sequence", str(sequence)),
        ("Nats-Time-Stamp", STAMP),
        ("Nats-Last-Sequence", str(last)),
    ]


def test_a_faithful_message_has_no_difference() -> None:
    want = predicted("s.a").republished[0]
    got = wire("r.a", server_headers(1, 0), b"x")
    assert message_differences(want, got, Window(STAMP_NS - 10, STAMP_NS + 10)) == []


@pytest.mark.parametrize(
    ("subject", "headers", "payload", "window", "difference"),
    [
        ("s.a", server_headers(1, 0), b"x", None, "original-subject"),
        ("r.b", server_headers(1, 0), b"x", None, "wrong-subject"),
        ("r.a", server_headers(1, 0), b"", None, "wrong-body"),
        ("r.a", server_headers(1, 7), b"x", None, "header-nats-last-sequence"),
        ("r.a", server_headers(1, 0)[:3] + server_headers(1, 0)[4:], b"x", None, "header-nats-time-stamp"),
        ("r.a", [*server_headers(1, 0), ("X-Extra", "1")], b"x", None, "extra-header-x-extra"),
        (
            "r.a",
            server_headers(1, 0),
            b"x",
            Window(STAMP_NS + 10**9, STAMP_NS + 2 * 10**9),
            "time-stamp-outside-publish",
        ),
    ],
)
def test_each_difference_has_its_name(
    subject: str, headers: list[tuple[str, str]], payload: bytes, window: Window | None, difference: str
) -> None:
    want = predicted("s.a").republished[0]
    assert message_differences(want, wire(subject, headers, payload), window) == [difference]


def test_a_last_sequence_naming_the_remaining_message_is_its_own_difference() -> None:
    model = predicted("s.a", "s.a")
    model.delete(2)
    model.publish("s.a", b"x")
    want = model.republished[-1]
    got = wire("r.a", server_headers(3, 1), b"x")
    assert message_differences(want, got, None) == ["last-sequence-of-remaining"]


def test_a_wrong_subject_is_named_as_in_every_family() -> None:
    """A partition count past 32 bits is `wrong-subject-count-beyond-32-bits`, as for a mapping, so
    that a release that cuts the count to 32 bits is one listed class wherever the transform ran."""
    option = RePublish("s.*", "r.{{partition(4294967299,1)}}")
    model = StreamModel("S", SUBJECTS, option, rules_for("2.11.17"))  # 2.12 refuses such a count
    model.publish("s.a", b"x")
    want = model.republished[0]
    assert want.subject != "r.1"
    got = wire("r.1", server_headers(1, 0), b"x")
    assert message_differences(want, got, None) == ["wrong-subject-count-beyond-32-bits"]


def test_the_ledger_pairs_by_sequence_and_reports_strays_and_losses() -> None:
    model = predicted("s.a", "s.b", "s.a")
    ledger = MessageLedger(SUBJECTS, OPTION)
    tapped = [
        wire("r.b", server_headers(2, 0, "s.b"), b"x"),
        wire("r.zz", server_headers(9, 0, "s.zz"), b"x"),  # nobody predicted sequence 9
    ]
    cases = ledger.judge(context(), model.republished, tapped, final=False)
    assert [c.verdict for c in cases] == ["agree", "diverge"]
    assert cases[1].case_class == "republish:wildcard:unexpected-message"
    final = ledger.judge(context(), model.republished, tapped, final=True)
    assert [c.case_class for c in final] == ["republish:wildcard:not-delivered"] * 2


def test_an_expectation_does_not_hide_a_second_difference() -> None:
    listed = Expectation("subject-listed", "republish", "original-subject")
    want = predicted("s.a").republished[0]
    ledger = MessageLedger(SUBJECTS, OPTION)
    both = wire("s.a", server_headers(1, 0), b"")  # original subject and the wrong body
    (case,) = ledger.judge(context(listed), [want], [both], final=True)
    assert case.verdict == "diverge"
    assert case.case_class == "republish:wildcard:wrong-body"
    assert "original-subject, wrong-body" in case.detail
    (alone,) = MessageLedger(SUBJECTS, OPTION).judge(
        context(listed), [want], [wire("s.a", server_headers(1, 0), b"x")], final=True
    )
    assert (alone.verdict, alone.expectation) == ("expected", "subject-listed")


@pytest.mark.parametrize(
    ("reply", "option", "verdict", "case_class"),
    [
        ({"config": {}}, OPTION, "agree", ""),
        (
            {"config": {}},
            RePublish("s.*", "$1"),
            "diverge",
            "reference-reject-destination-without-literal-server-accept",
        ),
        (
            {"error": {"code": 500, "err_code": 10052, "description": "republish destination forms a cycle"}},
            RePublish("s.*", "s.$1"),
            "agree",
            "",
        ),
        (
            {
                "error": {
                    "code": 500,
                    "err_code": 10052,
                    "description": "stream configuration for republish not valid",
                }
            },
            RePublish("s.*", "s.$1"),
            "diverge",
            "reference-reject-destination-overlaps-stream-server-reject-invalid-transform",
        ),
        (
            {"error": {"code": 500, "err_code": 10049, "description": "error creating store for stream"}},
            OPTION,
            "unknown",
            "",
        ),
    ],
)
def test_configuration_verdicts(
    reply: dict[str, object], option: RePublish, verdict: str, case_class: str
) -> None:
    case = judge_configuration(context(), RULES, SUBJECTS, option, reply)
    assert case.verdict == verdict
    assert case.case_class.endswith(case_class)
    if "error" in reply:
        assert "err_code" in case.detail


def test_a_cycle_found_by_a_token_that_begins_with_a_wildcard_has_its_own_class() -> None:
    cycle = {"error": {"code": 500, "err_code": 10052, "description": "republish destination forms a cycle"}}
    subjects = ("s.a.*", "s.b.>")
    near = judge_configuration(context(), RULES, subjects, RePublish("s.b.>", "s.*a.>"), cycle)
    assert near.case_class.endswith(
        "reference-accept-server-reject-destination-overlaps-stream-wildcard-prefixed-token"
    )
    plain = judge_configuration(context(), RULES, subjects, RePublish("s.b.>", "s.c.>"), cycle)
    assert plain.case_class.endswith("reference-accept-server-reject-destination-overlaps-stream")


def test_refusal_kinds_follow_the_server_words() -> None:
    def kind(text: str) -> str:
        return refusal_kind(ApiError(500, 10052, text))

    assert (
        kind("stream configuration for republish source is not valid subset of subjects")
        == "source-outside-stream"
    )
    assert kind("stream configuration update can not change RePublish") == "update-not-allowed"
    assert (
        kind("stream configuration for republish with transform from 'a' to 'b' not valid")
        == "invalid-transform"
    )
    assert kind("insufficient resources") == "other"


def test_a_stream_whose_subjects_overlap_must_be_refused_for_that() -> None:
    """Two subjects of `*` alone and one length that share a subject (`crossed_layouts`): the server's
    "overlaps with" agrees; taking the stream is a divergence of its own."""
    subjects = ("s.a.*", "s.*.b")
    words = 'subject "s.a.*" overlaps with "s.*.b"'
    refused = {"error": {"code": 500, "err_code": 10052, "description": words}}
    assert refusal_kind(ApiError(500, 10052, words)) == "stream-subjects-overlap"
    case = judge_configuration(context(), RULES, subjects, OPTION, refused)
    assert (case.verdict, case.expected) == ("agree", "reject:stream-subjects-overlap")
    taken = judge_configuration(context(), RULES, subjects, OPTION, {"config": {}})
    assert taken.case_class.endswith("reference-reject-stream-subjects-overlap-server-accept")
    for apart in (("s.a.*", "s.*.b.*"), ("s.*.a", "s.*.b")):  # by their lengths, by their last token
        assert judge_configuration(context(), RULES, apart, OPTION, {"config": {}}).verdict == "agree"


def test_replay_command_names_the_stream_subjects_and_headers_only() -> None:
    option = RePublish("", "r.>", headers_only=True)
    case = judge_configuration(context(), RULES, ("s.>", "t.*"), option, {"config": {}})
    words = shlex.split(replay_command(case))
    assert words[words.index("--stream-subjects") + 1] == "s.>,t.*"
    assert "--headers-only" in words
    assert words[words.index("--destination") + 1] == "r.>"


def test_the_tap_keeps_only_messages_without_reply_outside_the_api() -> None:
    assert is_republished(wire("r.a", []))
    assert not is_republished(wire("s.a", [], reply="_INBOX.x.1"))
    assert not is_republished(wire("$JS.EVENT.ADVISORY.API", []))


def test_an_edit_the_server_takes_to_an_option_the_reference_refuses_ends_the_scenario() -> None:
    """The server accepts an edit to `$1` (no literal token, which the reference refuses): the update's
    case is the divergence, and the publish after it, which the model cannot follow, is not judged (as
    after a create the server takes although the reference refuses it)."""
    refused = RePublish("s.*", "$1")
    unit = RepublishScenario(
        SUBJECTS,
        OPTION,
        operations=(Publish("s.a", b"x", ()), Edit(refused), Publish("s.b", b"y", ())),
    )
    observed = RepublishObservation(
        created={"config": {}},
        create_us=0,
        replies=(
            Reply({"seq": 1}, Window(STAMP_NS - 10, STAMP_NS + 10), 0),
            Reply({"config": {}}, None, 1),
            Reply({"seq": 2}, None, 1),
        ),
        tapped=(
            wire("r.a", [("Nats-Stream", STREAM), *server_headers(1, 0)[1:]], b"x"),
            wire("b", [("Nats-Stream", STREAM), *server_headers(2, 0, "s.b")[1:]], b"y"),
        ),
    )
    cases = cases_of(RepublishFamily().judge(context(), RULES.profile, unit, observed))
    assert [(case.verdict, case.subject) for case in cases] == [
        ("agree", ""),
        ("agree", "s.a"),
        ("diverge", ""),
    ]
    update = cases[-1]
    assert update.case_class == "republish:$n:reference-reject-destination-without-literal-server-accept"
    assert (update.destination, update.detail) == ("$1", "update: accepted")
    assert all(case.steps == steps_of(unit) for case in cases)


@pytest.mark.parametrize("token", ["", ">"])
def test_a_hollow_source_is_drawn_and_refused(token: str) -> None:
    """A RePublish source with an empty token, or `>` before its end, is no subject: drawn among the
    options, the reference refuses it (the transform's check of its source is the server's only one)."""

    def hollow(option: RePublish) -> bool:
        tokens = option.source.split(".")
        return len(tokens) > 1 and (token in tokens[:-1] if token else "" in tokens)

    search = settings(max_examples=3000, database=None, derandomize=True)
    option = find(options(SUBJECTS, "r", RULES.profile), hollow, settings=search)
    assert republish_violations(SUBJECTS, option, RULES)
