"""Overlap family: sequences of configurations whose mapping sources overlap, changed by reload, restart
or account JWT push, with every subject checked after each step.

docs.nats.io, "Subject Mapping and Partitioning" (nats-concepts/subject_mapping): its introduction says a
changed mapping takes effect on a configuration reload, and in operator mode as soon as the updated
account JWT is pushed; the page is silent on a subject several sources match, so any of their subjects is
right (`reference.overlap`). One unit is a sequence: a first configuration of two to four mappings with
overlapping sources, then one to three steps that keep it, redirect a source, drop or add a mapping, each
applied by reload (or JWT push in operator mode) or by restart. After every step each of the unit's
subjects is published once under a ``>`` subscription.

A subject's case after a step agrees when it arrived once on one of its candidates. Otherwise its
difference is `stale-mapping-after-<how>` (it went where a mapping no longer in force sends it),
`winner-changed-after-<how>` (the configuration is one an earlier step had, and the server picked
another candidate than it did then), `not-delivered`, `duplicated` or `not-a-candidate`.
Every case carries the whole sequence in `steps`, so its replay runs the sequence for its one subject.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

from nats_conformance.fixtures.config import Account, Mapping, ServerConfig
from nats_conformance.fixtures.errors import ServerDiedError, ServerError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import Case
from nats_conformance.records.unknowns import NOTHING_OBSERVED, STEP_UNOBSERVED, stated, unstated
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.overlap import candidates, matching
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.transform import Transform, compile_transform
from nats_conformance.suites.engine.family import (
    Description,
    Judged,
    Schedule,
    TargetServer,
    beside,
    in_operator_mode,
)
from nats_conformance.suites.engine.verdicts import (
    DUPLICATED,
    NOT_ARRIVED,
    RunContext,
    judged_as,
    make_case,
    rejection_case,
)
from nats_conformance.suites.harness import SubscriptionObservation, observe_subscriptions
from nats_conformance.suites.strategies import bulk_subjects, mostly

FEATURE = "overlap"
NAMESPACE = "ov"
DESTINATIONS = "od"
SOURCE_TOKENS = ("a", "b", "*")
SUBJECT_TOKENS = ("a", "b", "c")
"""Sources are `ov.` and up to three of a, b, * (and maybe a final >); subjects use a, b and c, so that
most match two or more sources and some match none."""

CONFIGURE = "configure"
PUSH = "push"
RESTART = "restart"
CHANGES = ("same", "same", "redirect", "drop", "add")
"""How a step changes the configuration: kept (twice as often: a changed pick shows only on a
configuration seen before), a source sent elsewhere, a mapping removed, one added."""

SUBJECTS_PER_SOURCE = 3


@dataclass(frozen=True, slots=True)
class Step:
    """One configuration of the sequence and how it was put in force: `configure` (the first), `reload`,
    `push` (an account JWT, operator mode) or `restart`."""

    how: str
    mappings: tuple[tuple[str, str], ...]

    @property
    def config_mappings(self) -> tuple[Mapping, ...]:
        return tuple(Mapping(source, destination) for source, destination in self.mappings)

    def to_json(self) -> str:
        return json.dumps({"how": self.how, "mappings": [list(m) for m in self.mappings]})

    @classmethod
    def from_json(cls, text: str) -> Step:
        document = json.loads(text)
        return cls(str(document["how"]), tuple((str(s), str(d)) for s, d in document["mappings"]))


@dataclass(frozen=True, slots=True)
class OverlapRun:
    steps: tuple[Step, ...]
    subjects: tuple[str, ...]
    seed: int = 0


@dataclass(frozen=True, slots=True)
class StepObservation:
    """What one step did: the server's refusal, a failure that stopped the sequence, or the deliveries."""

    rejection: str = ""
    failure: str = ""
    deliveries: SubscriptionObservation | None = None


def destination_for(source: str, tag: str, *, named: bool, reverse: bool) -> str:
    """A destination of its own (`od.<tag>`) that keeps every wildcard of `source`: `$n` or
    `{{wildcard(n)}}`, in source order or reversed, and a final `>` for a source ending in one."""
    refs = list(range(1, source.split(".").count("*") + 1))
    if reverse:
        refs.reverse()
    tokens = [DESTINATIONS, tag, *(f"{{{{wildcard({n})}}}}" if named else f"${n}" for n in refs)]
    return ".".join([*tokens, *([">"] if source.endswith(">") else [])])


def sources() -> st.SearchStrategy[str]:
    """`ov.` and one to three of a, b and *; about one in four (and every empty one) ends in >."""

    def source(body: list[str], tail: bool) -> str:
        return ".".join([NAMESPACE, *body, *([">"] if tail or not body else [])])

    tail = mostly(st.just(False), st.just(True), one_in=4)
    return st.builds(source, st.lists(st.sampled_from(SOURCE_TOKENS), max_size=3), tail)


SOURCES = sources()
"""Built once: a strategy built for each draw is validated again each time (a third of the drawing of a
sequence)."""
FIRST_SOURCES = st.lists(SOURCES, min_size=2, max_size=4, unique=True)


@functools.cache
def step_hows(hows: tuple[str, ...]) -> st.SearchStrategy[str]:
    """How a step goes in force: mostly the first of `hows`, one in four another (built once each)."""
    return mostly(st.just(hows[0]), st.sampled_from(hows[1:]), one_in=4)


def subjects_for(all_sources: list[str], rng: random.Random) -> tuple[str, ...]:
    """A few subjects of each source (a, b or c at each wildcard, one to three at a >) and one of no
    source's shape, without repeats."""
    out = [
        s
        for source in all_sources
        for s in bulk_subjects(source, rng, SUBJECTS_PER_SOURCE, pool=SUBJECT_TOKENS)
    ]
    out.append(".".join([NAMESPACE, *rng.choices(SUBJECT_TOKENS, k=4)]))
    return tuple(dict.fromkeys(out))


def _not_in(taken: frozenset[str]) -> Callable[[str], bool]:
    """A filter that keeps the sources not in `taken`."""
    return lambda source: source not in taken


@st.composite
def overlap_runs(draw: st.DrawFn, profile: ReleaseProfile, hows: tuple[str, ...]) -> OverlapRun:
    """Two to four distinct overlapping sources, then one to three steps, each applied by one of `hows`
    (mostly the first, a restart about one step in four). Shrinks to two mappings kept once."""
    named = "wildcard" in profile.mapping_functions

    def mapping(source: str, tag: str) -> tuple[str, str]:
        style = draw(st.booleans()) and named, draw(st.booleans())
        return source, destination_for(source, tag, named=style[0], reverse=style[1])

    drawn = draw(FIRST_SOURCES, label="sources")
    current = [mapping(source, f"m{i}") for i, source in enumerate(drawn)]
    steps = [Step(CONFIGURE, tuple(current))]
    seen = list(drawn)
    for number in range(1, draw(st.integers(1, 3), label="steps") + 1):
        how = draw(step_hows(hows))
        change = draw(st.sampled_from(CHANGES))
        if change == "redirect":
            index = draw(st.integers(0, len(current) - 1))
            current[index] = mapping(current[index][0], f"m{index}s{number}")
        elif change == "drop" and len(current) > 1:
            current.pop(draw(st.integers(0, len(current) - 1)))
        elif change == "add":
            source = draw(SOURCES.filter(_not_in(frozenset(dict(current)))))
            seen.append(source)
            current.append(mapping(source, f"n{number}"))
        steps.append(Step(how, tuple(current)))
    seed = draw(st.integers(0, 2**32 - 1))
    return OverlapRun(tuple(steps), subjects_for(seen, random.Random(seed)), seed)


@dataclass(frozen=True, slots=True)
class OverlapFamily(TargetServer):
    """Sequences applied by configuration reload, or with `operator` by account JWT push (the server of
    a target this suite starts, in operator mode)."""

    name: str = "overlap"
    description: Description = Description(
        "two to four mappings with overlapping sources, then one to three steps (kept, a source "
        "redirected, a mapping dropped or added) by reload or restart, every subject published after "
        "each",
        3_000,
    )
    features: tuple[str, ...] = (FEATURE,)
    operator: bool = False
    accounts: itertools.count[int] = field(default_factory=itertools.count, compare=False)
    """Numbers the accounts (or, in operator mode, the namespaces) of sequences run side by side: each
    sequence starts in one no earlier configuration held, since a server may keep what an account or a
    mapping it dropped had (a number is never used twice in a process, rather than only unlike those in
    force)."""

    @property
    def schedule(self) -> Schedule[Session]:
        """32 sequences a batch, sharing its reloads (`execute_many`)."""
        return Schedule(beside, 32, rolling=False, together=self.execute_many)

    def server_for(self, server: Backend) -> Backend:
        return in_operator_mode(server, self.operator)

    def base_config(self, server: Backend) -> ServerConfig:
        """An account of the default user's, beside which the sequences of a batch each run in an account
        of their own (`execute_many`); none in operator mode, whose sequences share the test account."""
        return ServerConfig() if self.operator else ServerConfig(accounts=(Account("base"),))

    def unsupported(self, version: str, backend: str) -> str:
        if backend == "external":
            return "a sequence restarts the server, which needs one this suite starts"
        return ""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[OverlapRun]:
        return overlap_runs(profile, (PUSH, RESTART) if self.operator else ("reload", RESTART))

    def execute(self, session: Session, unit: OverlapRun) -> tuple[StepObservation, ...]:
        """The sequence alone: a batch of one (`execute_many`)."""
        (outcome,) = self.execute_many(session, [unit])
        if isinstance(outcome, ServerError):
            raise outcome
        return outcome

    def execute_many(
        self, session: Session, units: Sequence[OverlapRun]
    ) -> list[tuple[StepObservation, ...] | ServerError]:
        """Sequences run together, each apart from the others, one reload, push or restart putting a step
        of several in force at once, then each one's subjects published. Each sequence is apart in an
        account of its own beside the base one (`Session.configure_apart`, its subjects published as its
        account's user), or with no base account (operator mode: one test account, whose JWT every step
        pushes) in a namespace of its own (`numbered`: `ov7.` and `od7.` for `ov.` and `od.`, no source of
        one matching a subject of another; `Session.apply_apart`), its deliveries read back as the
        sequence alone publishes them. Every change of the server is a step of each sequence the server
        then holds, so that each sees the changes it sees alone (`_Walk.walk`). A sequence whose step the
        server refuses, or whose observation fails, stops there (its mappings leave the configuration). A
        server error ends the batch, a server found dead among several sequences too: the sequences not
        yet ended get it, and each runs again alone (`suites.engine.family.check_many`). Sequences that go
        on in more than one way besides restarts (a known case recorded by the other overlap family
        among drawn ones) each run alone: no change may put a reload's step and a push's in force."""
        ways = {step.how for unit in units for step in unit.steps[1:]} - {RESTART}
        if len(units) > 1 and len(ways) > 1:
            return [outcome for unit in units for outcome in self.execute_many(session, [unit])]
        walk = _Walk(session, units, [str(next(self.accounts)) for _ in units])
        try:
            walk.walk()
        except ServerError as error:
            return [tuple(walk.observed[i]) if i in walk.ended else error for i in range(len(units))]
        return [tuple(steps) for steps in walk.observed]

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: OverlapRun, reason: str) -> Judged:
        return self.judge(context, profile, unit, (StepObservation(failure=reason),))

    def judge(
        self,
        context: RunContext,
        profile: ReleaseProfile,
        unit: OverlapRun,
        observed: tuple[StepObservation, ...],
    ) -> Judged:
        """Every subject after every step. After a step the server refused, the subjects of it and of the
        steps not run take the refusal's judgement: what the server did is refuse, and the refusal's
        case judges it against the reference (its difference, verdict and expectation). After a step
        that failed (no answer, a lost connection), they are `unknown`, with the reason."""
        steps = tuple(step.to_json() for step in unit.steps)
        cases: list[Case] = []
        # per configuration, the candidate each subject arrived on when it was first in force
        picks: dict[frozenset[tuple[str, str]], dict[str, str]] = {}
        earlier: list[Transform] = []
        stopped = ""
        refusal: Case | None = None
        """The judged refusal that stopped the sequence, if one did."""
        for number, step in enumerate(unit.steps):
            transforms = [compile_transform(s, d, profile) for s, d in step.mappings]
            seen = observed[number] if number < len(observed) else StepObservation(failure=stopped)
            if seen.rejection:
                functions = tuple(dict.fromkeys(f for t in transforms for f in t.functions))
                rejected = rejection_case(
                    context,
                    functions=functions,
                    source=" ".join(s for s, _ in step.mappings),
                    destination=" ".join(d for _, d in step.mappings),
                    server_message=seen.rejection,
                    seed=unit.seed,
                )
                cases.append(replace(rejected, steps=steps))
                seen = StepObservation(failure=f"the server refused the configuration: {seen.rejection}")
                refusal = refusal if stopped else rejected
            deliveries = seen.deliveries
            why = seen.failure or (deliveries.failure if deliveries is not None else "")
            if why and not stopped:
                stopped = stated(
                    STEP_UNOBSERVED, f"not run: step {number} ({step.how}) did not complete: {unstated(why)}"
                )
            pick = picks.setdefault(frozenset(step.mappings), {})
            for index, subject in enumerate(unit.subjects):
                arrived = deliveries.subjects_for(1, index) if deliveries is not None else []
                if deliveries is None or not deliveries.received(index):
                    difference = "unknown"
                else:
                    difference = difference_of(subject, arrived, transforms, earlier, step.how)
                    if not difference and pick.setdefault(subject, arrived[0]) != arrived[0]:
                        difference = f"winner-changed-after-{step.how}"
                judged_by = refusal if difference == "unknown" and deliveries is None else None
                detail = (why or "not published") if difference == "unknown" else ""
                case = self._case(
                    context,
                    transforms=transforms,
                    subject=subject,
                    arrived=arrived,
                    difference=judged_by.difference if judged_by else difference,
                    detail=unstated(detail) if judged_by else detail,
                    reason="" if why else NOTHING_OBSERVED,
                    seed=unit.seed,
                )
                if judged_by is not None:
                    case = judged_as(case, judged_by)
                cases.append(replace(case, steps=steps))
            earlier += transforms
        return cases

    def _case(
        self,
        context: RunContext,
        *,
        transforms: list[Transform],
        subject: str,
        arrived: list[str],
        difference: str,
        seed: int,
        detail: str = "",
        reason: str = "",
    ) -> Case:
        """A subject's case: its source and destination are those of the mappings matching it; `detail`
        and `reason` say what an `unknown` one is missing (`make_case`)."""
        chosen = matching(transforms, subject)
        return make_case(
            context,
            feature=FEATURE,
            functions=tuple(dict.fromkeys(f for t in chosen for f in t.functions)),
            source=" ".join(t.source for t in chosen),
            destination=" ".join(t.destination for t in chosen),
            subject=subject,
            expected="|".join(candidates(transforms, subject)),
            observed="|".join(arrived),
            difference=difference,
            detail=detail,
            reason=reason,
            seed=seed,
        )

    def unit_of(self, case: CaseFile) -> OverlapRun:
        """The case's whole sequence, publishing its one subject after every step."""
        if not case.steps:
            raise MappingError("an overlap case is replayed from its steps (--steps, or its case file)")
        return OverlapRun(tuple(Step.from_json(step) for step in case.steps), (case.subject,))


def numbered(text: str, tag: str) -> str:
    """A subject, source or destination in the namespace `tag`: its first token `ov` or `od` with `tag`
    after it (`ov.a.*` as `ov7.a.*`), so that sequences sharing an account match none of each other's
    subjects."""
    head, dot, rest = text.partition(".")
    return f"{head}{tag}{dot}{rest}" if head in (NAMESPACE, DESTINATIONS) else text


def unnumbered(subject: str, tag: str) -> str:
    """A subject that arrived in the namespace `tag` as the sequence alone would have seen it (a subject
    of any other namespace as it arrived)."""
    head, dot, rest = subject.partition(".")
    for name in (NAMESPACE, DESTINATIONS):
        if head == f"{name}{tag}":
            return f"{name}{dot}{rest}"
    return subject


class _Walk:
    """`OverlapFamily.execute_many`'s walk of a batch's sequences, each apart by its `tags`: its account
    `o<tag>`, or with no base account its namespace (`numbered`)."""

    def __init__(self, session: Session, units: Sequence[OverlapRun], tags: list[str]) -> None:
        self.session = session
        self.units = units
        self.tags = tags
        self.in_accounts = bool(session.base.accounts)
        self.urls = [session.as_user(Account(f"o{tag}").credentials).url for tag in tags if self.in_accounts]
        self.observed: list[list[StepObservation]] = [[] for _ in units]
        self.ended: set[int] = set()

    def walk(self) -> None:
        """Put every sequence's steps in force: first every first configuration at once; then, while some
        sequences go on by reload or push, one such change for all of them, those whose next step is a
        restart leaving the configuration to wait; once none does, one restart for every waiting one,
        whatever step each is at, since a restart keeps nothing of what came before it (a restarted
        server starts from its configuration alone, in operator mode with an empty resolver directory).
        So no sequence sees a change that is not one of its steps, and a batch takes one restart for each
        restart wave rather than one for each way of reaching one."""
        now: list[int] = list(range(len(self.units)))
        waiting: list[int] = []
        while now:
            going: list[int] = []
            for index in self._step(now):
                (waiting if self._next(index).how == RESTART else going).append(index)
            now, waiting = (going, waiting) if going else (waiting, [])

    def _next(self, index: int) -> Step:
        """The sequence's step after those it has put in force."""
        return self.units[index].steps[len(self.observed[index])]

    def _step(self, indices: list[int]) -> list[int]:
        """Put the next step of each of the sequences `indices` (steps that go in force the same way) in
        force at once, observe each, and return those that go on."""
        steps = [self._next(index) for index in indices]
        refusals = self._in_force(indices, steps)
        seen = self._observe([index for index, refusal in zip(indices, refusals, strict=True) if not refusal])
        going: list[int] = []
        for index, refusal in zip(indices, refusals, strict=True):
            unit, observed = self.units[index], self.observed[index]
            if refusal:
                observed.append(StepObservation(rejection=refusal))
            else:
                observed.append(StepObservation(deliveries=seen[index]))
            if _failure_of(observed[-1]) or refusal or len(observed) == len(unit.steps):
                self.ended.add(index)
            else:
                going.append(index)
        failures = [_failure_of(self.observed[index][-1]) for index in indices]
        _restart_if_dead(self.session, next((failure for failure in failures if failure), ""), len(indices))
        return going

    def _in_force(self, indices: list[int], steps: list[Step]) -> list[str]:
        """Put `steps`, one of each of the sequences `indices`, in force as the first says (a push as is,
        the first configuration and a reload checked, a restart); the server's words for each sequence it
        refused."""
        how = steps[0].how
        if self.in_accounts:
            groups = [
                (Account(f"o{self.tags[index]}", step.config_mappings),)
                for index, step in zip(indices, steps, strict=True)
            ]
            return self.session.configure_apart(groups, restart=how == RESTART)
        parts = [
            tuple(
                Mapping(numbered(s, self.tags[index]), numbered(d, self.tags[index]))
                for s, d in step.mappings
            )
            for index, step in zip(indices, steps, strict=True)
        ]

        def config_of(taken: list[int]) -> ServerConfig:
            return self.session.base.with_mappings(*(mapping for part in taken for mapping in parts[part]))

        return self.session.apply_apart(
            len(parts), config_of, lambda place: None, restart=how == RESTART, as_is=how == PUSH
        )

    def _observe(self, indices: list[int]) -> dict[int, SubscriptionObservation]:
        """Publish the subjects of the sequences `indices` under a `>` subscription: each as its account's
        user, or all at once in their namespaces (none matches another's), each sequence's deliveries read
        back as its own."""
        units = self.units
        if self.in_accounts:
            return {i: observe_subscriptions(self.urls[i], [">"], units[i].subjects) for i in indices}
        places = [(i, number) for i in indices for number in range(len(units[i].subjects))]
        together = observe_subscriptions(
            self.session.url, [">"], [numbered(units[i].subjects[n], self.tags[i]) for i, n in places]
        )
        seen: dict[int, SubscriptionObservation] = {}
        offset = 0
        for i in indices:
            count = len(units[i].subjects)
            published = min(count, max(0, together.published - offset))
            seen[i] = SubscriptionObservation(published=published, failure=together.failure)
            offset += count
        for (sid, index), arrived in together.deliveries.items():
            if index < len(places):  # a number of no publication of this observation is not ours
                i, number = places[index]
                seen[i].deliveries[(sid, number)] = [unnumbered(subject, self.tags[i]) for subject in arrived]
        return seen


def _failure_of(seen: StepObservation) -> str:
    return seen.failure or (seen.deliveries.failure if seen.deliveries else "")


def difference_of(
    subject: str, arrived: list[str], transforms: list[Transform], earlier: list[Transform], how: str
) -> str:
    """What is wrong with where `subject` arrived ('' when it arrived once on a candidate)."""
    allowed = candidates(transforms, subject)
    if len(arrived) == 1 and arrived[0] in allowed:
        return ""
    if not arrived:
        return NOT_ARRIVED
    if all(subject_ in allowed for subject_ in arrived):
        return DUPLICATED
    stale = {t.apply(subject) for t in matching(earlier, subject)} - set(allowed)
    if any(subject_ in stale for subject_ in arrived):
        return f"stale-mapping-after-{how}"
    return "not-a-candidate"


def _restart_if_dead(session: Session, failure: str, running: int = 1) -> None:
    """After a step and its `failure` ('' for none), start a server found dead again, with no mappings; with
    other sequences `running` beside the one that failed, raise `ServerDiedError` instead: each runs again
    alone (`suites.engine.family.check_many`), so that the death goes to the sequence that causes it."""
    if not session.has_died(failure):
        return
    if running > 1:
        raise ServerDiedError(f"the server died during a batch of sequences: {failure}")
    session.restart()
