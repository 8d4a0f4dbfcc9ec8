"""Transform libraries as targets: generated adapter-protocol questions, the library's answers compared
with the reference's (docs/adapter-protocol.md).

The reference answers from the same model its protocol handler serves (`reference.adapter`), so a
library and the reference are asked the very same question (`reference.protocol`'s types). Questions
cover the documented features a library can answer without a network: mapping (transform, including
validation per release), partition, wildcard matching and subject validity. `{{random(n)}}` is left
out: one draw cannot be compared with another (the server suites test its distribution).

An answer is judged on what a mapping does: accept or reject, and the mapped subject. The error kinds
of two rejections are compared only with `strict_errors`, after the adapter's own kinds are renamed as
its hello declares; transform questions are asked in the mode the hello declares (account mappings or
the bare engine), and a question using an operation or function the hello leaves out is not asked but
recorded as not supported (docs/adapter-protocol.md, "Judging").

Every unexpected divergence class (feature, functions, what differed) is then shrunk with Hypothesis
to a minimal question that still shows it, recorded as a case of its own, so its case file
(records.casefile) is the minimal reproduction; a class `expectations.toml` lists is known already and
is not shrunk.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from fixtures.clients.adapter import AdapterProcess, Sent
from records.casefile import CaseFile, CaseFileError
from records.expectations import Expectations
from records.schema import NOT_SUPPORTED, Case, CaseBlock
from reference.adapter import handle_request, transform_reply
from reference.functions import FUNCTIONS, LEGACY_WILDCARD
from reference.matching import matches
from reference.partition import partition
from reference.profiles import NEWEST, ReleaseProfile, for_version
from reference.protocol import (
    INTERNAL_ERROR,
    Answer,
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
    ValidSubjectQuestion,
    answer_fields,
    answer_of,
)
from reference.subjects import is_valid_publish_subject, is_valid_subject
from suites.drawing import (
    FOCUS,
    SPECIAL_TOKENS,
    STRATA,
    Family,
    boundary,
    draw_families,
    families_drawn,
    questions_of,
    wildcard_sources,
    without_random,
)
from suites.engine.verdicts import (
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
from suites.expected import functions_named
from suites.families.matching import wildcard_kinds
from suites.oracle import failed, three_way
from suites.strategies import (
    destination_templates,
    patterns,
    seeded_generation,
    subjects,
    subjects_matching,
    tokens,
)

BACKEND = "adapter"
Judged = Sequence[Case | CaseBlock]
"""What a run records: single cases, and blocks of agreeing cases that share a structure."""


@st.composite
def transform_questions(
    draw: st.DrawFn, profile: ReleaseProfile, names: Sequence[str] = (), engine_only: bool = False
) -> TransformQuestion:
    """A mapping (its functions among `names` when given), a subject its source matches, and the
    release whose rules apply (those of the bare transform engine when `engine_only`)."""
    source = draw(wildcard_sources())
    destination = draw(without_random(destination_templates(source, profile, names)))
    subject = draw(subjects_matching(source))
    return TransformQuestion(source, destination, subject, profile.name, engine_only)


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


def strategy_for(
    op: str, profile: ReleaseProfile, names: Sequence[str] = (), engine_only: bool = False
) -> st.SearchStrategy[Question]:
    """The questions of one operation (what a divergence of that operation is shrunk within)."""
    strategies: dict[str, st.SearchStrategy[Question]] = {
        TransformQuestion.op: transform_questions(profile, names, engine_only),
        PartitionQuestion.op: partition_questions(),
        MatchQuestion.op: match_questions(),
        ValidSubjectQuestion.op: valid_subject_questions(),
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
            differs = wrong_subject(source, destination)
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
    assert isinstance(question, ValidSubjectQuestion), f"{question.op} questions are not judged"
    rule = ("publish-rule",) if question.literal else ("subject-rule",)
    return Judgement("subjects", rule, "", "", question.subject, *shown, differs)


def is_supported(adapter: AdapterProcess, question: Question) -> bool:
    """Whether an adapter's hello lists the question's operation (when it lists any) and, for a
    transform, every `{{function}}` its destination names (when it lists functions)."""
    if adapter.ops and question.op not in adapter.ops:
        return False
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
    return answer_of(question, handle_request(question.wire()))


@dataclass(frozen=True, slots=True)
class Asked:
    """A batch of questions sent: which the adapter supports, and the batches sent to it and to
    `against` (None: nothing to ask)."""

    batch: Sequence[Question]
    supported: Sequence[bool]
    adapter: Sent | None
    against: Sent | None


@dataclass(slots=True)
class LibraryRun:
    """Asks an adapter questions and turns each answer into a recorded case."""

    adapter: AdapterProcess
    context: RunContext
    record: Callable[[Judged], object]
    found: dict[str, tuple[Question, Case]] = field(default_factory=dict)
    """The smallest question seen of each unexpected divergence class (where its minimisation falls
    back to), with its case."""
    engine_only: bool = False
    """Transform questions ask the bare transform engine, not the account-mapping validator."""
    strict_errors: bool = False
    """Two rejections agree only when their error kinds do (the adapter's renamed as its hello says)."""
    against: AdapterProcess | None = None
    """A second target (`--against engine:RELEASE`) asked every question too; each case then records
    which of the reference, the adapter and it agree (`Case.oracle`, `suites.oracle`; an adapter that
    fails with `internal-error` where the engine does too agrees with it)."""
    pending: tuple[Sequence[Sequence[Question]], Asked, int] | None = None
    """The families `ask_families` sent last, with the seed they are recorded with, not judged yet."""

    def ask(self, batch: Sequence[Question], seed: int = 0) -> list[Case]:
        """Ask `batch`, record one case per question and return them (after the families still
        pending)."""
        self.settle()
        cases = [
            self._case(judged, seed, unanswered, oracle)
            for judged, unanswered, oracle in self._judged(self._send(batch))
        ]
        for question, case in zip(batch, cases, strict=True):
            self._keep(question, case)
        self.record(cases)
        return cases

    def ask_families(self, families: Sequence[Family], seed: int = 0) -> None:
        """Send every family's questions in one round trip, then judge and record the families sent
        before, which the adapter has answered meanwhile (`settle` records the last ones): the agreeing
        questions of a family that share its columns as one `CaseBlock`, the others as single cases."""
        asked = [questions_of(family) for family in families]
        sent = self._send([question for family in asked for question in family])
        self.settle()
        self.pending = (asked, sent, seed)

    def settle(self) -> None:
        """Judge and record the families `ask_families` sent last, if any."""
        if self.pending is None:
            return
        families, sent, seed = self.pending
        self.pending = None
        judged = iter(self._judged(sent))
        Key = tuple[str, tuple[str, ...], str, str]
        recorded: list[Case | CaseBlock] = []
        for family in families:
            agreeing: dict[Key, list[tuple[int, Judgement]]] = {}
            for question, (judgement, unanswered, oracle) in zip(
                family, itertools.islice(judged, len(family)), strict=True
            ):
                if judgement.difference or unanswered or isinstance(question, PartitionQuestion):
                    case = self._case(judgement, seed, unanswered, oracle)
                    self._keep(question, case)
                    recorded.append(case)
                else:
                    key = (judgement.feature, judgement.functions, judgement.source, oracle)
                    agreeing.setdefault(key, []).append((self.context.next_case_id(), judgement))
            recorded.extend(self._block(members, seed, oracle) for (*_, oracle), members in agreeing.items())
        self.record(recorded)

    def _send(self, batch: Sequence[Question]) -> Asked:
        """Send the questions of `batch` the adapter supports (and to `against`, its transforms under
        the rules of the release it names), answers unread."""
        supported = [is_supported(self.adapter, question) for question in batch]
        questions = [question for question, ok in zip(batch, supported, strict=True) if ok]
        against = None
        if self.against is not None and questions:
            release = self.against.hello.server_version
            against = self.against.send(
                [
                    TransformQuestion(q.source, q.destination, q.subject, release, q.engine_only)
                    if release and isinstance(q, TransformQuestion)
                    else q
                    for q in questions
                ]
            )
        return Asked(batch, supported, self.adapter.send(questions) if questions else None, against)

    def _judged(self, sent: Asked) -> list[tuple[Judgement, bool, str]]:
        """Each question of a batch sent judged: its judgement, whether the adapter left it unanswered,
        and which of reference, adapter and `against` agree (with `against`)."""
        asked = iter(self.adapter.receive(sent.adapter) if sent.adapter else [])
        compared = iter(self.against.receive(sent.against) if self.against and sent.against else [])
        result = []
        for question, ok in zip(sent.batch, sent.supported, strict=True):
            observed = next(asked) if ok else None
            expected = reference_answer(question)
            judged = self._judge(question, expected, observed, supported=ok)
            oracle = ""
            if ok and self.against is not None:
                answer = next(compared)
                other = self._outcome(answer)
                mine = self._outcome(expected)
                theirs = self._outcome(observed, self.adapter.error_kinds)
                if failed(observed) and failed(answer):  # both fail alike: the adapter follows the engine
                    theirs = other = INTERNAL_ERROR
                if mine is not None and theirs is not None:
                    oracle = three_way(mine, theirs, other)
            result.append((judged, ok and observed is None, oracle))
        return result

    def _keep(self, question: Question, case: Case) -> None:
        """Keep `question` as its divergence class's smallest seen question when it is (an expected
        class is known already: it is not minimised)."""
        if case.verdict == "diverge":
            kept = self.found.get(case.case_class)
            if kept is None or _size(question) < _size(kept[0]):
                self.found[case.case_class] = (question, case)

    def _block(self, members: Sequence[tuple[int, Judgement]], seed: int, oracle: str) -> CaseBlock:
        """Agreeing questions that share every column but case id, subject and answers."""
        first = members[0][1]
        shared = self._case(first, seed, False, oracle, case_id=-1)
        return CaseBlock(
            shared,
            [case_id for case_id, _ in members],
            [judged.subject for _, judged in members],
            [judged.expected for _, judged in members],
            [judged.observed for _, judged in members],
        )

    def _outcome(self, answer: Answer | None, kinds: Mapping[str, str] | None = None) -> str | None:
        """An answer as the three-way comparison sees it: the result, or a rejection (with its kind under
        --strict-errors, renamed by `kinds`); None: no answer."""
        if answer is None or failed(answer):
            return None
        if isinstance(answer, Refusal):
            kind = answer.kind
            return f"reject:{(kinds or {}).get(kind, kind)}" if self.strict_errors else "reject"
        return json.dumps(answer_fields(answer), sort_keys=True)

    def _judge(
        self, question: Question, expected: Answer, observed: Answer | None, *, supported: bool = True
    ) -> Judgement:
        return judge(
            question,
            expected,
            observed,
            strict_errors=self.strict_errors,
            error_kinds=self.adapter.error_kinds,
            supported=supported,
        )

    def _case(
        self, judged: Judgement, seed: int, unanswered: bool, oracle: str = "", case_id: int | None = None
    ) -> Case:
        """The case of one judged question (`case_id`: the shared columns of a block, not a case)."""
        detail = self.adapter.failures[-1] if unanswered and self.adapter.failures else ""
        context = self.context if case_id is None else replace(self.context, next_case_id=lambda: case_id)
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
            command=self.adapter.command,
            seed=seed,
            partitions=judged.partitions,
            oracle=oracle,
        )

    def class_of(self, question: Question) -> str:
        """The case class of one question's divergence now ('' when the target agrees)."""
        judged = self._judge(question, reference_answer(question), self.adapter.ask([question])[0])
        return judged.case_class if judged.difference else ""

    def minimise(self, profile: ReleaseProfile, *, max_examples: int = 1000) -> list[Case]:
        """For every unexpected divergence class seen, the smallest question Hypothesis finds that still
        shows it, asked once more and recorded (the smallest seen when it is smaller, or none is found)."""
        minimal: list[Case] = []
        for case_class, (seen, seen_case) in sorted(self.found.items()):
            if seen_case.difference == "unknown":
                continue

            def shows(candidate: Question, wanted: str = case_class) -> bool:
                return self.class_of(candidate) == wanted

            try:
                names = seen_case.functions.split("+") if seen_case.functions else []
                with seeded_generation():
                    question = find(
                        strategy_for(seen.op, profile, names, self.engine_only),
                        shows,
                        settings=settings(
                            max_examples=max_examples,
                            database=None,
                            phases=[Phase.generate, Phase.shrink],
                            derandomize=False,
                            suppress_health_check=list(HealthCheck),
                            deadline=None,
                        ),
                        random=random.Random(0),
                    )
            except NoSuchExample:
                question = seen
            question = min(question, seen, key=_size)
            minimal.extend(case for case in self.ask([question]) if case.case_class == case_class)
        return minimal


def _size(question: Question) -> int:
    return len(json.dumps(question.wire()))


def unanswered_operations(adapter: AdapterProcess) -> list[str]:
    """The kinds of question an adapter's hello leaves out of its `ops` (none when it lists no ops)."""
    kinds = dict.fromkeys(op for op, _focus, _share in STRATA)
    return [op for op in kinds if adapter.ops and op not in adapter.ops]


def unsupported_functions(adapter: AdapterProcess) -> list[str]:
    """The mapping functions asked about that an adapter's hello leaves out of its `functions`."""
    if adapter.functions is None:
        return []
    return [name for name in FOCUS if name != LEGACY_WILDCARD and name not in adapter.functions]


def ask_questions(
    run: LibraryRun, profile: ReleaseProfile, *, cases: int, seed: int = 0, guided: bool = True
) -> None:
    """`cases` generated questions under `profile`'s rules, drawn by a process of their own and asked in
    batches of families (those the adapter does not support are recorded as such, not asked). An
    adapter that answers `coverage` is asked, `guided`, family by family in this process: each family
    scores the blocks of code it ran first (Hypothesis `target()`, as HypoFuzz rewards new coverage)."""
    if guided and CoverageQuestion.op in run.adapter.ops:

        def emit(families: list[Family]) -> None:
            run.ask_families(families, seed)
            run.settle()

        def reward() -> float:
            (answer,) = run.adapter.ask([CoverageQuestion()])
            return float(answer.new) if isinstance(answer, Covered) else 0.0

        draw_families(profile, cases, seed, run.engine_only, emit, reward=reward)
        return
    with families_drawn(profile, cases, seed, run.engine_only) as batches:
        for families in batches:
            run.ask_families(families, seed)
    run.settle()


def run_library(
    adapter: AdapterProcess,
    context: RunContext,
    record: Callable[[Judged], object],
    *,
    cases: int,
    seed: int = 0,
    strict_errors: bool = False,
    against: AdapterProcess | None = None,
    known: Sequence[CaseFile] = (),
    guided: bool = True,
) -> list[Case]:
    """The questions of the `known` case files first, then `cases` generated questions for the
    context's release, in the mode the adapter's hello declares (each also asked of `against`, when
    given), then one minimal case per divergence class; returns the known questions' divergences and
    the minimal cases."""
    profile = for_version(context.server_version)
    run = LibraryRun(
        adapter,
        context,
        record,
        engine_only=adapter.mode == "engine",
        strict_errors=strict_errors,
        against=against,
    )
    asked: list[Case] = []
    if known:
        context.expectations.note_known(case for case in known if case.question() is not None)
        with context.expectations.known_part() as part:
            questions = [
                asked_as(question, adapter, context.server_version) for question in known_questions(known)
            ]
            asked = replace(run, context=replace(context, expectations=part), found={}).ask(questions)
    ask_questions(run, profile, cases=cases, seed=seed, guided=guided)
    return [*(case for case in asked if case.verdict == "diverge"), *run.minimise(profile)]


def known_questions(cases: Sequence[CaseFile]) -> list[Question]:
    """The questions of the case files an adapter can answer (the others need a server)."""
    return [question for case in cases if (question := case.question()) is not None]


def asked_as(question: Question, adapter: AdapterProcess, version: str = "") -> Question:
    """A case file's question as `adapter` is asked it: a transform under `version`'s rules when given
    (else the case's own, if it names one), of the bare engine when the adapter's hello declares engine
    mode."""
    if not isinstance(question, TransformQuestion):
        return question
    engine_only = question.engine_only or adapter.mode == "engine"
    release = version or question.server_version or None
    return TransformQuestion(question.source, question.destination, question.subject, release, engine_only)


def replay_on_adapter(case: CaseFile, command: str, *, strict_errors: bool = False) -> list[Case]:
    """A case file's question asked of an adapter in the mode its hello declares, judged against the
    reference (not looked up in the expectations: a replay shows the comparison as it is)."""
    question = case.question()
    if question is None:
        raise CaseFileError(f"a {case.feature} case needs a server: an adapter cannot answer it")
    counter = itertools.count()
    with AdapterProcess(command) as adapter:
        if question.op not in adapter.ops:
            raise CaseFileError(f"{adapter.implementation} does not answer {question.op} questions")
        question = asked_as(question, adapter)
        named = question.server_version if isinstance(question, TransformQuestion) else None
        version = for_version(named or NEWEST.name).name
        context = RunContext(
            "replay", adapter.implementation, version, BACKEND, Expectations(), lambda: next(counter)
        )
        run = LibraryRun(adapter, context, lambda _cases: None, strict_errors=strict_errors)
        return run.ask([question])
