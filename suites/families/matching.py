"""Matching family: a subscription receives a subject iff the reference says its pattern matches.

"Subject-Based Messaging" (docs.nats.io, nats-concepts), "Wildcards": `*` matches one token, `>` one or
more at the end. One unit is a set of subscription patterns and the subjects published under them. In
one unit in four some patterns are subscribed in a queue group of their own, whose one member receives
every message a subscription of the same subject would ("Queue Groups",
https://docs.nats.io/nats-concepts/core-nats/queue: a group's members share its messages). One unit in
ten also publishes a few of its subjects, some with a wildcard or an empty token, one by one on a
pedantic connection, which the server must refuse exactly those that are no literal subject (section
"Pedantic mode", `reference.subjects.is_pedantic_valid`). One unit in eight also publishes, on its plain
connection, one or two of its subjects with an empty token, which are no subject: no subscription
receives them (`reference.subjects.is_message_subject`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from hypothesis import strategies as st

from nats_conformance.fixtures.clients.wire import WireError
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import Case, CaseBlock, text_array
from nats_conformance.reference.matching import SubjectIndex
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.subjects import is_message_subject, is_pedantic_valid
from nats_conformance.suites.engine.family import Description, Judged, TargetServer
from nats_conformance.suites.engine.verdicts import (
    CRASH,
    DUPLICATED,
    NOT_ARRIVED,
    UNEXPECTED,
    RunContext,
    agreeing_block,
    make_case,
)
from nats_conformance.suites.harness import SubscriptionObservation, observe_subscriptions, pedantic_refusals
from nats_conformance.suites.strategies import below, hollow_subjects, matching_batches, pedantic_subjects

PEDANTIC: Final = "pedantic"
"""The `functions` of a pedantic probe's cases."""
QUEUE: Final = "queue"
"""In a case's `functions`: its pattern was subscribed in a queue group of its own."""


def wildcard_kinds(pattern: str) -> tuple[str, ...]:
    """The wildcards a pattern uses, as the `functions` column of its cases: ``partial`` for ``*``,
    ``full`` for a final ``>`` (empty for a literal pattern)."""
    tokens = pattern.split(".")
    kinds = []
    if "*" in tokens:
        kinds.append("partial")
    if tokens[-1] == ">":
        kinds.append("full")
    return tuple(kinds)


def observed_match(subject: str, expected: str, arrived: list[str], confirmed: bool) -> tuple[str, str]:
    """What a subscription's deliveries of `subject` say (``match``, ``no-match``, ``match|match``...)
    and how that differs from `expected` ('' when it does not; ``unknown`` when nothing arrived from a
    publication that was not confirmed)."""
    observed = "|".join("match" if got == subject else f"match:{got}" for got in arrived) or "no-match"
    if not arrived and not confirmed:
        return "", "unknown"
    if observed == expected:
        return observed, ""
    if not arrived:
        return observed, NOT_ARRIVED
    if expected == "no-match":
        return observed, UNEXPECTED
    return observed, DUPLICATED if len(arrived) > 1 else "wrong-subject"


def judge_matching(
    context: RunContext,
    patterns: Sequence[str],
    subjects: Sequence[str],
    observation: SubscriptionObservation,
    *,
    seed: int = 0,
    duration_us: int = 0,
    crashed: Mapping[tuple[int, int], str] | None = None,
    queued: Sequence[int] = (),
) -> list[Case | CaseBlock]:
    """One case per (pattern, subject): the reference (``SubjectIndex``, built on ``matches``) says
    ``match`` or ``no-match`` (always for a string that is no subject, `is_message_subject`); the
    server delivered the publication to the pattern's subscription once (``match``), never
    (``no-match``), or more often (``match|match``...). Patterns are subscribed in order, subscription
    id = position + 1. A (pattern position, subject position) in `crashed` killed
    the server: a `server-crash` case whose detail is the panic line. The cases that differ come one by
    one, then each pattern's agreeing cases as one block. A pattern at a position in `queued` was
    subscribed in a queue group of its own: the same is expected, and its cases' functions add `QUEUE`."""
    crashed = crashed or {}
    index = SubjectIndex(patterns)
    judged: list[Case | CaseBlock] = []
    kinds = [wildcard_kinds(p) + ((QUEUE,) if slot in queued else ()) for slot, p in enumerate(patterns)]
    agreeing: list[tuple[list[str], list[str]]] = [([], []) for _ in patterns]
    for position, subject in enumerate(subjects):
        matched = index.match(subject) if is_message_subject(subject) else frozenset()
        confirmed = observation.received(position)
        for slot, pattern in enumerate(patterns):
            expected = "match" if pattern in matched else "no-match"
            arrived = observation.subjects_for(slot + 1, position)
            panic = crashed.get((slot, position), "")
            if panic:
                observed, difference, detail = "", CRASH, panic
            elif (
                confirmed and len(arrived) == (expected == "match") and (not arrived or arrived[0] == subject)
            ):
                agreeing[slot][0].append(subject)
                agreeing[slot][1].append(expected)
                continue
            else:
                observed, difference = observed_match(subject, expected, arrived, confirmed)
                detail = observation.failure if difference == "unknown" else ""
            judged.append(
                make_case(
                    context,
                    feature="matching",
                    functions=kinds[slot],
                    source=pattern,
                    destination="",
                    subject=subject,
                    expected=expected,
                    observed=observed,
                    difference=difference,
                    detail=detail,
                    seed=seed,
                    duration_us=duration_us,
                )
            )
    for slot, (agreed, expected_texts) in enumerate(agreeing):
        if agreed:
            judged.append(
                agreeing_block(
                    context,
                    feature="matching",
                    functions=kinds[slot],
                    source=patterns[slot],
                    destination="",
                    subjects=text_array(agreed),
                    expected=text_array(expected_texts),
                    seed=seed,
                    duration_us=duration_us,
                )
            )
    return judged


@dataclass(frozen=True, slots=True)
class Subscriptions:
    patterns: tuple[str, ...]
    subjects: tuple[str, ...]
    seed: int = 0
    pedantic: tuple[str, ...] = ()
    """Subjects published one by one on a pedantic connection (`pedantic_refusals`)."""
    queued: tuple[int, ...] = ()
    """Positions of the patterns subscribed in a queue group of their own (`QUEUE`)."""

    @property
    def warm(self) -> bool:
        """Whether the subjects are published once before the subscriptions (`observe_subscriptions`):
        not in a unit with queue groups, whose results the server then matches anew, with its queue
        groups (a warm cache's results are only added to)."""
        return not self.queued


@dataclass(frozen=True, slots=True)
class Observed:
    deliveries: SubscriptionObservation
    duration_us: int
    refused: tuple[bool, ...] = ()
    """Of each `Subscriptions.pedantic` subject, whether the server answered it as an invalid one (False,
    never read, for a subject in `pedantic_crashed`: it keeps the later subjects at their positions)."""
    pedantic_failure: str = ""
    crashed: Mapping[tuple[int, int], str] = field(default_factory=dict)
    """(pattern position, subject position) -> the panic line of the server it killed."""
    pedantic_crashed: Mapping[int, str] = field(default_factory=dict)
    """Pedantic subject position -> the panic line of the server its publication killed."""


CULPRITS: Final = 4
"""How many (pattern, subject) pairs that kill the server `observe_after_crash` looks for one by one in a
unit; past them, a pattern that still kills it has the subjects of its last run judged crashes."""


def _alone(
    session: Session, unit: Subscriptions, slot: int, subjects: Sequence[str]
) -> tuple[SubscriptionObservation, str]:
    """The observation of `unit`'s pattern at `slot` alone with `subjects`, as the unit observes it
    (`observe_subscriptions`, `Subscriptions.warm`, in a queue group if it was), and the panic line if
    the server died of it (then restarted)."""
    queued = (0,) if slot in unit.queued else ()
    pattern = unit.patterns[slot]
    seen = observe_subscriptions(session.url, (pattern,), subjects, warm=unit.warm, queued=queued)
    return seen, session.crash_of(seen.failure) if seen.failure else ""


def _culprit(session: Session, unit: Subscriptions, slot: int, positions: list[int]) -> int | None:
    """The position among `positions` (which kill the server beside the pattern at `slot`) of one
    subject that kills it alone, found by halving; None when only several together do, or none is left
    (the pattern kills the server with no subject at all: its subscription)."""
    subjects = unit.subjects
    if not positions:
        return None
    while len(positions) > 1:
        half = positions[: len(positions) // 2]
        killed = _alone(session, unit, slot, [subjects[i] for i in half])[1]
        positions = half if killed else positions[len(half) :]
    return positions[0] if _alone(session, unit, slot, [subjects[positions[0]]])[1] else None


def observe_after_crash(
    session: Session, unit: Subscriptions
) -> tuple[SubscriptionObservation, dict[tuple[int, int], str]]:
    """After `unit` killed the server: each pattern runs alone with the unit's subjects, and while
    that kills the server, the subject that does (`_culprit`) is judged the crash and left out; so every
    case ends in a verdict, and the crash goes to a (pattern, subject) whose replay kills the server
    again. A run that fails with the server alive leaves the unit's other cases unknown."""
    merged = SubscriptionObservation(published=len(unit.subjects))
    crashed: dict[tuple[int, int], str] = {}
    for slot in range(len(unit.patterns)):
        positions = list(range(len(unit.subjects)))
        for _ in range(CULPRITS + 1):
            seen, panic = _alone(session, unit, slot, [unit.subjects[i] for i in positions])
            if not panic:
                break
            culprit = _culprit(session, unit, slot, positions) if len(crashed) < CULPRITS else None
            if culprit is None:
                crashed.update(((slot, position), panic) for position in positions)
                seen, panic = SubscriptionObservation(), ""
                break
            crashed[(slot, culprit)] = panic
            positions.remove(culprit)
        if seen.failure and not panic:
            return SubscriptionObservation(failure=seen.failure), crashed
        for (_, index), arrived in seen.deliveries.items():
            merged.deliveries[(slot + 1, positions[index])] = arrived
    return merged, crashed


PEDANTIC_ONE_IN: Final = 10
"""Units with a pedantic probe: one in ten (a few round trips each)."""
QUEUED_ONE_IN: Final = 4
"""Units with queue subscriptions: one in four, every second pattern from a drawn one on."""
HOLLOW_ONE_IN: Final = 8
"""Units that also publish subjects with an empty token (`hollow_subjects`): one in eight. Of 2.14.10's
``Sublist.match``, mutants 972 (which skips a first empty token) and 981 (which takes an empty token for
one) deliver them."""


@st.composite
def matching_units(draw: st.DrawFn) -> Subscriptions:
    """`matching_batches`, and in one unit in `PEDANTIC_ONE_IN` a few of its subjects for a pedantic
    connection (`pedantic_subjects`: wildcard, empty and near-miss tokens); in one unit in
    `QUEUED_ONE_IN`, every second pattern from a drawn one on is subscribed in a queue group of its own
    (a pattern that alone has interest in a subject is then one of a queue group); in one unit in
    `HOLLOW_ONE_IN`, one or two of its subjects with an empty token published after the others."""
    patterns, subjects = draw(matching_batches())
    seed = draw(st.integers(0, 2**31))
    probe = subjects and draw(below(PEDANTIC_ONE_IN)) == 0
    pedantic = draw(pedantic_subjects(subjects)) if probe else ()
    queued: tuple[int, ...] = ()
    if draw(below(QUEUED_ONE_IN)) == 0:
        queued = tuple(range(draw(below(len(patterns))), len(patterns), 2))
    if subjects and draw(below(HOLLOW_ONE_IN)) == 0:
        subjects = list(dict.fromkeys([*subjects, *draw(hollow_subjects(subjects))]))
    return Subscriptions(tuple(patterns), tuple(subjects), seed, pedantic, queued)


def pedantic_after_crash(
    session: Session, subjects: Sequence[str]
) -> tuple[tuple[bool, ...], dict[int, str], str]:
    """After the pedantic probe killed the server: each subject published alone (`pedantic_refusals`);
    one whose publication kills the server again is judged the crash (its panic line), so every subject
    ends in a verdict. A failure with the server alive ends the probe there (the rest unknown, with it)."""
    refused: list[bool] = []
    crashed: dict[int, str] = {}
    for index, subject in enumerate(subjects):
        try:
            refused += pedantic_refusals(session.url, (subject,))
        except WireError as error:
            panic = session.crash_of(str(error))
            if not panic:
                return tuple(refused), crashed, str(error)
            crashed[index] = panic
            refused.append(False)
    return tuple(refused), crashed, ""


def judge_pedantic(context: RunContext, unit: Subscriptions, observed: Observed) -> list[Case]:
    """One case per pedantic subject: the server answers ``-ERR 'Invalid Publish Subject'`` iff the
    reference says pedantic mode refuses it (`is_pedantic_valid`, document section "Pedantic mode"); a
    subject whose publication killed the server is a `server-crash`."""
    judged: list[Case] = []
    for index, subject in enumerate(unit.pedantic):
        expected = "accept" if is_pedantic_valid(subject) else "reject"
        detail = ""
        if index in observed.pedantic_crashed:
            seen, difference, detail = "", CRASH, observed.pedantic_crashed[index]
        elif index < len(observed.refused):
            seen = "reject" if observed.refused[index] else "accept"
            difference = "" if seen == expected else f"reference-{expected}-server-{seen}"
        else:
            seen, difference, detail = "", "unknown", observed.pedantic_failure
        judged.append(
            make_case(
                context,
                feature="matching",
                functions=(PEDANTIC,),
                source="",
                destination="",
                subject=subject,
                expected=expected,
                observed=seen,
                difference=difference,
                detail=detail,
                seed=unit.seed,
            )
        )
    return judged


@dataclass(frozen=True, slots=True)
class MatchingFamily(TargetServer):
    name: str = "matching"
    description: Description = Description(
        "subscriptions with `*`/`>` and boundary subjects",
        20_000,
    )
    features: tuple[str, ...] = ("matching",)

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[Subscriptions]:
        return matching_units()

    def execute(self, session: Session, unit: Subscriptions) -> Observed:
        session.clear()
        began = time.perf_counter()
        deliveries = observe_subscriptions(
            session.url, unit.patterns, unit.subjects, warm=unit.warm, queued=unit.queued
        )
        crashed: dict[tuple[int, int], str] = {}
        # A server ended from outside (no panic in its log) raises ServerDiedError: the engine
        # restarts it and journals the restart, instead of every later unit failing to connect.
        if deliveries.failure and session.crash_of(deliveries.failure):
            deliveries, crashed = observe_after_crash(session, unit)
        pairs = max(1, len(unit.patterns) * len(unit.subjects))
        duration_us = int((time.perf_counter() - began) * 1e6 / pairs)
        if not unit.pedantic:
            return Observed(deliveries, duration_us, crashed=crashed)
        try:
            refused = tuple(pedantic_refusals(session.url, unit.pedantic))
        except WireError as error:
            if not session.crash_of(str(error)):
                return Observed(deliveries, duration_us, pedantic_failure=str(error), crashed=crashed)
            refused, killed, failure = pedantic_after_crash(session, unit.pedantic)
            return Observed(deliveries, duration_us, refused, failure, crashed, killed)
        return Observed(deliveries, duration_us, refused, crashed=crashed)

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: Subscriptions, observed: Observed
    ) -> Judged:
        return judge_matching(
            context,
            unit.patterns,
            unit.subjects,
            observed.deliveries,
            seed=unit.seed,
            duration_us=observed.duration_us,
            crashed=observed.crashed,
            queued=unit.queued,
        ) + judge_pedantic(context, unit, observed)

    def unknown(
        self, context: RunContext, profile: ReleaseProfile, unit: Subscriptions, reason: str
    ) -> Judged:
        """Every (pattern, subject) case of the unit, none observed."""
        unobserved = Observed(SubscriptionObservation(failure=reason), 0, pedantic_failure=reason)
        return judge_matching(
            context, unit.patterns, unit.subjects, unobserved.deliveries, seed=unit.seed, queued=unit.queued
        ) + judge_pedantic(context, unit, unobserved)

    def unit_of(self, case: CaseFile) -> Subscriptions:
        if case.functions == PEDANTIC:
            return Subscriptions((), (), pedantic=(case.subject,))
        queued = (0,) if QUEUE in case.functions.split("+") else ()
        return Subscriptions((case.source,), (case.subject,), queued=queued)
