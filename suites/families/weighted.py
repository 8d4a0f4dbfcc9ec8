"""Weighted family: each message lands on one of the list's destinations, in the list's shares.

"Subject Mapping and Partitioning" (docs.nats.io, nats-concepts), "Weighted Mappings" (for A/B testing,
canary releases and artificial loss). One unit is one weighted list with enough messages to test its
shares (`suites.weighted`). The server is in a cluster of one (`CLUSTER`), so that lists with
cluster-scoped entries (`clustered_lists`, one list in four) select by it, and one list of one entry in
three is written as that entry alone (``source: {destination: D, weight: W%}``). With `refused_only`
every list is one the server must refuse (`refused_lists`, one case each).
With `operator` the lists are pushed in account JWTs, with no weight of 0 (which a JWT cannot hold,
`fixtures.operator.mappings_claim`) and no single-entry form (a JWT holds lists).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import strategies as st

from fixtures.config import ServerConfig
from fixtures.servers.base import Backend
from fixtures.session import Session
from records.casefile import CaseFile
from reference.profiles import ReleaseProfile
from reference.weighted import WeightedDestination
from suites.engine.family import Judged, TargetServer, in_operator_mode
from suites.engine.verdicts import RunContext
from suites.strategies import mostly
from suites.subscriptions import SubscriptionObservation
from suites.weighted import (
    CLUSTER,
    SINGLE_STEP,
    WeightedObservation,
    WeightedRun,
    clustered_lists,
    execute_weighted,
    judge_weighted,
    message_count,
    refused_lists,
    subjects_for,
    weighted_lists,
)


@dataclass(frozen=True, slots=True)
class WeightedFamily(TargetServer):
    name: str = "weighted"
    summary: str = (
        "one weighted list, with enough messages to test its shares, on a server in a cluster of one "
        "(`nc`): one list in four has entries scoped to that cluster or another, and one list of one "
        "entry in three is written as that entry alone"
    )
    features: tuple[str, ...] = ("weighted",)
    budget: int = 10_000
    operator: bool = False
    refused_only: bool = False
    """Draw only lists the server must refuse (one case each), for a small budget that valid lists
    (hundreds of messages each) would use up in a unit or two."""

    def server_for(self, server: Backend) -> Backend:
        return in_operator_mode(server, self.operator)

    def base_config(self, server: Backend) -> ServerConfig:
        return ServerConfig(cluster_name=CLUSTER)

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[WeightedRun]:
        def run(drawn: tuple[str, tuple[WeightedDestination, ...]], seed: int, single: bool) -> WeightedRun:
            source, entries = drawn
            count = message_count(source, entries, profile, CLUSTER)
            subjects = tuple(subjects_for(source, count, random.Random(seed)))
            return WeightedRun(source, entries, subjects, seed, CLUSTER, single and len(entries) == 1)

        valid = mostly(
            weighted_lists(profile, zero_weights=not self.operator), clustered_lists(profile), one_in=4
        )
        single = st.just(False) if self.operator else mostly(st.just(False), st.just(True), one_in=3)
        lists = refused_lists(profile, zero_weights=not self.operator) if self.refused_only else valid
        return st.builds(run, lists, st.integers(0, 2**32 - 1), single)

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
        """The case's list, with its subject published often enough to see the shares, on a server of
        the family's cluster."""
        subject = case.subject or case.source
        single = SINGLE_STEP in case.steps
        return WeightedRun(case.source, case.weights, (subject,) * 1_000, cluster=CLUSTER, single=single)
