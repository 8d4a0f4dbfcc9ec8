"""Weighted family: each message lands on one of the list's destinations, in the list's shares.

"Subject Mapping and Partitioning" (docs.nats.io, nats-concepts), "Weighted Mappings" (for A/B testing,
canary releases and artificial loss). One unit is one weighted list with enough messages to test its
shares (`suites.weighted`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import strategies as st

from fixtures.session import Session
from records.casefile import CaseFile
from reference.profiles import ReleaseProfile
from reference.weighted import WeightedDestination
from suites.engine.family import Judged, TargetServer
from suites.engine.verdicts import RunContext
from suites.subscriptions import SubscriptionObservation
from suites.weighted import (
    WeightedObservation,
    WeightedRun,
    execute_weighted,
    judge_weighted,
    message_count,
    subjects_for,
    weighted_lists,
)


@dataclass(frozen=True, slots=True)
class WeightedFamily(TargetServer):
    name: str = "weighted"
    features: tuple[str, ...] = ("weighted",)
    budget: int = 10_000

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[WeightedRun]:
        def run(drawn: tuple[str, tuple[WeightedDestination, ...]], seed: int) -> WeightedRun:
            source, entries = drawn
            count = message_count(source, entries, profile)
            return WeightedRun(source, entries, tuple(subjects_for(source, count, random.Random(seed))), seed)

        return st.builds(run, weighted_lists(profile), st.integers(0, 2**32 - 1))

    def execute(self, session: Session, unit: WeightedRun) -> WeightedObservation:
        return execute_weighted(session, unit)

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: WeightedRun, observed: WeightedObservation
    ) -> Judged:
        return judge_weighted(context, profile, unit, observed).all_cases

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: WeightedRun, reason: str) -> Judged:
        """Every message's case and the shares' case, none observed."""
        observed = WeightedObservation(deliveries=SubscriptionObservation(failure=reason))
        return judge_weighted(context, profile, unit, observed).all_cases

    def unit_of(self, case: CaseFile) -> WeightedRun:
        """The case's list, with its subject published often enough to see the shares."""
        subject = case.subject or case.source
        return WeightedRun(case.source, case.weights, (subject,) * 1_000)
