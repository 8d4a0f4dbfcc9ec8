"""The cluster-weighted family's lists and judging (`suites.families.cluster_weighted`), without a server:
lists valid for their release whose scopes pick the entries each server uses, and a message that arrives
by the other cluster's entries judged a divergence."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.weighted import WeightedDestination, compile_weighted
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.cluster_weighted import CLUSTERS, scoped_lists
from nats_conformance.suites.families.weighted import WeightedObservation, WeightedRun
from nats_conformance.suites.harness import SubscriptionObservation

RELEASES = ("2.2.6", "2.9.25", "2.10.29", "2.14.9")


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from(RELEASES), data=st.data())
def test_scoped_lists_are_valid_and_each_cluster_uses_its_own_entries(
    version: str, data: st.DataObject
) -> None:
    """Every list compiles for its release, no destination twice; a server of a cluster with entries of
    its own uses those alone, any other the unscoped ones."""
    profile = for_version(version)
    source, entries = data.draw(scoped_lists(profile))
    assert entries
    assert len({entry.destination for entry in entries}) == len(entries)
    assert {entry.cluster for entry in entries} <= {None, *CLUSTERS}
    if not profile.weight_total_per_cluster:
        assert sum(entry.weight for entry in entries) <= 100
    for cluster in CLUSTERS:
        own = {entry for entry in entries if entry.cluster == cluster}
        used = {step.entry for step in compile_weighted(source, entries, profile, cluster).steps}
        assert used == (own or {entry for entry in entries if entry.cluster is None})


def test_scoped_lists_reach_both_clusters_and_a_cluster_falling_back_to_the_unscoped_entries() -> None:
    profile = for_version("2.14.9")
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(scoped_lists(profile))
    def draw(drawn: tuple[str, tuple[WeightedDestination, ...]]) -> None:
        scopes = {entry.cluster for entry in drawn[1]}
        seen.update(cluster for cluster in CLUSTERS if cluster in scopes)
        if None in scopes and not set(CLUSTERS) <= scopes:
            seen.add("fallback")

    draw()
    assert seen == {*CLUSTERS, "fallback"}


def delivered(subjects: list[str]) -> WeightedObservation:
    """Each published message delivered once, on the subject given for it."""
    deliveries = {(1, index): [subject] for index, subject in enumerate(subjects)}
    return WeightedObservation(deliveries=SubscriptionObservation(deliveries, published=len(subjects)))


def test_each_server_is_judged_by_its_own_clusters_entries() -> None:
    """`east` maps to `wt.d5`, `west` to `wt.d7`: delivered so, every case agrees and `west`'s carry their
    step; a message `west` maps by `east`'s entry is an impossible destination."""
    family = FAMILIES["cluster-weighted"]
    entries = (WeightedDestination("wt.d5.$1", 100, "east"), WeightedDestination("wt.d7.$1", 100, "west"))
    subjects = tuple(f"wt.s.{index}" for index in range(50))
    unit = WeightedRun("wt.s.*", entries, subjects)
    counter = itertools.count()
    context = RunContext(
        "run", "nats-server", "2.14.9", "process-cluster", Expectations(), lambda: next(counter)
    )
    profile = for_version("2.14.9")
    east = delivered([s.replace("wt.s", "wt.d5") for s in subjects])
    west = delivered([s.replace("wt.s", "wt.d7") for s in subjects])
    judged = cases_of(family.judge(context, profile, unit, (east, west)))
    assert len(judged) == 2 * (len(subjects) + 1)
    assert {case.verdict for case in judged} == {"agree"}
    assert sum(bool(case.steps) for case in judged) == len(subjects) + 1
    swapped = cases_of(family.judge(context, profile, unit, (east, east)))
    wrong = [case for case in swapped if case.verdict == "diverge"]
    assert {case.difference for case in wrong} >= {"impossible-destination"}
    assert all(case.steps == ('{"published-on": "west"}',) for case in wrong)
