"""Transform libraries as targets: generated adapter-protocol questions, the library's answers compared
with the reference's (docs/adapter-protocol.md).

The reference answers through the same protocol handler it serves (`reference.adapter.handle_request`),
so a library and the reference are asked the very same request. Questions cover the documented features a
library can answer without a network: mapping (transform, including validation per release), partition,
wildcard matching and subject validity. `{{random(n)}}` is left out: one draw cannot be compared with
another (the server suites test its distribution).

An answer is judged on what a mapping does: accept or reject, and the mapped subject. The error kinds
of two rejections are compared only with `strict_errors`, after the adapter's own kinds are renamed as
its hello declares; transform questions are asked in the mode the hello declares (account mappings or
the bare engine), and a question using an operation or function the hello leaves out is not asked but
recorded as not supported (docs/adapter-protocol.md, "Judging").

Every divergence class (feature, functions, what differed) is then shrunk with Hypothesis to a minimal
question that still shows it, recorded as a case of its own, so its case file (records.casefile) is the
minimal reproduction.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from fixtures.clients.adapter import AdapterProcess, Answer, Request
from records.casefile import CaseFile, CaseFileError
from records.expectations import Expectations
from records.replay import COMMAND_DETAIL
from records.schema import NOT_SUPPORTED, Case
from reference.adapter import handle_request
from reference.functions import FUNCTIONS, LEGACY_WILDCARD, MAPPING_FUNCTIONS
from reference.profiles import NEWEST, ReleaseProfile, for_version
from suites.differential import RunContext, case_class_of, functions_named, is_literal, make_case
from suites.oracle import three_way
from suites.strategies import (
    bulk_subjects,
    destination_templates,
    patterns,
    run_batches,
    seeded_generation,
    sources,
    subjects,
    subjects_matching,
    tokens,
)
from suites.subscriptions import wildcard_kinds

BACKEND = "adapter"
BATCH = 500
"""Questions per round trip to the adapter."""
FAMILY = 25
"""Questions per Hypothesis example: one drawn structure, many generated inputs."""

RESULT_FIELD = {"transform": "subject", "match": "match", "valid_subject": "valid", "partition": "partition"}
"""The answer field that carries each operation's result."""


SPECIAL_TOKENS = ("", " ", "*", ">", "a b", "\t", "é")
"""Token texts at the edge of subject validity ("Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects)."""


def wildcard_sources() -> st.SearchStrategy[str]:
    """Mapping sources with one to three `*` (what most functions need), sometimes none."""
    return sources(max_tokens=4).filter(lambda source: 1 <= source.count("*") <= 3) | sources(max_tokens=3)


def _no_random(destination: str) -> bool:
    return "random" not in destination.lower()


FOCUS = ("wildcard", *(f.name for f in MAPPING_FUNCTIONS if f.name not in ("wildcard", "random")))
"""Functions a family of questions may focus on (one or two at a time, so each meets its edge cases);
not ``random``, whose output no answer can be compared with. ``wildcard`` comes first, as it always
has, so that a seed still draws the questions it drew before."""

STRATA: tuple[tuple[str, tuple[str, ...], int], ...] = (
    *(("transform", (name,), 1) for name in FOCUS),
    ("transform", (), 2),
    ("partition", (), 2),
    ("match", (), 3),
    ("valid_subject", (), 2),
)
"""How a run's families are shared out: (kind of question, functions in focus, share). Each stratum is
its own Hypothesis run, so every kind and every function gets its share of a short run (within one run,
Hypothesis's draws cluster around earlier examples: a function could go unasked in 5,000 questions)."""


@st.composite
def transform_requests(
    draw: st.DrawFn, profile: ReleaseProfile, names: Sequence[str] = (), engine_only: bool = False
) -> Request:
    """A mapping (its functions among `names` when given), a subject its source matches, and the
    release whose rules apply (those of the bare transform engine when `engine_only`)."""
    source = draw(wildcard_sources())
    destination = draw(destination_templates(source, profile, names).filter(_no_random))
    return _transform(source, destination, draw(subjects_matching(source)), profile, engine_only)


def _transform(
    source: str, destination: str, subject: str, profile: ReleaseProfile, engine_only: bool
) -> Request:
    request = {
        "op": "transform",
        "source": source,
        "destination": destination,
        "subject": subject,
        "server_version": profile.name,
    }
    return {**request, "engine_only": True} if engine_only else request


def partition_requests() -> st.SearchStrategy[Request]:
    """Tokens and a partition count (the `partition` operation)."""
    return st.builds(_partition, st.lists(tokens(max_size=6), min_size=1, max_size=4), st.integers(1, 16))


def _partition(keys: list[str], n: int) -> Request:
    return {"op": "partition", "tokens": keys, "n": n}


def _boundary(subject: str, kind: str, extra: str) -> str:
    """A subject next to a matching one: its last token dropped, one token more, or itself."""
    if kind == "shorter":
        return ".".join(subject.split(".")[:-1]) or subject
    if kind == "longer":
        return f"{subject}.{extra}"
    return subject


@st.composite
def match_requests(draw: st.DrawFn) -> Request:
    """A subscription pattern and a subject: one it matches, an unrelated one, or a boundary one
    (the pattern's tokens with `>` dropped or one token more)."""
    pattern = draw(patterns(max_tokens=4))
    kind = draw(st.sampled_from(["match", "other", "shorter", "longer"]))
    if kind == "other":
        return _match(pattern, draw(subjects(max_tokens=5)))
    return _match(pattern, _boundary(draw(subjects_matching(pattern)), kind, draw(tokens(max_size=3))))


def _match(pattern: str, subject: str) -> Request:
    return {"op": "match", "pattern": pattern, "subject": subject}


def valid_subject_requests() -> st.SearchStrategy[Request]:
    """Subjects with empty tokens, spaces and wildcards mixed in, checked by either rule."""
    token = tokens(max_size=4) | st.sampled_from(SPECIAL_TOKENS)
    return st.builds(
        lambda parts, literal: _valid_subject(".".join(parts), literal),
        st.lists(token, min_size=1, max_size=4),
        st.booleans(),
    )


def _valid_subject(subject: str, literal: bool) -> Request:
    return {"op": "valid_subject", "subject": subject, "literal": literal}


def strategy_for(
    op: str, profile: ReleaseProfile, names: Sequence[str] = (), engine_only: bool = False
) -> st.SearchStrategy[Request]:
    """The questions of one operation (what a divergence of that operation is shrunk within)."""
    return {
        "transform": transform_requests(profile, names, engine_only),
        "partition": partition_requests(),
        "match": match_requests(),
        "valid_subject": valid_subject_requests(),
    }[op]


def token_pool(rng: random.Random) -> list[str]:
    """Short tokens for bulk questions (short, so that cuts and hashes meet their boundaries)."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    pool = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(48)]
    return [*pool, "a", "aa", "ab", "é", "日本", "a-b"]


@st.composite
def question_families(
    draw: st.DrawFn, profile: ReleaseProfile, op: str, focus: Sequence[str], engine_only: bool = False
) -> list[Request]:
    """`FAMILY` questions of kind `op` sharing one drawn structure (a mapping whose functions are those
    of `focus` when given, a pattern, a count, a rule); the structure comes from Hypothesis, the bulk of
    each family from a generator it seeds."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    pool = token_pool(rng)
    if op == "transform":
        source = draw(wildcard_sources())
        destination = draw(destination_templates(source, profile, focus).filter(_no_random))
        found = bulk_subjects(source, rng, FAMILY, pool=pool)
        return [_transform(source, destination, subject, profile, engine_only) for subject in found]
    if op == "partition":
        n = draw(st.integers(1, 16))
        return [_partition(rng.choices(pool, k=rng.randint(1, 4)), n) for _ in range(FAMILY)]
    if op == "match":
        pattern = draw(patterns(max_tokens=4))
        kinds = ("match", "shorter", "longer")
        found = bulk_subjects(pattern, rng, FAMILY, pool=pool[:8])
        return [_match(pattern, _boundary(s, rng.choice(kinds), rng.choice(pool))) for s in found]
    literal = draw(st.booleans())
    choices = [*pool[:8], *SPECIAL_TOKENS]
    parts = [rng.choices(choices, k=rng.randint(1, 4)) for _ in range(FAMILY)]
    return [_valid_subject(".".join(chosen), literal) for chosen in parts]


@dataclass(frozen=True, slots=True)
class Judgement:
    """What a request is about (feature, functions, the case columns) and what differed ('' if nothing)."""

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
    if answer is None:
        return ""
    if "error" in answer:
        return f"error {answer['error']}"
    return json.dumps({k: v for k, v in answer.items() if k != "detail"}, ensure_ascii=False)


def difference(
    op: str,
    expected: Answer,
    observed: Answer | None,
    *,
    strict_errors: bool = False,
    error_kinds: Mapping[str, str] | None = None,
) -> str:
    """What differs between the reference's answer and the target's, '' when they agree. Two
    rejections agree whatever their kinds unless `strict_errors`; the target's kinds are first renamed
    by `error_kinds` (its own kind -> the protocol's)."""
    if observed is None:
        return "unknown"
    wanted, got = expected.get("error"), observed.get("error")
    if got == "internal-error":
        return "target-internal-error"
    if got and error_kinds:
        got = error_kinds.get(got, got)
    if wanted and got:
        return "" if wanted == got or not strict_errors else f"reference-{wanted}-target-{got}"
    if wanted:
        return f"reference-reject-{wanted}-target-accept"
    if got:
        return f"reference-accept-target-reject-{got}"
    name = RESULT_FIELD[op]
    if name not in observed:
        return "target-answer-without-result"
    return "" if observed[name] == expected[name] else "value"


def judge(
    request: Request,
    expected: Answer,
    observed: Answer | None,
    *,
    strict_errors: bool = False,
    error_kinds: Mapping[str, str] | None = None,
    supported: bool = True,
) -> Judgement:
    """The case a question makes, with the class of its difference (`NOT_SUPPORTED` when the target
    was not asked it, as its hello leaves it out). A transform's differences are named as the live
    families name them (``wrong-subject``; ``...-accept-literal-source`` for a source without
    wildcards), so one expectation covers a server and its transform engine."""
    op = request["op"]
    differs = (
        difference(op, expected, observed, strict_errors=strict_errors, error_kinds=error_kinds)
        if supported
        else NOT_SUPPORTED
    )
    shown = (_shown(expected), _shown(observed))
    if op == "transform":
        if differs == "value":
            differs = "wrong-subject"
        elif differs.endswith("-target-accept") and is_literal(request["source"]):
            differs += "-literal-source"
        destination = request["destination"]
        functions = functions_named(destination)
        feature = (
            "validation" if "error" in expected else "partition" if "partition" in functions else "mapping"
        )
        return Judgement(
            feature, functions, request["source"], destination, request["subject"], *shown, differs
        )
    if op == "partition":
        source = json.dumps(request["tokens"], ensure_ascii=False)
        return Judgement("partition", ("partition-op",), source, "", "", *shown, differs, request["n"])
    if op == "match":
        kinds = wildcard_kinds(request["pattern"])
        return Judgement("matching", kinds, request["pattern"], "", request["subject"], *shown, differs)
    rule = ("publish-rule",) if request.get("literal") else ("subject-rule",)
    return Judgement("subjects", rule, "", "", request["subject"], *shown, differs)


def is_supported(adapter: AdapterProcess, request: Request) -> bool:
    """Whether an adapter's hello lists the question's operation (when it lists any) and, for a
    transform, every `{{function}}` its destination names (when it lists functions)."""
    if adapter.ops and request["op"] not in adapter.ops:
        return False
    if request["op"] != "transform" or adapter.functions is None:
        return True
    named = functions_named(request["destination"])
    return all(name in adapter.functions for name in named if name in FUNCTIONS and name != LEGACY_WILDCARD)


def reference_answer(request: Request) -> Answer:
    answer = handle_request({**request, "id": None})
    answer.pop("id", None)
    return answer


@dataclass(slots=True)
class LibraryRun:
    """Asks an adapter questions and turns each answer into a recorded case."""

    adapter: AdapterProcess
    context: RunContext
    record: Callable[[Sequence[Case]], object]
    found: dict[str, Request] = field(default_factory=dict)
    """The smallest question seen of each divergence class (where its minimisation falls back to)."""
    engine_only: bool = False
    """Transform questions ask the bare transform engine, not the account-mapping validator."""
    strict_errors: bool = False
    """Two rejections agree only when their error kinds do (the adapter's renamed as its hello says)."""
    against: AdapterProcess | None = None
    """A second target (`--against engine:RELEASE`) asked every question too; each case then records
    which of the reference, the adapter and it agree (`Case.oracle`, `suites.oracle`)."""

    def ask(self, batch: Sequence[Request], seed: int = 0) -> list[Case]:
        supported = [is_supported(self.adapter, request) for request in batch]
        questions = [request for request, ok in zip(batch, supported, strict=True) if ok]
        asked = iter(self.adapter.ask(questions) if questions else [])
        compared = iter(self._ask_against(questions))
        cases = []
        for request, ok in zip(batch, supported, strict=True):
            observed = next(asked) if ok else None
            judged = self._judge(request, observed, supported=ok)
            oracle = ""
            if ok and self.against is not None:
                other = self._outcome(next(compared))
                mine = self._outcome(reference_answer(request))
                theirs = self._outcome(observed, self.adapter.error_kinds)
                if mine is not None and theirs is not None:
                    oracle = three_way(mine, theirs, other)
            cases.append(self._case(judged, seed, ok and observed is None, oracle))
            if cases[-1].verdict in ("diverge", "expected"):
                kept = self.found.get(cases[-1].case_class)
                if kept is None or _size(request) < _size(kept):
                    self.found[cases[-1].case_class] = request
        self.record(cases)
        return cases

    def _ask_against(self, questions: Sequence[Request]) -> list[Answer | None]:
        """The second target's answers, each asked under its own release."""
        if self.against is None or not questions:
            return []
        release = str(self.against.hello.get("server_version") or "")
        return self.against.ask([{**q, "server_version": release} if release else q for q in questions])

    def _outcome(self, answer: Answer | None, kinds: Mapping[str, str] | None = None) -> str | None:
        """An answer as the three-way comparison sees it: the result, or a rejection (with its kind under
        --strict-errors, renamed by `kinds`); None: no answer."""
        if answer is None or answer.get("error") == "internal-error":
            return None
        if "error" in answer:
            kind = str(answer["error"])
            return f"reject:{(kinds or {}).get(kind, kind)}" if self.strict_errors else "reject"
        return json.dumps({k: v for k, v in answer.items() if k != "detail"}, sort_keys=True)

    def _judge(self, request: Request, observed: Answer | None, *, supported: bool = True) -> Judgement:
        return judge(
            request,
            reference_answer(request),
            observed,
            strict_errors=self.strict_errors,
            error_kinds=self.adapter.error_kinds,
            supported=supported,
        )

    def _case(self, judged: Judgement, seed: int, unanswered: bool, oracle: str = "") -> Case:
        detail = f"{COMMAND_DETAIL}{self.adapter.command}"
        if unanswered and self.adapter.failures:
            detail += f"; {self.adapter.failures[-1]}"
        return make_case(
            self.context,
            feature=judged.feature,
            functions=judged.functions,
            source=judged.source,
            destination=judged.destination,
            subject=judged.subject,
            expected=judged.expected,
            observed=judged.observed,
            difference=judged.difference,
            detail=detail,
            seed=seed,
            partitions=judged.partitions,
            oracle=oracle,
        )

    def class_of(self, request: Request) -> str:
        """The case class of one question's divergence now ('' when the target agrees)."""
        judged = self._judge(request, self.adapter.ask([request])[0])
        return judged.case_class if judged.difference else ""

    def minimise(self, profile: ReleaseProfile, *, max_examples: int = 1000) -> list[Case]:
        """For every divergence class seen, the smallest question Hypothesis finds that still shows it,
        asked once more and recorded (falls back to the smallest seen when none is found)."""
        minimal: list[Case] = []
        for case_class, seen in sorted(self.found.items()):
            if case_class.endswith(":unknown"):
                continue

            def shows(candidate: Request, wanted: str = case_class) -> bool:
                return self.class_of(candidate) == wanted

            try:
                names = [name for name in case_class.split(":")[1].split("+") if name != "literal"]
                with seeded_generation():
                    request = find(
                        strategy_for(seen["op"], profile, names, self.engine_only),
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
                request = seen
            minimal.extend(case for case in self.ask([request]) if case.case_class == case_class)
        return minimal


def _size(request: Request) -> int:
    return len(json.dumps(request))


def _drawing(
    strategy: st.SearchStrategy[list[Request]], cases: int, drawn: list[int]
) -> Callable[[st.DataObject], list[Request]]:
    """Draws a family of `strategy`, cut to the questions left of `cases` (`drawn[0]` asked so far)."""
    return lambda data: data.draw(strategy)[: cases - drawn[0]]


def _shares(families: int) -> list[int]:
    """`families` shared out over the strata in proportion to their shares (largest remainder)."""
    total = sum(share for _op, _focus, share in STRATA)
    exact = [families * share / total for _op, _focus, share in STRATA]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: counts[i] - exact[i])
    for i in by_remainder[: families - sum(counts)]:
        counts[i] += 1
    return counts


def unanswered_operations(adapter: AdapterProcess) -> list[str]:
    """The kinds of question an adapter's hello leaves out of its `ops` (none when it lists no ops)."""
    kinds = dict.fromkeys(op for op, _focus, _share in STRATA)
    return [op for op in kinds if adapter.ops and op not in adapter.ops]


def unsupported_functions(adapter: AdapterProcess) -> list[str]:
    """The mapping functions asked about that an adapter's hello leaves out of its `functions`."""
    if adapter.functions is None:
        return []
    return [name for name in FOCUS if name != LEGACY_WILDCARD and name not in adapter.functions]


def ask_questions(run: LibraryRun, profile: ReleaseProfile, *, cases: int, seed: int = 0) -> None:
    """`cases` generated questions under `profile`'s rules, asked in batches (those the adapter does
    not support are recorded as such, not asked)."""
    pending: list[Request] = []
    drawn = [0]

    def collect(family: list[Request]) -> float:
        """Queue a family of questions (asked in batches, so no score to target: 0)."""
        drawn[0] += len(family)
        pending.extend(family)
        if len(pending) >= BATCH:
            run.ask(pending, seed)
            pending.clear()
        return 0.0

    for (op, focus, _share), families in zip(STRATA, _shares(-(-cases // FAMILY)), strict=True):
        if families:
            strategy = question_families(profile, op, focus, run.engine_only)
            run_batches(_drawing(strategy, cases, drawn), families, seed, collect)
    if pending:
        run.ask(pending, seed)


def run_library(
    adapter: AdapterProcess,
    context: RunContext,
    record: Callable[[Sequence[Case]], object],
    *,
    cases: int,
    seed: int = 0,
    strict_errors: bool = False,
    against: AdapterProcess | None = None,
) -> list[Case]:
    """`cases` generated questions for the context's release, in the mode the adapter's hello declares
    (each also asked of `against`, when given), then one minimal case per divergence class; returns the
    minimal cases."""
    profile = for_version(context.server_version)
    run = LibraryRun(
        adapter,
        context,
        record,
        engine_only=adapter.mode == "engine",
        strict_errors=strict_errors,
        against=against,
    )
    ask_questions(run, profile, cases=cases, seed=seed)
    return run.minimise(profile)


def replay_on_adapter(case: CaseFile, command: str, *, strict_errors: bool = False) -> list[Case]:
    """A case file's question asked of an adapter in the mode its hello declares, judged against the
    reference (not looked up in the expectations: a replay shows the comparison as it is)."""
    request = case.request()
    if request is None:
        raise CaseFileError(f"a {case.feature} case needs a server: an adapter cannot answer it")
    if request["op"] == "transform" and not request.get("server_version"):
        request.pop("server_version")
    counter = itertools.count()
    with AdapterProcess(command) as adapter:
        if request["op"] not in adapter.ops:
            raise CaseFileError(f"{adapter.implementation} does not answer {request['op']} questions")
        if request["op"] == "transform" and adapter.mode == "engine":
            request["engine_only"] = True
        version = for_version(str(request.get("server_version") or NEWEST.name)).name
        context = RunContext(
            "replay", adapter.implementation, version, BACKEND, Expectations(), lambda: next(counter)
        )
        run = LibraryRun(adapter, context, lambda _cases: None, strict_errors=strict_errors)
        return run.ask([request])
