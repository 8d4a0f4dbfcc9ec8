"""The RePublish reference (``reference.republish``): every worked example and rule of
ADR-28 (https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-28.md), the release
table, and the stream model's predictions."""

from __future__ import annotations

import pytest

from nats_conformance.reference.republish import (
    HEADER_LAST_SEQUENCE,
    HEADER_MSG_SIZE,
    HEADER_SEQUENCE,
    HEADER_STREAM,
    HEADER_SUBJECT,
    HEADER_TIME_STAMP,
    STORE_TIME,
    RePublish,
    RePublishError,
    StreamModel,
    StreamSet,
    compile_republish,
    parse_time_stamp,
    reportable_by,
    republish_violations,
    rules_for,
    stream_violations,
    subjects_collide,
)

NEWEST = rules_for("2.14.5")


def kinds(subjects: tuple[str, ...], option: RePublish, release: str = "2.14.5") -> list[str]:
    return [error.kind for error in republish_violations(subjects, option, rules_for(release))]


# "RePublish Configuration Option": the example configuration and its two sentences.
def test_adr_example_configuration_is_valid_and_maps_one_but_not_four() -> None:
    compiled = compile_republish(("one.>", "four.>"), RePublish("one.>", "uno.>", False), NEWEST)
    assert compiled.destination_of("one.foo.bar") == "uno.foo.bar"
    assert compiled.destination_of("four.foo.bar") is None


def test_adr_example_stream_republishes_one_foo_bar_with_every_header() -> None:
    model = StreamModel("Stream1", ("one.>", "four.>"), RePublish("one.>", "uno.>"), NEWEST)
    first = model.publish("one.foo.bar", b"hello")
    second = model.publish("four.foo.bar", b"hello")
    assert (first.sequence, second.sequence) == (1, 2)
    assert second.republished is None
    message = first.republished
    assert message is not None
    assert message.subject == "uno.foo.bar"
    assert message.payload == b"hello"
    assert message.headers == (
        (HEADER_STREAM, "Stream1"),
        (HEADER_SUBJECT, "one.foo.bar"),
        (HEADER_SEQUENCE, "1"),
        (HEADER_TIME_STAMP, STORE_TIME),
        (HEADER_LAST_SEQUENCE, "0"),
    )


@pytest.mark.parametrize(
    ("subjects", "option", "expected"),
    [
        # "A single token as > wildcard is allowed as the Source" (and is the default).
        (("one.>",), RePublish(">", "uno.>"), []),
        (("one.>",), RePublish("", "uno.>"), []),
        # "Destination MUST have at least 1 non-wildcard token"
        (("one.*",), RePublish("one.*", "$1"), ["destination-without-literal"]),
        (("one.*",), RePublish("one.*", "{{wildcard(1)}}"), ["destination-without-literal"]),
        # "Destination MAY not match or subset the subject filter(s) of the stream"
        (("one.>",), RePublish("one.>", "one.>"), ["destination-overlaps-stream"]),
        (("one.a",), RePublish("one.a", "one.*"), ["destination-overlaps-stream", "invalid-transform"]),
        # "Source and Destination must otherwise comply with ... ADR-30"
        (("one.>",), RePublish("one.*", "x.>"), ["invalid-transform"]),
        (("one.*",), RePublish("one.*", "x.{{nosuch(1)}}"), ["invalid-transform"]),
        # Destination: Required
        (("one.>",), RePublish("one.>", ""), ["empty-destination"]),
        (("one.>",), RePublish("one.>", "x y.>"), ["invalid-destination-subject"]),
        # Loop prevention: a placeholder can produce a stream subject.
        (("one.*", "uno.b"), RePublish("one.*", "uno.$1"), ["placeholder-output-overlaps-stream"]),
        (("one.b", "uno.x"), RePublish("one.*", "uno.$1"), []),
        (
            ("one.*", "uno.b.c"),
            RePublish("one.*", "uno.{{split(1,-)}}"),
            ["placeholder-output-overlaps-stream"],
        ),
    ],
)
def test_validation_rules(subjects: tuple[str, ...], option: RePublish, expected: list[str]) -> None:
    assert kinds(subjects, option) == expected


@pytest.mark.parametrize(
    ("release", "option", "expected"),
    [
        # Before 2.10 the source must share a subject with the stream (observed).
        ("2.9.25", RePublish("two.>", "uno.>"), ["source-outside-stream"]),
        ("2.10.27", RePublish("two.>", "uno.>"), []),
        # The release's transform engine: wildcard usage before 2.10, left/right from 2.10.16, random 2.12.
        ("2.9.25", RePublish("one.*.*", "x.$1"), ["invalid-transform"]),
        ("2.10.27", RePublish("one.*.*", "x.$1"), []),
        ("2.10.27", RePublish("one.*.*", "x.{{left(1,2)}}.$2"), []),
        ("2.10.15", RePublish("one.*.*", "x.{{left(1,2)}}.$2"), ["invalid-transform"]),
        ("2.10.27", RePublish("one.*.*", "x.{{random(3)}}.$1.$2"), ["invalid-transform"]),
        ("2.12.15", RePublish("one.*.*", "x.{{random(3)}}.$1.$2"), []),
    ],
)
def test_validation_per_release(release: str, option: RePublish, expected: list[str]) -> None:
    assert kinds(("one.>",) if "two" in option.source else ("one.*.*",), option, release) == expected


def test_release_table() -> None:
    r28, r29, r210 = rules_for("2.8.4"), rules_for("2.9.25"), rules_for("2.10.0")
    assert (r28.headers_only, r28.subject_header, r28.time_stamp_header) == (False, False, False)
    assert (r29.headers_only, r29.subject_header, r29.msg_size_header, r29.time_stamp_header) == (
        True,
        True,
        True,
        False,
    )
    assert r210.time_stamp_header
    assert r29.source_must_overlap
    assert not r210.source_must_overlap
    assert not rules_for("2.2.6").supported
    assert rules_for("2.8").supported


@pytest.mark.parametrize(
    ("first", "second", "collide"),
    [
        ("one.>", "one.a.b", True),
        ("one.*", "one.a.b", False),
        ("*.>", "one.a", True),
        ("uno.>", "one.>", False),
        ("a.b", "a.b", True),
        ("a.*", "*.b", True),
        ("a", "a.>", False),
        ("$1.x", "*.x", True),
        ("$1.x", "a.x", False),
        ("s..>", "s.*.x", False),
        ("s..>", "s.>", False),
        ("s..>", "s.y", False),
        ("s.>..>", "s.>", True),
        ("s..x", "s.>", True),
        ("s..x", "s..x", True),
    ],
)
def test_subjects_collide(first: str, second: str, collide: bool) -> None:
    assert subjects_collide(first, second) is collide
    assert subjects_collide(second, first) is collide


@pytest.mark.parametrize(
    ("subjects", "overlaps"),
    [
        (("s.a.*", "s.*.b"), 1),
        (("s.a.*", "s.*.b.*"), 0),
        (("s.*", "s.*.>"), 0),
        (("s.*", "s.a", "s.>"), 3),
    ],
)
def test_a_stream_s_own_subjects_may_not_overlap(subjects: tuple[str, ...], overlaps: int) -> None:
    found = stream_violations(subjects)
    assert [error.kind for error in found] == ["stream-subjects-overlap"] * overlaps


@pytest.mark.parametrize("subject", ["s.>.x", "s.>.*", "s.*.>.>", "s..a", "s. .a"])
def test_a_stream_subject_that_is_no_subject_is_refused_first(subject: str) -> None:
    """Observed on 2.8.4 to 2.15.3: "invalid subject"."""
    assert [error.kind for error in stream_violations((subject,))] == ["invalid-stream-subject"]
    assert reportable_by(["invalid-stream-subject"]) == {"invalid-stream-subject"}
    assert stream_violations(("s.>a.x", "s.*b")) == ()  # a wildcard character inside a token is literal


def test_reportable_kinds_name_what_servers_say() -> None:
    assert reportable_by(["empty-destination"]) == {"invalid-transform"}
    assert "destination-overlaps-stream" in reportable_by(["destination-without-literal"])


def test_compile_raises_the_first_broken_rule_with_its_kind() -> None:
    with pytest.raises(RePublishError) as raised:
        compile_republish(("one.>",), RePublish("one.>", "one.>"), NEWEST)
    assert raised.value.kind == "destination-overlaps-stream"


# "RePublish Headers"
def test_last_sequence_follows_the_subject_and_reads_deleted_as_zero() -> None:
    model = StreamModel("S", ("s.*",), RePublish("s.*", "r.$1"), NEWEST)
    outcomes = [model.publish(subject) for subject in ("s.a", "s.b", "s.a")]
    assert [o.republished.last_sequence for o in outcomes if o.republished] == [0, 0, 1]
    assert model.delete(3)
    fourth = model.publish("s.a").republished
    assert fourth is not None
    # "the last message ingested to the same original subject (or 0 if none or deleted)"
    assert fourth.last_sequence == 0
    assert fourth.last_sequence_remaining == 1
    assert model.purge("s.a") == 2
    fifth = model.publish("s.a").republished
    assert fifth is not None
    assert (fifth.last_sequence, fifth.last_sequence_remaining) == (0, 0)


def test_headers_only_sends_the_body_size_and_no_body() -> None:
    model = StreamModel("S", ("s.>",), RePublish("", "r.>", headers_only=True), NEWEST)
    message = model.publish("s.x", b"12345", (("X-App", "1"),)).republished
    assert message is not None
    assert message.payload == b""
    assert message.header_lists()[HEADER_MSG_SIZE] == ["5"]
    # "Application-added headers in the original published message will be preserved"
    assert message.headers[0] == ("X-App", "1")


def test_releases_before_2_9_ignore_headers_only_and_send_no_subject() -> None:
    model = StreamModel("S", ("s.>",), RePublish("s.>", "r.>", headers_only=True), rules_for("2.8.4"))
    message = model.publish("s.x", b"body").republished
    assert message is not None
    assert message.payload == b"body"
    assert [name for name, _ in message.headers] == [HEADER_STREAM, HEADER_SEQUENCE, HEADER_LAST_SEQUENCE]


def test_duplicates_are_acknowledged_with_the_first_sequence_and_not_republished() -> None:
    model = StreamModel("S", ("s.>",), RePublish("", "r.>"), NEWEST)
    model.publish("s.x", b"", (("Nats-Msg-Id", "m1"),))
    model.purge()
    again = model.publish("s.y", b"", (("Nats-Msg-Id", "m1"),))
    assert (again.sequence, again.duplicate, again.republished) == (1, True, None)
    assert len(model.republished) == 1


def test_per_subject_limit_keeps_the_newest() -> None:
    model = StreamModel("S", ("s.*",), RePublish("s.*", "r.$1"), NEWEST, max_msgs_per_subject=1)
    for _ in range(3):
        model.publish("s.a")
    assert sorted(model.stored) == [3]
    assert [m.last_sequence for m in model.republished] == [0, 1, 2]


def test_an_edit_applies_to_later_messages() -> None:
    model = StreamModel("S", ("s.>",), RePublish("", "r.>"), NEWEST)
    model.publish("s.a")
    model.reconfigure(RePublish("", "q.>", headers_only=True))
    model.publish("s.a", b"xy")
    assert [m.subject for m in model.republished] == ["r.s.a", "q.s.a"]
    with pytest.raises(RePublishError):
        model.reconfigure(RePublish("", "s.>"))


# "Loop Prevention", Caution
def test_two_streams_pass_a_message_back_and_forth_with_growing_headers() -> None:
    a = StreamModel("A", ("a.>",), RePublish("a.>", "b.>"), NEWEST)
    b = StreamModel("B", ("b.>",), RePublish("b.>", "a.>"), NEWEST)
    chain = StreamSet((a, b)).publish("a.x", b"ping", hops=5)
    assert [m.subject for m in chain] == ["b.x", "a.x", "b.x", "a.x", "b.x"]
    assert [m.stream for m in chain] == ["A", "B", "A", "B", "A"]
    assert [len(m.header_lists()[HEADER_STREAM]) for m in chain] == [1, 2, 3, 4, 5]
    assert chain[2].header_lists()[HEADER_LAST_SEQUENCE] == ["0", "0", "1"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-21T15:15:36.84217623Z", 1795274136842176230),
        ("1970-01-01T00:00:01Z", 1_000_000_000),
        ("2026-11-21T15:15:36+01:00", None),
        ("2026-13-01T00:00:00Z", None),
        ("yesterday", None),
    ],
)
def test_time_stamps_are_rfc3339_utc(text: str, expected: int | None) -> None:
    assert parse_time_stamp(text) == expected


def test_an_empty_destination_does_not_hide_a_source_outside_the_stream() -> None:
    """Both rules apply and the ADR does not order them: a 2.9 server may report either (found by the
    republish family: 2.9.25 reports the source)."""
    option = RePublish("elsewhere.*", "", headers_only=True)
    assert kinds(("s.a", "s.b.*"), option, "2.9.25") == ["empty-destination", "source-outside-stream"]
    assert kinds(("s.a", "s.b.*"), option, "2.10.0") == ["empty-destination"]
