"""The typed adapter messages (reference.protocol): questions read back from what they write, answers
read back from their fields, a hello read as a greeting, and the reference's order of refusals kept."""

from __future__ import annotations

import pytest

from nats_conformance.reference import protocol
from nats_conformance.reference.adapter import OPERATIONS, handle_request, reply

QUESTIONS_ASKED: list[protocol.Question] = [
    protocol.Hello(),
    protocol.CoverageQuestion(),
    protocol.TransformQuestion("foo.*", "bar.$1", "foo.x"),
    protocol.TransformQuestion("foo.*", "bar.$1", "foo.x", "2.9.25", engine_only=True),
    protocol.MatchQuestion("a.>", "a.b"),
    protocol.ValidSubjectQuestion("a.*", literal=True),
    protocol.PartitionQuestion(["a", "b"], 3),
    protocol.WeightedQuestion(
        "s",
        [protocol.WeightedEntry("s", "50%"), protocol.WeightedEntry("t", 20, "c")],
        "s",
        75,
        "c",
        "2.14.5",
    ),
]


@pytest.mark.parametrize("question", QUESTIONS_ASKED, ids=lambda question: question.op)
def test_a_question_reads_back_from_its_request_object(question: protocol.Question) -> None:
    request = question.wire()
    assert request["op"] == question.op
    assert protocol.question_of(request) == question


def test_optional_fields_are_written_only_when_set() -> None:
    assert protocol.TransformQuestion("a", "b", "a").wire() == {
        "op": "transform",
        "source": "a",
        "destination": "b",
        "subject": "a",
    }
    assert list(protocol.TransformQuestion("a", "b", "a", "2.10", True).wire())[-2:] == [
        "server_version",
        "engine_only",
    ]
    assert protocol.WeightedEntry("x", 5).wire() == {"destination": "x", "weight": 5}


def test_every_operation_the_reference_serves_has_a_question() -> None:
    assert set(OPERATIONS) <= set(protocol.QUESTIONS)
    assert set(protocol.QUESTIONS) - set(OPERATIONS) == {"coverage"}


@pytest.mark.parametrize(
    ("request_object", "detail"),
    [
        ({"op": "nope"}, "unknown op 'nope'; known: contains, coverage, hello, match, partition, "),
        ({"op": "match", "pattern": "a"}, "missing field 'subject'"),
        ({"op": "match", "pattern": 5, "subject": "a"}, "field 'pattern' must be a str (got int)"),
        ({"op": "valid_subject", "subject": "a", "literal": 1}, "field 'literal' must be a bool (got int)"),
        ({"op": "partition", "tokens": ["a", 1], "n": 3}, "field 'tokens' must be a list of strings"),
        ({"op": "partition", "tokens": [], "n": 0}, "field 'n' must be >= 1 (got 0)"),
        ({"op": "partition", "tokens": [], "n": True}, "field 'n' must be a int (got bool)"),
    ],
)
def test_a_malformed_request_is_a_bad_request_with_the_protocols_text(
    request_object: dict[str, object], detail: str
) -> None:
    with pytest.raises(protocol.BadRequestError) as raised:
        protocol.question_of(request_object)
    assert str(raised.value).startswith(detail)


def test_a_refused_mapping_is_answered_before_its_subject_is_looked_at() -> None:
    """The order of the reference's answers from before the typed messages: a mapping's refusal
    comes before a missing subject (transform) or draw (weighted), and a weight before the next entry."""
    transform = {"id": 1, "op": "transform", "source": "foo.*", "destination": "bar.*"}
    assert handle_request(transform)["error"] == "invalid-destination"
    assert handle_request({**transform, "destination": "bar.$1"})["detail"] == "missing field 'subject'"
    weighted = {"id": 2, "op": "weighted", "source": "s", "subject": "s"}
    over = [{"destination": "x", "weight": 60}, {"destination": "y", "weight": 60}]
    assert handle_request({**weighted, "destinations": over})["error"] == "total-weight-exceeded"
    assert handle_request({**weighted, "destinations": [{"destination": "x", "weight": 101}, 1]})[
        "error"
    ] == ("invalid-weight")
    assert handle_request({**weighted, "destinations": over[:1], "draw": 100})["detail"] == (
        "field 'draw' must be 0..99 (got 100)"
    )
    # without the reference's check, the question is read whole first
    with pytest.raises(protocol.BadRequestError, match="missing field 'subject'"):
        protocol.question_of(transform)


def test_answers_are_their_fields_on_the_wire() -> None:
    assert protocol.answer_fields(protocol.Mapped("bar.x")) == {"subject": "bar.x"}
    assert protocol.answer_fields(protocol.Mapped(None)) == {"subject": None}
    assert protocol.answer_fields(protocol.Matched(True)) == {"match": True}
    assert protocol.answer_fields(protocol.Validity(False)) == {"valid": False}
    assert protocol.answer_fields(protocol.Partitioned(2)) == {"partition": 2}
    assert protocol.answer_fields(protocol.Refusal("invalid-source", "why")) == {
        "error": "invalid-source",
        "detail": "why",
    }
    assert protocol.answer_fields(protocol.Covered(3, 1, 9)) == {"blocks": 3, "new": 1, "reached": 9}


@pytest.mark.parametrize("question", QUESTIONS_ASKED, ids=lambda question: question.op)
def test_an_answer_reads_back_from_its_fields(question: protocol.Question) -> None:
    """What the reference answers each question, and a refusal of it, read back as the same answers
    (the `id` and fields the client does not know aside)."""
    answer = protocol.Covered(3, 1, 9) if isinstance(question, protocol.CoverageQuestion) else reply(question)
    fields = {"id": 4, **protocol.answer_fields(answer), "later": True}
    assert protocol.answer_of(question, fields) == answer
    refusal = protocol.Refusal("invalid-destination", "why")
    assert protocol.answer_of(question, protocol.answer_fields(refusal)) == refusal


@pytest.mark.parametrize(
    ("question", "fields", "message"),
    [
        (protocol.TransformQuestion("a", "b", "a"), {"subjects": "b"}, "answer without field 'subject'"),
        (protocol.TransformQuestion("a", "b", "a"), {"subject": 5}, "field 'subject' must be a str or null"),
        (protocol.MatchQuestion("a", "a"), {"match": 1}, "field 'match' must be a bool (got int)"),
        (protocol.PartitionQuestion(["a"], 2), {"partition": True}, "field 'partition' must be a int"),
        (protocol.CoverageQuestion(), {"blocks": 1, "new": 0}, "answer without field 'reached'"),
        (protocol.ValidSubjectQuestion("a"), {"error": None}, "field 'error' must be a str (got NoneType)"),
    ],
)
def test_an_answer_without_its_result_is_one_error(
    question: protocol.Question, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(protocol.AnswerError) as raised:
        protocol.answer_of(question, fields)
    assert str(raised.value).startswith(message)


def test_the_reference_answers_typed_questions() -> None:
    assert reply(protocol.TransformQuestion("foo.*", "bar.$1", "foo.x")) == protocol.Mapped("bar.x")
    assert reply(protocol.PartitionQuestion(["customerid2"], 3)) == protocol.Partitioned(2)
    assert reply(protocol.MatchQuestion("a.*", "a.b.c")) == protocol.Matched(False)
    assert reply(protocol.ValidSubjectQuestion("a.*", literal=True)) == protocol.Validity(False)
    greeting = reply(protocol.Hello())
    assert isinstance(greeting, protocol.Greeting)
    assert protocol.answer_fields(greeting) == {
        key: value for key, value in handle_request({"op": "hello"}).items() if key != "id"
    }


def test_a_hello_reads_as_a_greeting_with_the_protocols_defaults() -> None:
    greeting = protocol.Greeting.parse({"protocol": 1, "server_version": "2.14.5"})
    assert greeting == protocol.Greeting("", 1, "2.14.5", frozenset(), None, "account", {})
    declared = protocol.Greeting.parse(
        {
            "implementation": "lib",
            "ops": ["hello", "transform"],
            "functions": ["Wildcard", "splitFromLeft"],
            "mode": "engine",
            "error_kinds": {"not-enough-args": "wrong-argument-count"},
        }
    )
    assert declared.implementation == "lib"
    assert declared.ops == {"hello", "transform"}
    assert declared.functions == {"wildcard", "splitFromLeft"}
    assert declared.mode == "engine"
    assert declared.error_kinds == {"not-enough-args": "wrong-argument-count"}
    assert protocol.Greeting.parse(protocol.answer_fields(declared)) == declared


@pytest.mark.parametrize(
    ("hello", "message"),
    [
        ({"mode": "both"}, "'mode' must be one of account, engine (got 'both')"),
        ({"functions": "split"}, "'functions' must be a list of mapping function names"),
        ({"functions": ["split", "nope"]}, "'functions' names no mapping function: nope"),
        ({"error_kinds": []}, "'error_kinds' must map the adapter's error kinds to the protocol's"),
        (
            {"error_kinds": {"x": "bad-request"}},
            "'error_kinds' maps to no mapping error kind of the protocol: x:",
        ),
    ],
)
def test_a_hello_the_client_cannot_read_is_one_error(hello: dict[str, object], message: str) -> None:
    with pytest.raises(protocol.GreetingError) as raised:
        protocol.Greeting.parse(hello)
    assert str(raised.value).startswith(message)
