"""The `cluster-weighted` family: weighted lists with cluster-scoped entries on a super-cluster of two
servers of the target's build (`fixtures.servers.cluster`), each its own cluster (`east`, `west`)
joined by a gateway, every list's subjects published on each server and observed on `east`.

"cluster: If specified, the destination is cluster-scoped. Messages received by servers within the
named cluster will only consider mappings with the same cluster name. Otherwise, it will fallback to
non-cluster scoped mappings" (docs.nats.io, configuration reference, "mappings" > "cluster",
https://docs.nats.io/reference/config/mappings/cluster), and weights "must add up to 100% on a
per-cluster basis" (".../mappings/weight"; the release range is `reference.weighted`'s). So one list,
the same on both servers, is judged twice: what `east` publishes by `east`'s entries, what `west`
publishes by `west`'s, each by the unscoped entries when its cluster has none. A message mapped on
`west` crosses the gateway on its mapped subject and is not mapped again on `east` (observed, as over a
route: `suites.families.cluster`).

The weighted family's judging (`suites.families.weighted`): a case per message and one for the shares
per server, the cases of what `west` published with the step ``{"published-on": "west"}``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from nats_conformance.fixtures.config import Mapping
from nats_conformance.fixtures.config import WeightedDestination as ConfigEntry
from nats_conformance.fixtures.errors import ConfigRejectedError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.cluster import ClusterBackend
from nats_conformance.fixtures.servers.process import ProcessBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.replay import CLUSTER_SUFFIX
from nats_conformance.records.schema import Case, CaseBlock
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.engine.family import Description, Judged, TargetServer
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.weighted import (
    SHAPES,
    WeightedObservation,
    WeightedRun,
    destination_for,
    draw_weights,
    judge_weighted,
    message_count,
    subjects_for,
    weighted_lists,
)
from nats_conformance.suites.harness import Observation, SubscriptionObservation, publish_and_observe

CLUSTERS = ("east", "west")
"""The clusters of the two servers, the first's (where every message is observed) first."""
MESSAGES = 500
"""Messages per list and server at most: the list a server uses shows in each message (no two scopes
share a destination), so fewer than the weighted family's samples leave room for more lists; its
shares are tested with less power than there."""


@st.composite
def scoped_lists(draw: st.DrawFn, profile: ReleaseProfile) -> tuple[str, tuple[WeightedDestination, ...]]:
    """A source and a valid list whose entries are scoped to `east`, `west` or no cluster. From 2.10
    each scope has 0-2 entries of its own whose weights sum to 100 or less (and at least one entry in
    all); before 2.10, whose servers sum the whole list, the weighted family's list with each entry given
    a scope. A cluster with no entry of its own uses the unscoped ones, or loses everything when there
    are none. Shrinks to one entry scoped to `east` before 2.10, to one unscoped entry from 2.10."""
    source, unscoped = draw(weighted_lists(profile, zero_weights=False))
    if not profile.weight_total_per_cluster:
        scopes = st.sampled_from((*CLUSTERS, None))
        return source, tuple(replace(entry, cluster=draw(scopes, label="scope")) for entry in unscoped)
    shape = next(name for name, pattern in SHAPES.items() if pattern == source)
    entries = list(unscoped[: draw(st.integers(0, len(unscoped)), label="unscoped")])
    for number, cluster in enumerate(CLUSTERS):
        count = draw(st.integers(0, 2), label=cluster)
        weights = draw_weights(draw, count) if count else []
        entries += [
            WeightedDestination(
                destination_for(shape, 5 + 2 * number + i, named=False, reorder=False), w, cluster
            )
            for i, w in enumerate(weights)
        ]
    order = draw(st.permutations(range(len(entries))))
    return source, tuple(entries[i] for i in order) or unscoped[:1]


def observed_as_subscription(observation: Observation, size: int) -> WeightedObservation:
    """A tap's observation of `size` messages in the weighted family's terms: the subjects each arrived
    on, under the tap's one subscription."""
    arrived = ((index, observation.subjects_of(index)) for index in range(size))
    confirmed = SubscriptionObservation(
        {(1, index): subjects for index, subjects in arrived if subjects},
        published=observation.published if not observation.failure else 0,
        failure=observation.failure,
    )
    return WeightedObservation(deliveries=confirmed)


@dataclass(frozen=True, slots=True)
class ClusterWeightedFamily(TargetServer):
    """Weighted lists scoped to clusters, on two servers that are each a cluster of a super-cluster."""

    name: str = "cluster-weighted"
    description: Description = Description(
        "one weighted list with entries scoped to `east`, `west` or neither, on a super-cluster of two "
        "servers of the target's build (process backend), one per cluster, joined by a gateway; its "
        "subjects published on each server, each judged by its own cluster's entries",
        10_000,
    )
    features: tuple[str, ...] = ("weighted",)

    @property
    def layout(self) -> str:
        return "cluster"

    def server_for(self, server: Backend) -> Backend:
        return ClusterBackend(server, CLUSTERS) if isinstance(server, ProcessBackend) else server

    def unsupported(self, version: str, backend: str) -> str:
        if not backend.endswith(CLUSTER_SUFFIX):
            return "the super-cluster is two servers this suite starts on the process backend"
        return ""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[WeightedRun]:
        def run(drawn: tuple[str, tuple[WeightedDestination, ...]], seed: int) -> WeightedRun:
            source, entries = drawn
            count = min(MESSAGES, max(message_count(source, entries, profile, c) for c in CLUSTERS))
            return WeightedRun(source, entries, tuple(subjects_for(source, count, random.Random(seed))), seed)

        return st.builds(run, scoped_lists(profile), st.integers(0, 2**32 - 1))

    def execute(self, session: Session, unit: WeightedRun) -> tuple[WeightedObservation, ...]:
        """Configure the list on both servers, then publish its subjects on each in turn under a tap on
        the first; one observation per server, or the refusal alone."""
        entries = tuple(ConfigEntry(e.destination, e.weight, e.cluster) for e in unit.entries)
        try:
            session.configure(Mapping(unit.source, entries))
        except ConfigRejectedError as error:
            return (WeightedObservation(rejection=error.server_message),)
        return tuple(
            observed_as_subscription(
                publish_and_observe(session.url, unit.subjects, publisher_url=url), len(unit.subjects)
            )
            for url in (session.url, session.publisher_url)
        )

    def judge(
        self,
        context: RunContext,
        profile: ReleaseProfile,
        unit: WeightedRun,
        observed: tuple[WeightedObservation, ...],
    ) -> Judged:
        """Each server's messages and shares against the list its cluster uses (a refusal: one case)."""
        judged: list[Case | CaseBlock] = []
        for cluster, observation in zip(CLUSTERS, observed, strict=False):
            cases = judge_weighted(context, profile, replace(unit, cluster=cluster), observation).all_cases
            if cluster != CLUSTERS[0]:
                step = json.dumps({"published-on": cluster})
                cases = [
                    replace(case, shared=replace(case.shared, steps=(*case.shared.steps, step)))
                    if isinstance(case, CaseBlock)
                    else replace(case, steps=(*case.steps, step))
                    for case in cases
                ]
            judged += cases
        return judged

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: WeightedRun, reason: str) -> Judged:
        """Every message's and shares' case of both servers, none observed."""
        observation = WeightedObservation(deliveries=SubscriptionObservation(failure=reason))
        return self.judge(context, profile, unit, (observation,) * len(CLUSTERS))

    def unit_of(self, case: CaseFile) -> WeightedRun:
        """The case's list, its subject published often enough on each server to see the shares."""
        subject = case.subject or case.source
        return WeightedRun(case.source, case.weights, (subject,) * 1_000)
