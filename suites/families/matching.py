"""Matching family: a subscription receives a subject iff the reference says its pattern matches.

"Subject-Based Messaging" (docs.nats.io, nats-concepts), "Wildcards": `*` matches one token, `>` one or
more at the end. One unit is a set of subscription patterns and the subjects published under them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hypothesis import strategies as st

from fixtures.session import Session
from records.casefile import CaseFile
from reference.profiles import ReleaseProfile
from suites.engine.family import Judged, TargetServer
from suites.engine.verdicts import RunContext
from suites.strategies import matching_batches
from suites.subscriptions import SubscriptionObservation, judge_matching, observe_subscriptions


@dataclass(frozen=True, slots=True)
class Subscriptions:
    patterns: tuple[str, ...]
    subjects: tuple[str, ...]
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Observed:
    deliveries: SubscriptionObservation
    duration_us: int


@dataclass(frozen=True, slots=True)
class MatchingFamily(TargetServer):
    name: str = "matching"
    summary: str = "subscriptions with `*`/`>` and boundary subjects"
    features: tuple[str, ...] = ("matching",)
    budget: int = 20_000

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[Subscriptions]:
        return st.builds(
            lambda drawn, seed: Subscriptions(tuple(drawn[0]), tuple(drawn[1]), seed),
            matching_batches(),
            st.integers(0, 2**31),
        )

    def execute(self, session: Session, unit: Subscriptions) -> Observed:
        session.clear()
        began = time.perf_counter()
        deliveries = observe_subscriptions(session.url, unit.patterns, unit.subjects)
        if deliveries.failure:
            # A server ended from outside (no panic in its log) raises ServerDiedError: the engine
            # restarts it and journals the restart, instead of every later unit failing to connect.
            session.crash_of(deliveries.failure)
        pairs = max(1, len(unit.patterns) * len(unit.subjects))
        return Observed(deliveries, int((time.perf_counter() - began) * 1e6 / pairs))

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
        )

    def unknown(
        self, context: RunContext, profile: ReleaseProfile, unit: Subscriptions, reason: str
    ) -> Judged:
        """Every (pattern, subject) case of the unit, none observed."""
        return judge_matching(
            context, unit.patterns, unit.subjects, SubscriptionObservation(failure=reason), seed=unit.seed
        )

    def unit_of(self, case: CaseFile) -> Subscriptions:
        return Subscriptions((case.source,), (case.subject,))
