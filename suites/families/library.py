"""The library family: transform libraries as targets, asked generated adapter-protocol questions whose
answers are compared with the reference's (docs/adapter-protocol.md).

It runs through the same engine as the server families (`suites.engine.run.run_family`): its target is
an `AdapterSession` that asks questions where a server session publishes. A unit is a family of
questions (`suites.drawing`): a drawn structure (a mapping, a pattern, a partition count, a subject rule)
and the values its questions differ in; units are asked side by side in one round trip. Questions cover
the documented features a library can answer without a network: mapping (transform, including
validation per release), partition, wildcard matching and subject validity. `{{random(n)}}` is left
out: one draw cannot be compared with another (the server suites test its distribution).

The reference answers from the same model its protocol handler serves (`reference.adapter`), so a
library and the reference are asked the very same question (`reference.protocol`'s types). An answer
is judged on what a mapping does: accept or reject, and the mapped subject. The error kinds of two
rejections are compared only with `strict_errors`, after the adapter's own kinds are renamed as its
hello declares; transform questions are asked in the mode the hello declares (account mappings or the
bare engine), and a question using an operation or function the hello leaves out is not asked but
recorded as not supported (docs/adapter-protocol.md, "Judging").

Every unexpected divergence class is shrunk by the engine (`suites.engine.shrink`) within the questions
of its kind and functions (`LibraryFamily.shrinking`) to a minimal question that still shows it.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring
from typing import Final

from hypothesis import strategies as st

from nats_conformance.fixtures.clients.adapter import AdapterProcess, Sent
from nats_conformance.fixtures.errors import ServerError
from nats_conformance.records.casefile import CaseFile, CaseFileError
from nats_conformance.records.schema import NOT_SUPPORTED, Case, CaseBlock
from nats_conformance.records.unknowns import ADAPTER_FAILED, stated
from nats_conformance.reference.adapter import handle_request, mapping_refusal, transform_reply
from nats_conformance.reference.functions import FUNCTIONS, LEGACY_WILDCARD
from nats_conformance.reference.matching import contains, matches
from nats_conformance.reference.partition import partition
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.protocol import (
    INTERNAL_ERROR,
    PROTOCOL_VERSION,
    VERSION_2_OPS,
    Answer,
    Contained,
    ContainsQuestion,
    CoverageQuestion,
    Covered,
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
    answer_fields,
    answer_of,
)
from nats_conformance.reference.subjects import is_valid_publish_subject, is_valid_subject
from nats_conformance.suites.drawing import (
    FOCUS,
    SPECIAL_TOKENS,
    STRATA,
    QuestionFamily,
    boundary,
    draw_families,
    near_filter,
    questions_of,
    weighted_list,
    wildcard_sources,
    without_random,
)
from nats_conformance.suites.engine.family import Description, Draws, Judged, Schedule
from nats_conformance.suites.engine.verdicts import (
    CRASH,
    NOT_ARRIVED,
    UNEXPECTED,
    RunContext,
    acceptance,
    case_class_of,
    is_literal,
    make_case,
    wrong_subject,
)
from nats_conformance.suites.expected import functions_named
from nats_conformance.suites.families.matching import wildcard_kinds
from nats_conformance.suites.oracle import failed, three_way
from nats_conformance.suites.strategies import (
    destination_templates,
    patterns,
    subjects,
    subjects_matching,
    tokens,
)

BACKEND: Final = "adapter"
SIDE_BY_SIDE: Final = 32
"""Families of questions per round trip to the adapter (25 to 800 questions each)."""


@st.composite
def transform_questions(
    draw: st.DrawFn, profile: ReleaseProfile, names: Sequence[str] = ()
) -> TransformQuestion:
    """A mapping (its functions among `names` when given), a subject its source matches, and the
    release whose rules apply."""
    source = draw(wildcard_sources())
    destination = draw(without_random(destination_templates(source, profile, names)))
    subject = draw(subjects_matching(source))
    return TransformQuestion(source, destination, subject, profile.name)


def partition_questions() -> st.SearchStrategy[PartitionQuestion]:
    """Tokens and a partition count (the `partition` operation)."""
    return st.builds(
        PartitionQuestion, st.lists(tokens(max_size=6), min_size=1, max_size=4), st.integers(1, 16)
    )


@st.composite
def match_questions(draw: st.DrawFn) -> MatchQuestion:
    """A subscription pattern and a subject: one it matches, an unrelated one, or a boundary one
    (the pattern's tokens with `>` dropped or one token more)."""
    pattern = draw(patterns(max_tokens=4))
    kind = draw(st.sampled_from(["match", "other", "shorter", "longer"]))
    if kind == "other":
        return MatchQuestion(pattern, draw(subjects(max_tokens=5)))
    return MatchQuestion(pattern, boundary(draw(subjects_matching(pattern)), kind, draw(tokens(max_size=3))))


def valid_subject_questions() -> st.SearchStrategy[ValidSubjectQuestion]:
    """Subjects with empty tokens, spaces and wildcards mixed in, checked by either rule."""
    token = tokens(max_size=4) | st.sampled_from(SPECIAL_TOKENS)
    return st.builds(
        lambda parts, literal: ValidSubjectQuestion(".".join(parts), literal),
        st.lists(token, min_size=1, max_size=4),
        st.booleans(),
    )


@st.composite
def contains_questions(draw: st.DrawFn) -> ContainsQuestion:
    """A subscription filter and another near it (`suites.drawing.near_filter`)."""
    within = draw(patterns(max_tokens=4))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return ContainsQuestion(near_filter(within, rng, ["a", "b", "0"]), within)


@st.composite
def valid_mapping_questions(draw: st.DrawFn, profile: ReleaseProfile) -> ValidMappingQuestion:
    """A source and a weighted list of destinations (`suites.drawing.weighted_list`)."""
    source = draw(wildcard_sources())
    listed = draw(st.lists(destination_templates(source, profile).filter(_no_random), min_size=1, max_size=3))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return ValidMappingQuestion(source, weighted_list(listed, rng), profile.name)


def _no_random(destination: str) -> bool:
    return "random" not in destination.lower()


def strategy_for(op: str, profile: ReleaseProfile, names: Sequence[str] = ()) -> st.SearchStrategy[Question]:
    """The questions of one operation (what a divergence of that operation is shrunk within)."""
    strategies: dict[str, st.SearchStrategy[Question]] = {
        TransformQuestion.op: transform_questions(profile, names),
        PartitionQuestion.op: partition_questions(),
        MatchQuestion.op: match_questions(),
        ValidSubjectQuestion.op: valid_subject_questions(),
        ContainsQuestion.op: contains_questions(),
        ValidMappingQuestion.op: valid_mapping_questions(profile),
    }
    return strategies[op]


_functions_named = functools.lru_cache(maxsize=4096)(functions_named)
_wildcard_kinds = functools.lru_cache(maxsize=4096)(wildcard_kinds)
"""Per question, of a structure that a family's questions share."""


@dataclass(slots=True)
class Judgement:
    """What a question is about (feature, functions, the case columns) and what differed ('' if nothing)."""

    feature: str
    functions: tuple[str, ...]
    source: str
    destination: str
    subject: str
    expected: str
    observed: str
    difference: str
    partitions: int = 0

    @property
    def case_class(self) -> str:
        return case_class_of(self.feature, self.functions, self.difference)


def _shown(answer: Answer | None) -> str:
    """An answer as the case columns show it: its error kind, or its answer fields as JSON (the common
    answers without the encoder's per-call cost)."""
    if isinstance(answer, Mapped):
        subject = answer.subject
        return '{"subject": null}' if subject is None else f'{{"subject": {encode_basestring(subject)}}}'
    if isinstance(answer, Refusal):
        return f"error {answer.kind}"
    if isinstance(answer, Matched):
        return '{"match": true}' if answer.match else '{"match": false}'
    if isinstance(answer, Validity):
        return '{"valid": true}' if answer.valid else '{"valid": false}'
    if isinstance(answer, Partitioned):
        return f'{{"partition": {answer.partition}}}'
    if isinstance(answer, Contained):
        return '{"contained": true}' if answer.contained else '{"contained": false}'
    return "" if answer is None else json.dumps(answer_fields(answer), ensure_ascii=False)


def difference(
    expected: Answer,
    observed: Answer | None,
    *,
    strict_errors: bool = False,
    error_kinds: Mapping[str, str] | None = None,
) -> str:
    """What differs between the reference's answer and the target's, '' when they agree, named as the
    server families name it (`suites.engine.verdicts`; `server` in a class names the target): an
    `internal-error` answer is `CRASH`, a rejection against an acceptance `acceptance`'s name (the
    target's kind after ``reference-accept-server-reject-``, as a typed refusal of a stream is named), a
    match the target gets wrong what a subscription shows. Two rejections agree whatever their kinds
    unless `strict_errors`; the target's kinds are first renamed by `error_kinds` (its own kind -> the
    protocol's)."""
    if observed is None:
        return "unknown"
    wanted = expected.kind if isinstance(expected, Refusal) else ""
    got = observed.kind if isinstance(observed, Refusal) else ""
    if got == INTERNAL_ERROR:
        return CRASH
    if got and error_kinds:
        got = error_kinds.get(got, got)
    if wanted and got:
        return "" if wanted == got or not strict_errors else f"reference-reject-{wanted}-server-reject-{got}"
    if wanted:
        return acceptance(wanted, None)[2]
    if got:
        return f"{acceptance('', got)[2]}-{got}"
    if observed == expected:
        return ""
    if isinstance(expected, Matched):
        return NOT_ARRIVED if expected.match else UNEXPECTED
    return "value"


def judge(
    question: Question,
    expected: Answer,
    observed: Answer | None,
    *,
    strict_errors: bool = False,
    error_kinds: Mapping[str, str] | None = None,
    supported: bool = True,
) -> Judgement:
    """The case a question makes, with the class of its difference (`NOT_SUPPORTED` when the target
    was not asked it, as its hello leaves it out). A transform's differences are named as the live
    families name them (`wrong_subject`; ``...-accept-literal-source`` for a source without
    wildcards), and a mapping either side refuses is a `validation` case, as on a server, so one
    expectation covers a server and its transform engine."""
    differs = (
        difference(expected, observed, strict_errors=strict_errors, error_kinds=error_kinds)
        if supported
        else NOT_SUPPORTED
    )
    shown = (_shown(expected),) * 2 if observed == expected else (_shown(expected), _shown(observed))
    if isinstance(question, TransformQuestion):
        source, destination = question.source, question.destination
        if differs == "value":
            differs = wrong_subject(source, destination, question.subject)
        elif differs.endswith("-server-accept") and is_literal(source):
            differs += "-literal-source"
        functions = _functions_named(destination)
        refused = isinstance(expected, Refusal) or (
            isinstance(observed, Refusal) and observed.kind != INTERNAL_ERROR
        )
        feature = "validation" if refused else "partition" if "partition" in functions else "mapping"
        return Judgement(feature, functions, source, destination, question.subject, *shown, differs)
    if isinstance(question, PartitionQuestion):
        source = json.dumps(question.tokens, ensure_ascii=False)
        return Judgement("partition", ("partition-op",), source, "", "", *shown, differs, question.n)
    if isinstance(question, MatchQuestion):
        kinds = _wildcard_kinds(question.pattern)
        return Judgement("matching", kinds, question.pattern, "", question.subject, *shown, differs)
    if isinstance(question, ContainsQuestion):
        if differs == "value":
            differs = "missed-containment" if _contained(expected) else "false-containment"
        pair = (question.filter, question.within)
        return Judgement("containment", ("contains-op",), *pair, "", *shown, differs)
    if isinstance(question, ValidMappingQuestion):
        if differs == "value" and isinstance(expected, Validity):
            rejected = f"reference-reject-{expected.reason}-server-accept"
            differs = "reference-accept-server-reject" if expected.valid else rejected
        listed = json.dumps([entry.wire() for entry in question.destinations], ensure_ascii=False)
        return Judgement("weighted", ("valid-mapping-op",), question.source, listed, "", *shown, differs)
    assert isinstance(question, ValidSubjectQuestion), f"{question.op} questions are not judged"
    rule = "publish-rule" if question.literal else "subject-rule"
    if question.lenient:
        rule += "-lenient"
        if differs == "value" and isinstance(observed, Validity) and observed.valid:
            differs = ""  # a lenient check may accept more than the rule, never less
    return Judgement("subjects", (rule,), "", "", question.subject, *shown, differs)


def _contained(answer: Answer) -> bool:
    return isinstance(answer, Contained) and answer.contained


def is_supported(adapter: AdapterProcess, question: Question) -> bool:
    """Whether an adapter's hello lists the question's operation (when it lists any; an operation of
    protocol version 2 only when it declares that version) and, for a transform, every `{{function}}`
    its destination names (when it lists functions)."""
    if adapter.ops and question.op not in adapter.ops:
        return False
    if question.op in VERSION_2_OPS and adapter.hello.protocol < 2:
        return False
    rules = adapter.hello.subject_rules
    if isinstance(question, ValidSubjectQuestion) and rules is not None:
        return question.rule in rules
    if not isinstance(question, TransformQuestion) or adapter.functions is None:
        return True
    named = _functions_named(question.destination)
    return all(name in adapter.functions for name in named if name in FUNCTIONS and name != LEGACY_WILDCARD)


def reference_answer(question: Question) -> Answer:
    """The reference's answer to a question: straight from its model (a transform from its compiled
    mapping), without the protocol's request checks, but through `handle_request` where those checks
    answer (a partition count below 1)."""
    if isinstance(question, TransformQuestion):
        return transform_reply(
            question.source,
            question.destination,
            question.subject,
            question.server_version,
            question.engine_only,
        )
    if isinstance(question, MatchQuestion):
        return Matched(matches(question.pattern, question.subject))
    if isinstance(question, ValidSubjectQuestion):
        subject = question.subject
        return Validity(is_valid_publish_subject(subject) if question.literal else is_valid_subject(subject))
    if isinstance(question, PartitionQuestion) and question.n >= 1:
        return Partitioned(partition(question.tokens, question.n))
    if isinstance(question, ContainsQuestion):
        return Contained(contains(question.filter, question.within))
    if isinstance(question, ValidMappingQuestion):
        refused = mapping_refusal(question)
        return Validity(True) if refused is None else Validity(False, refused.kind)
    return answer_of(question, handle_request(question.wire()))


def asked_as(
    question: Question, adapter: AdapterProcess, version: str = "", engine_only: bool = False
) -> Question:
    """A question as `adapter` is asked it: a transform under `version`'s rules when given (else the
    question's own, if it names one), of the bare engine with `engine_only` or when the adapter's hello
    declares engine mode."""
    if isinstance(question, ValidMappingQuestion):
        release = version or question.server_version
        return ValidMappingQuestion(question.source, question.destinations, release)
    if not isinstance(question, TransformQuestion):
        return question
    engine_only = engine_only or question.engine_only or adapter.mode == "engine"
    release = version or question.server_version or None
    return TransformQuestion(question.source, question.destination, question.subject, release, engine_only)


@dataclass(frozen=True, slots=True)
class Answers:
    """What a unit's questions were asked as (`asked_as`), which the adapter supports, and its answers
    (None: not asked, or not answered) and `against`'s (with `--against`), with how they are judged."""

    questions: Sequence[Question]
    supported: Sequence[bool]
    answers: Sequence[Answer | None]
    against: Sequence[Answer | None] | None
    error_kinds: Mapping[str, str] | None
    strict_errors: bool
    failure: str
    """Why the adapter last failed to answer ('' if it never did)."""
    command: str
    seed: int


@dataclass(slots=True)
class AdapterSession:
    """An adapter as a target of the engine (`suites.engine.family.Target`): a unit's questions are asked
    of it under `profile`'s release, in the mode its hello declares (and of `against` too, under the
    release that engine names). An adapter that fails is started again by `AdapterProcess` at its next
    round trip; the questions it left unanswered are `unknown`."""

    adapter: AdapterProcess
    profile: ReleaseProfile
    strict_errors: bool = False
    against: AdapterProcess | None = None
    """A second target (`--against engine:RELEASE`) asked every question too; each case then records
    which of the reference, the adapter and it agree (`Case.oracle`, `suites.oracle`; an adapter that
    fails with `internal-error` where the engine does too agrees with it)."""
    seed: int = 0
    """The run's seed, recorded with every case."""
    engine_only: bool = False
    """Transform questions ask the bare transform engine, whatever mode the hello declares."""
    restarts: list[str] = field(default_factory=list)

    def recover(self, error: ServerError) -> str:
        """Asking raises no server error: an adapter that fails is started again by its next round trip."""
        self.restarts.append(f"adapter restarted after {error}")
        return stated(ADAPTER_FAILED, self.restarts[-1])

    def is_running(self) -> bool:
        return True

    def ask(self, units: Sequence[QuestionFamily]) -> list[Answers]:
        """Every unit's questions in one round trip (those the adapter supports), to `against` too."""
        asked = [
            questions_of(
                QuestionFamily(
                    asked_as(unit.template, self.adapter, self.profile.name, self.engine_only), unit.values
                )
            )
            for unit in units
        ]
        flat = [question for questions in asked for question in questions]
        supported = [is_supported(self.adapter, question) for question in flat]
        questions = [question for question, ok in zip(flat, supported, strict=True) if ok]
        sent_against = None
        if self.against is not None and questions:
            release = self.against.hello.server_version
            sent_against = self.against.send(
                [
                    TransformQuestion(q.source, q.destination, q.subject, release, q.engine_only)
                    if release and isinstance(q, TransformQuestion)
                    else q
                    for q in questions
                ]
            )
        sent: Sent | None = self.adapter.send(questions) if questions else None
        answered = iter(self.adapter.receive(sent) if sent else [])
        compared = iter(self.against.receive(sent_against) if self.against and sent_against else [])
        answers = [next(answered) if ok else None for ok in supported]
        against = [next(compared) if ok else None for ok in supported] if self.against is not None else None
        failure = self.adapter.failures[-1] if self.adapter.failures else ""
        result, start = [], 0
        for questions_asked in asked:
            end = start + len(questions_asked)
            result.append(
                Answers(
                    questions_asked,
                    supported[start:end],
                    answers[start:end],
                    None if against is None else against[start:end],
                    self.adapter.error_kinds,
                    self.strict_errors,
                    failure,
                    self.adapter.command,
                    self.seed,
                )
            )
            start = end
        return result

    def reached(self) -> float:
        """The blocks of code the adapter ran for the first time since it was last asked (`coverage`)."""
        (answer,) = self.adapter.ask([CoverageQuestion()])
        return float(answer.new) if isinstance(answer, Covered) else 0.0

    def guidance(self, guided: bool) -> Callable[[], float] | None:
        """What guides a run's draws (`run_family`): the code reached, when `guided` and the adapter's
        hello lists the `coverage` operation."""
        return self.reached if guided and CoverageQuestion.op in self.adapter.ops else None


def _outcome(
    answer: Answer | None, strict_errors: bool, kinds: Mapping[str, str] | None = None
) -> str | None:
    """An answer as the three-way comparison sees it: the result, or a rejection (with its kind under
    --strict-errors, renamed by `kinds`); None: no answer."""
    if answer is None or failed(answer):
        return None
    if isinstance(answer, Refusal):
        kind = answer.kind
        return f"reject:{(kinds or {}).get(kind, kind)}" if strict_errors else "reject"
    return json.dumps(answer_fields(answer), sort_keys=True)


def _oracle(expected: Answer, observed: Answer | None, other: Answer | None, answers: Answers) -> str:
    """Which of the reference, the adapter and `against` agree ('' when the reference or the adapter gave
    no answer)."""
    mine = _outcome(expected, answers.strict_errors)
    theirs = _outcome(observed, answers.strict_errors, answers.error_kinds)
    compared = _outcome(other, answers.strict_errors)
    if failed(observed) and failed(other):  # both fail alike: the adapter follows the engine
        theirs = compared = INTERNAL_ERROR
    if mine is None or theirs is None:
        return ""
    return three_way(mine, theirs, compared)


def the_adapter(session: AdapterSession, index: int, alongside: bool) -> AdapterSession:
    """Every slot asks the one adapter: its questions share nothing but it."""
    return session


def ask_many(session: AdapterSession, units: Sequence[QuestionFamily]) -> list[Answers]:
    """Several families of questions in one exchange with the adapter (`AdapterSession.ask`)."""
    return [*session.ask(units)]


@dataclass(frozen=True, slots=True)
class LibraryFamily:
    """Questions asked of a transform library (`AdapterSession`), in families of questions that share
    a drawn structure; the families are drawn stratum by stratum (`suites.drawing.STRATA`), so every
    kind of question and every function gets its share of a run, and not steered by divergences."""

    name: str = "library"
    description: Description = Description(
        "a family of adapter-protocol questions sharing a drawn mapping, pattern, count or rule",
        20_000,
    )
    features: tuple[str, ...] = (
        "mapping",
        "validation",
        "partition",
        "matching",
        "subjects",
        "containment",
        "weighted",
    )
    schedule: Schedule[AdapterSession] = Schedule(
        the_adapter, SIDE_BY_SIDE, rolling=False, steered=False, together=ask_many
    )
    protocol: int = PROTOCOL_VERSION
    ops: frozenset[str] = frozenset()
    """The protocol version and operations of the adapter asked (its hello): what it is asked
    (`suites.drawing.strata_of`)."""

    def draw(self, profile: ReleaseProfile, draws: Draws) -> None:
        """`draws.budget` questions in families (`suites.drawing.draw_families`), each handed over alone."""
        seed = draws.seed if isinstance(draws.seed, int) else random.Random(draws.seed).getrandbits(32)
        ask = lambda family: draws.on_units([family])  # noqa: E731
        draw_families(profile, draws.budget, seed, ask, protocol=self.protocol, ops=self.ops)

    def execute(self, session: AdapterSession, unit: QuestionFamily) -> Answers:
        (answers,) = session.ask([unit])
        return answers

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: QuestionFamily, observed: Answers
    ) -> Judged:
        """One case per question that differs, is not answered or is a partition question (each keeps its
        count), and one `CaseBlock` per group of agreeing questions sharing their columns."""
        Key = tuple[str, tuple[str, ...], str, str]
        command, seed = observed.command, observed.seed
        judged: list[Case | CaseBlock] = []
        agreeing: dict[Key, list[tuple[int, Judgement]]] = {}
        answered = zip(observed.questions, observed.supported, observed.answers, strict=True)
        for index, (question, ok, answer) in enumerate(answered):
            expected = reference_answer(question)
            judgement = judge(
                question,
                expected,
                answer,
                strict_errors=observed.strict_errors,
                error_kinds=observed.error_kinds,
                supported=ok,
            )
            oracle = ""
            if ok and observed.against is not None:
                oracle = _oracle(expected, answer, observed.against[index], observed)
            unanswered = ok and answer is None
            if judgement.difference or unanswered or isinstance(question, PartitionQuestion):
                detail = observed.failure if unanswered else ""
                judged.append(
                    _case(context, judgement, detail=detail, oracle=oracle, command=command, seed=seed)
                )
            else:
                key = (judgement.feature, judgement.functions, judgement.source, oracle)
                agreeing.setdefault(key, []).append((context.next_case_id(), judgement))
        for (*_, oracle), members in agreeing.items():
            shared = _case(context, members[0][1], oracle=oracle, command=command, seed=seed, case_id=-1)
            judged.append(
                CaseBlock(
                    shared,
                    [case_id for case_id, _ in members],
                    [judgement.subject for _, judgement in members],
                    [judgement.expected for _, judgement in members],
                    [judgement.observed for _, judgement in members],
                )
            )
        return judged

    def unknown(
        self, context: RunContext, profile: ReleaseProfile, unit: QuestionFamily, reason: str
    ) -> Judged:
        """Every question of the unit `unknown`, with `reason`."""
        return [
            _case(context, judge(question, reference_answer(question), None), detail=reason)
            for question in questions_of(unit)
        ]

    def unit_of(self, case: CaseFile) -> QuestionFamily:
        """The family of the one question a case file asks; a case only a server answers raises
        `CaseFileError`."""
        question = case.question()
        if question is None:
            raise CaseFileError(f"a {case.feature} case needs a server: an adapter cannot answer it")
        return QuestionFamily.alone(question)

    def shrinking(self, profile: ReleaseProfile, case: Case) -> st.SearchStrategy[QuestionFamily]:
        """Single questions of the case's kind, a transform's among the functions its destination names."""
        question = CaseFile.of(case).question()
        assert question is not None, f"a {case.feature} case is no adapter question"
        names = case.functions.split("+") if case.functions else []
        names = names if isinstance(question, TransformQuestion) else []
        return strategy_for(question.op, profile, names).map(QuestionFamily.alone)


def _case(
    context: RunContext,
    judged: Judgement,
    *,
    detail: str = "",
    command: str = "",
    seed: int = 0,
    oracle: str = "",
    case_id: int | None = None,
) -> Case:
    """The case of one judged question (`case_id`: the shared columns of a block, not a case)."""
    if case_id is not None:
        context = replace(context, next_case_id=lambda: case_id)
    return make_case(
        context,
        feature=judged.feature,
        functions=judged.functions,
        source=judged.source,
        destination=judged.destination,
        subject=judged.subject,
        expected=judged.expected,
        observed=judged.observed,
        difference=judged.difference,
        detail=detail,
        command=command,
        seed=seed,
        partitions=judged.partitions,
        oracle=oracle,
        reason=ADAPTER_FAILED,
    )


def unanswered_operations(adapter: AdapterProcess) -> list[str]:
    """The kinds of question an adapter's hello leaves out of its `ops` (none when it lists no ops)."""
    kinds = dict.fromkeys(op for op, _focus, _share in STRATA)
    return [op for op in kinds if adapter.ops and op not in adapter.ops]


def unsupported_functions(adapter: AdapterProcess) -> list[str]:
    """The mapping functions asked about that an adapter's hello leaves out of its `functions`."""
    if adapter.functions is None:
        return []
    return [name for name in FOCUS if name != LEGACY_WILDCARD and name not in adapter.functions]
