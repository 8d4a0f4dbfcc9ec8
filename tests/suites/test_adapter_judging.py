"""Judging adapters fairly (issue 16, docs/adapter-protocol.md "Judging"): a rejection agrees with a
rejection whatever its error kind unless --strict-errors, the kinds an adapter's hello declares are
honoured, what its hello leaves out is recorded as not supported (never a divergence), it is judged in
the mode its hello declares, and an adapter written without the reference shows no divergence."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.fixtures.clients.adapter import TEMPLATES, AdapterError, AdapterProcess, encoded
from nats_conformance.records.counts import run_tally
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import NOT_SUPPORTED, REFUSED, Case
from nats_conformance.reference.adapter import handle_request
from nats_conformance.reference.profiles import NEWEST, for_version
from nats_conformance.reference.protocol import (
    ContainsQuestion,
    CoverageQuestion,
    Hello,
    Mapped,
    Matched,
    MatchQuestion,
    PartitionQuestion,
    Question,
    Refusal,
    TransformQuestion,
    ValidMappingQuestion,
    ValidSubjectQuestion,
    WeightedEntry,
    WeightedQuestion,
    answer_of,
)
from nats_conformance.reports.build import build_report
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.drawing import QuestionFamily, draw_families, questions_of
from nats_conformance.suites.engine.family import cases_of, check_many
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import LIBRARY
from nats_conformance.suites.families.library import (
    BACKEND,
    AdapterSession,
    _shown,
    difference,
    judge,
    reference_answer,
)

ROOT = Path(__file__).resolve().parents[2]
PYTHON = shlex.quote(sys.executable)
INDEPENDENT = f"adapter:{PYTHON} {ROOT / 'examples/adapters/independent.py'}"
INDEPENDENT_NAME = "example-independent-adapter"

ARGUMENTS = Refusal("wrong-argument-count")
TRANSFORM = TransformQuestion("a.*", "b.$1", "a.b")


ANY_TEXT = st.text() | st.sampled_from(["\udcc3", "é", "日本", '"', "\\", "\n", "null", "a: null, b"])
MAYBE_TEXT = st.none() | ANY_TEXT
QUESTIONS = st.one_of(
    st.builds(Hello),
    st.builds(CoverageQuestion),
    st.builds(TransformQuestion, ANY_TEXT, ANY_TEXT, ANY_TEXT, MAYBE_TEXT, st.booleans()),
    st.builds(MatchQuestion, ANY_TEXT, ANY_TEXT),
    st.builds(ValidSubjectQuestion, ANY_TEXT, st.booleans()),
    st.builds(PartitionQuestion, st.lists(ANY_TEXT, max_size=3), st.integers(-3, 20)),
    st.builds(
        WeightedQuestion,
        ANY_TEXT,
        st.lists(st.builds(WeightedEntry, ANY_TEXT, st.integers(0, 100) | ANY_TEXT, MAYBE_TEXT), max_size=2),
        ANY_TEXT,
        st.integers(0, 99),
        MAYBE_TEXT,
        MAYBE_TEXT,
    ),
    st.builds(ContainsQuestion, ANY_TEXT, ANY_TEXT),
    st.builds(
        ValidMappingQuestion,
        ANY_TEXT,
        st.lists(st.builds(WeightedEntry, ANY_TEXT, st.integers(0, 100) | ANY_TEXT, MAYBE_TEXT), max_size=2),
        MAYBE_TEXT,
    ),
)


def _families(drawn: list[tuple[Question, list[str]]]) -> list[Question]:
    """Each question asked of several subjects or token lists (when it has such a field), as a family's
    questions are."""
    asked: list[Question] = []
    for question, texts in drawn:
        template = TEMPLATES[type(question)]
        if template is None or template[0] == "destinations":
            asked.append(question)
            continue
        name = template[0]
        asked.extend(replace(question, **{name: [text] if name == "tokens" else text}) for text in texts)
    return asked


@given(
    st.lists(st.tuples(QUESTIONS, st.lists(ANY_TEXT, min_size=1, max_size=3)), max_size=6).map(_families),
    st.integers(0, 9),
)
def test_request_lines_are_what_json_dumps_writes(questions: list[Question], first_id: int) -> None:
    """Templates per family, and any text (non-ASCII, lone surrogates) escaped as json.dumps does."""
    written = "".join(json.dumps({**q.wire(), "id": first_id + i}) + "\n" for i, q in enumerate(questions))
    assert encoded(questions, first_id) == written.encode()


def test_the_reference_answers_drawn_questions_as_its_protocol_handler_does() -> None:
    """`reference_answer` skips the request checks, never the model: the same answers, the same case
    columns (`_shown`), for every kind of question drawn, and a partition count below 1."""
    drawn: list[Question] = [PartitionQuestion(["a"], 0)]

    def ask(family: QuestionFamily) -> float:
        drawn.extend(questions_of(family))
        return 0.0

    draw_families(NEWEST, 2000, 7, ask)
    assert {question.op for question in drawn} == {
        "transform",
        "match",
        "valid_subject",
        "partition",
        "contains",
        "valid_mapping",
    }
    for question in drawn:
        fields = handle_request(question.wire())
        del fields["id"]
        answer = reference_answer(question)
        assert answer == answer_of(question, fields)
        shown = json.dumps({k: v for k, v in fields.items() if k != "detail"}, ensure_ascii=False)
        assert _shown(answer) == (f"error {fields['error']}" if "error" in fields else shown)


def test_a_rejection_agrees_with_a_rejection_of_another_kind_unless_strict() -> None:
    other = Refusal("invalid-argument")
    assert difference(ARGUMENTS, other) == ""
    strict = difference(ARGUMENTS, other, strict_errors=True)
    assert strict == "reference-reject-wrong-argument-count-server-reject-invalid-argument"


def test_the_declared_error_kinds_are_honoured_under_strict_errors() -> None:
    own = Refusal("not-enough-args")
    kinds = {"not-enough-args": "wrong-argument-count"}
    assert difference(ARGUMENTS, own, strict_errors=True, error_kinds=kinds) == ""
    assert difference(ARGUMENTS, own, strict_errors=True) == (
        "reference-reject-wrong-argument-count-server-reject-not-enough-args"
    )


def test_accept_against_reject_and_the_mapped_subject_still_diverge() -> None:
    accepted = Mapped("a.b")
    assert difference(accepted, Refusal("x")) == "reference-accept-server-reject-x"
    assert difference(ARGUMENTS, accepted) == "reference-reject-wrong-argument-count-server-accept"
    assert difference(accepted, Mapped("b.a")) == "value"
    assert difference(accepted, Refusal("internal-error")) == "server-crash"


def test_a_difference_has_the_name_a_server_family_gives_it() -> None:
    """The same error, one class wherever the transform ran: a mapping either side refuses is a
    validation case named as the validation family names it, a wrong match as a subscription shows it."""
    rejected = judge(TRANSFORM, Mapped("a.b"), Refusal("unknown-function"))
    assert rejected.case_class == "validation:$n:reference-accept-server-reject-unknown-function"
    accepted = judge(replace(TRANSFORM, source="a"), ARGUMENTS, Mapped("a"))
    literal = "validation:$n:reference-reject-wrong-argument-count-server-accept-literal-source"
    assert accepted.case_class == literal
    crashed = judge(TRANSFORM, Mapped("a.b"), Refusal("internal-error"))
    assert crashed.case_class == "mapping:$n:server-crash"
    match = MatchQuestion("a.>", "a")
    assert judge(match, Matched(False), Matched(True)).case_class == "matching:full:unexpected-delivery"
    assert judge(match, Matched(True), Matched(False)).case_class == "matching:full:not-delivered"


def adapter_script(tmp_path: Path, hello: dict[str, Any], *, engine: bool = False, error: str = "") -> str:
    """An adapter command: the reference, its hello extended by `hello`, every transform asked of the
    bare engine when `engine`, every error kind renamed `error` when given; it logs each request's op
    to `asked.log` (`transform engine` for a transform asked with `engine_only`)."""
    script = tmp_path / f"adapter{len(list(tmp_path.glob('adapter*.py')))}.py"
    script.write_text(
        "import sys\n"
        "from nats_conformance.reference.adapter import handle_request, serve\n"
        f"HELLO = {hello!r}\n"
        f"LOG = {str(tmp_path / 'asked.log')!r}\n"
        "def handle(request):\n"
        "    with open(LOG, 'a') as log:\n"
        "        log.write(str(request.get('op')) + ' engine' * bool(request.get('engine_only')) + '\\n')\n"
        f"    if {engine!r} and request.get('op') == 'transform':\n"
        "        request = {**request, 'engine_only': True}\n"
        "    answer = handle_request(request)\n"
        f"    if {error!r} and 'error' in answer:\n"
        f"        answer['error'] = {error!r}\n"
        "    return {**answer, **HELLO} if request.get('op') == 'hello' else answer\n"
        "serve(sys.stdin.buffer, sys.stdout.buffer, handle)\n"
    )
    return f"{PYTHON} {script}"


def ask(adapter: AdapterProcess, questions: list[Question], *, strict: bool = False) -> list[Case]:
    """The cases of `questions` asked in one round trip, each a unit of its own."""
    context = RunContext(
        "test", adapter.implementation, "2.14.5", BACKEND, Expectations(), iter(range(99)).__next__
    )
    session = AdapterSession(adapter, for_version("2.14.5"), strict_errors=strict)
    units = [QuestionFamily.alone(question) for question in questions]
    return [case for judged in check_many(LIBRARY, session, context, units) for case in cases_of(judged)]


def transform(destination: str, subject: str = "foo.ab") -> TransformQuestion:
    return TransformQuestion("foo.*", destination, subject)


def test_what_the_hello_leaves_out_is_not_supported_and_not_asked(tmp_path: Path) -> None:
    hello = {"ops": ["hello", "transform"], "functions": ["wildcard", "split"]}
    with AdapterProcess(adapter_script(tmp_path, hello)) as adapter:
        cases = ask(
            adapter,
            [
                PartitionQuestion(["a"], 3),
                transform("x.{{splitFromLeft(1,1)}}"),
                transform("x.{{Split(1,-)}}.$1"),
                transform("x.{{nosuch(1)}}"),
            ],
        )
    outcomes = [(case.verdict, case.difference) for case in cases]
    not_supported = ("unknown", NOT_SUPPORTED)
    assert outcomes == [not_supported, not_supported, ("agree", ""), ("agree", "")]
    assert (tmp_path / "asked.log").read_text().split() == ["hello", "transform", "transform"]


def test_an_answer_without_its_result_is_unknown_and_says_why(tmp_path: Path) -> None:
    """An answer the client cannot read as its question's answer is out of protocol: no answer, never
    a divergence; the adapter is started again for the next question."""
    script = tmp_path / "renamed.py"
    script.write_text(
        "import sys\n"
        "from nats_conformance.reference.adapter import handle_request, serve\n"
        "def handle(request):\n"
        "    answer = handle_request(request)\n"
        "    if request.get('op') == 'transform':\n"
        "        answer['mapped'] = answer.pop('subject')\n"
        "    return answer\n"
        "serve(sys.stdin.buffer, sys.stdout.buffer, handle)\n"
    )
    with AdapterProcess(f"{PYTHON} {script}") as adapter:
        cases = ask(adapter, [MatchQuestion("a.*", "a.b"), transform("x.$1")])
        (unknown,) = ask(adapter, [transform("x.$1")])
        (agreeing,) = ask(adapter, [MatchQuestion("a.*", "a")])
    assert [(case.verdict, case.difference) for case in cases] == [("agree", ""), ("unknown", "unknown")]
    assert cases[1].detail.startswith(
        "adapter-failed: adapter answered out of protocol (answer without field 'subject')"
    )
    assert "at request 2 of 2 (transform)" in cases[1].detail
    assert {case.command for case in cases} == {f"{PYTHON} {script}"}
    assert cases[0].detail == ""
    assert (unknown.verdict, agreeing.verdict) == ("unknown", "agree")


@pytest.mark.parametrize(
    ("hello", "message"),
    [
        ({"mode": "bare"}, "'mode' must be one of account, engine (got 'bare')"),
        ({"functions": ["wildcard", "shuffle"]}, "'functions' names no mapping function: shuffle"),
        (
            {"error_kinds": {"bad": "wrong"}},
            "'error_kinds' maps to no mapping error kind of the protocol: bad: 'wrong'",
        ),
    ],
)
def test_a_hello_that_declares_nonsense_is_one_line(
    tmp_path: Path, hello: dict[str, Any], message: str
) -> None:
    command = adapter_script(tmp_path, hello)
    with pytest.raises(AdapterError) as raised:
        AdapterProcess(command)
    assert str(raised.value) == f"adapter {command!r} hello: {message}"


@pytest.mark.parametrize(("mode", "status"), [("engine", 0), ("account", 1)])
def test_an_adapter_is_judged_in_the_mode_its_hello_declares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str, status: int
) -> None:
    # A token with a space: the account-mapping validator refuses it, the bare engine copies it
    # (docs.nats.io, "Subject Mapping and Partitioning"; `nats server mapping` runs the engine).
    target = f"adapter:{adapter_script(tmp_path, {'mode': mode}, engine=True)}"
    question = ["--source", "foo.*", "--destination", "x.a b.$1", "--subject", "foo.ab"]
    assert main(["replay", "--target", target, *question]) == status
    assert ("diverge" in capsys.readouterr().out) == (mode == "account")


@pytest.mark.parametrize("mode", ["engine", "account"])
def test_a_campaign_asks_in_the_mode_the_hello_declares(tmp_path: Path, mode: str) -> None:
    target = f"adapter:{adapter_script(tmp_path, {'mode': mode})}"
    argv = ["campaign", "--target", target, "--cases", "200", "--out", str(tmp_path / "runs")]
    assert main(argv) == 0
    asked = (tmp_path / "asked.log").read_text().split("\n")
    transforms = {line for line in asked if line.startswith("transform")}
    assert transforms == {"transform engine" if mode == "engine" else "transform"}


def test_a_replay_compares_error_kinds_with_strict_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    undeclared = f"adapter:{adapter_script(tmp_path, {}, error='bad-index')}"
    declared = {"error_kinds": {"bad-index": "wildcard-index-out-of-range"}}
    renamed = f"adapter:{adapter_script(tmp_path, declared, error='bad-index')}"
    question = ["--source", "foo.*", "--destination", "x.$2", "--subject", "foo.ab"]
    assert main(["replay", "--target", undeclared, *question]) == 0
    assert main(["replay", "--target", renamed, "--strict-errors", *question]) == 0
    capsys.readouterr()
    assert main(["replay", "--target", undeclared, "--strict-errors", *question]) == 1
    assert "reference-reject-wildcard-index-out-of-range-server-reject-bad-index" in capsys.readouterr().out


@pytest.fixture(scope="module")
def independent_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, str]:
    out = tmp_path_factory.mktemp("independent")
    (out / "none.toml").write_text("")
    # --strict-errors: its error kinds, renamed as its hello says, must agree too (a strict run can
    # only add divergences to a default one).
    argv = ["campaign", "--target", INDEPENDENT, "--cases", "5000", "--strict-errors"]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        status = main([*argv, "--expectations", str(out / "none.toml"), "--out", str(out / "runs")])
    (run_dir,) = (out / "runs").iterdir()
    return status, run_dir, printed.getvalue()


def test_an_adapter_written_without_the_reference_shows_no_divergence(
    independent_run: tuple[int, Path, str],
) -> None:
    status, run_dir, printed = independent_run
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert status == 0
    assert manifest["settings"]["plan"]["strict_errors"] is True
    assert manifest["verdicts"]["diverge"] == manifest["verdicts"]["expected"] == 0
    assert manifest["verdicts"]["agree"] >= 4000
    # Rejections, their kinds compared: 842-1,396 with seeds 0-3, since the strategies draw mostly valid
    # destinations as they describe (fb0b352 drew 2,010 at seed 0, and 990 valid mappings against 1,941).
    assert manifest["features"]["validation"]["agree"] >= 500
    tally = run_tally(run_dir)
    assert tally["unknown"] == tally[REFUSED] == 0
    assert tally[NOT_SUPPORTED] == manifest["verdicts"]["unknown"] > 0  # the partitions it leaves out
    assert f"{tally[NOT_SUPPORTED]} of the unknown cases are questions an adapter does not support" in printed


def test_the_report_shows_what_the_adapter_does_not_support(
    independent_run: tuple[int, Path, str], tmp_path: Path
) -> None:
    _, run_dir, _ = independent_run
    build_report([run_dir], tmp_path, engine="duckdb")
    summary = json.loads((tmp_path / "summary.json").read_text())
    (matrix,) = (item for item in summary["matrix"] if item["implementation"] == INDEPENDENT_NAME)
    assert matrix["releases"] == [f"{INDEPENDENT_NAME} {NEWEST.name}"]
    states = {
        (row["kind"], row["name"]): row["cells"][matrix["releases"][0]]["state"] for row in matrix["rows"]
    }
    assert states[("feature", "partition")] == states[("function", "partition")] == "not supported"
    assert states[("feature", "mapping")] == states[("feature", "validation")] == "agrees"
    assert all(states[("function", name)] == "agrees" for name in ("split", "sliceFromRight", "left"))
