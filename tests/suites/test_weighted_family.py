"""The weighted family's lists beyond the valid unscoped ones (``suites.families.weighted``): lists with
cluster-scoped entries, lists the server must refuse, a list of one entry written as that entry alone,
and how a list the reference refuses is judged."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nats_conformance.fixtures.config import Mapping, ServerConfig, render_config
from nats_conformance.fixtures.config import WeightedDestination as ConfigEntry
from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.weighted import WeightedDestination, compile_weighted
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.weighted import (
    CLUSTER,
    SINGLE_STEP,
    WeightedFamily,
    WeightedObservation,
    WeightedRun,
    clustered_lists,
    judge_weighted,
    refused_lists,
)
from nats_conformance.suites.harness import SubscriptionObservation

RELEASES = ("2.2.6", "2.9.25", "2.14.9")
W = WeightedDestination


def context(version: str = "2.14.9") -> RunContext:
    counter = itertools.count()
    return RunContext("run", "nats-server", version, "process", Expectations(), lambda: next(counter))


KINDS = frozenset(
    {
        "duplicate-destination",
        "total-weight-exceeded",
        "invalid-weight",
        "wildcard-index-out-of-range",
        "invalid-source",
    }
)
"""The refusals of `refused_lists`' faults, as the reference names them."""


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from(RELEASES), data=st.data())
def test_refused_lists_are_refused_by_the_reference(version: str, data: st.DataObject) -> None:
    profile = for_version(version)
    source, entries = data.draw(refused_lists(profile))
    with pytest.raises(MappingError) as refused:
        compile_weighted(source, entries, profile, CLUSTER)
    assert refused.value.kind in KINDS


def test_refused_lists_reach_each_kind_and_lone_entries() -> None:
    profile = for_version("2.14.9")
    kinds, lone = set(), 0

    @settings(max_examples=400, deadline=None, database=None)
    @given(refused_lists(profile))
    def draw(drawn: tuple[str, tuple[WeightedDestination, ...]]) -> None:
        nonlocal lone
        source, entries = drawn
        lone += len(entries) == 1
        try:
            compile_weighted(source, entries, profile)
        except MappingError as error:
            kinds.add(error.kind)

    draw()
    assert kinds == KINDS
    assert lone > 0


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_clustered_lists_are_valid_and_scoped(data: st.DataObject) -> None:
    """Every clustered list compiles for its release; a server of the entries' cluster uses them alone."""
    profile = for_version(data.draw(st.sampled_from(RELEASES)))
    source, entries = data.draw(clustered_lists(profile))
    scoped = [entry for entry in entries if entry.cluster]
    assert scoped
    assert {entry.cluster for entry in scoped} <= {CLUSTER, "elsewhere"}
    if not profile.weight_total_per_cluster:
        assert len(scoped) == len(entries)  # one total over the whole list before 2.10
    mapping = compile_weighted(source, entries, profile, CLUSTER)
    used = {step.entry for step in mapping.steps}
    if scoped[0].cluster == CLUSTER:
        assert used == set(scoped)
    else:
        assert used == {entry for entry in entries if entry.cluster is None}


def test_a_single_entry_is_written_alone_and_a_cluster_block_names_the_cluster() -> None:
    entry = (ConfigEntry("wt.d0", 40),)
    config = ServerConfig(cluster_name=CLUSTER).with_mappings(
        Mapping("wt.s", entry, single=True), Mapping("wt.t", entry)
    )
    text = render_config(config)
    assert 'cluster { name: "nc" }' in text
    assert '"wt.s": {destination: "wt.d0", weight: 40%}' in text
    assert '"wt.t": [{destination: "wt.d0", weight: 40%}]' in text


REFUSED = WeightedRun("wt.s", (W("wt.d0", 60), W("wt.d0", 10)), (), cluster=CLUSTER, single=False)


@pytest.mark.parametrize(
    ("observed", "verdict", "difference"),
    [
        (WeightedObservation(rejection="duplicate entry"), "agree", ""),
        (
            WeightedObservation(deliveries=SubscriptionObservation()),
            "diverge",
            "reference-reject-duplicate-destination-server-accept",
        ),
        (WeightedObservation(deliveries=SubscriptionObservation(failure="gone")), "unknown", "unknown"),
    ],
)
def test_a_list_the_reference_refuses_is_one_case(
    observed: WeightedObservation, verdict: str, difference: str
) -> None:
    result = judge_weighted(context(), for_version("2.14.9"), REFUSED, observed)
    assert result.cases == []
    assert result.summary is not None
    summary = result.summary
    assert (summary.verdict, summary.difference, summary.expected) == (
        verdict,
        difference,
        "reject:duplicate-destination",
    )
    assert summary.weights == REFUSED.entries
    assert summary.feature == "weighted"


def test_a_single_entry_run_carries_its_form_in_every_case() -> None:
    run = WeightedRun("wt.s", (W("wt.d0", 100),), ("wt.s",) * 3, cluster=CLUSTER, single=True)
    deliveries = SubscriptionObservation({(1, i): ["wt.d0"] for i in range(3)}, published=3)
    result = judge_weighted(context(), for_version("2.14.9"), run, WeightedObservation(deliveries=deliveries))
    cases = cases_of(result.all_cases)
    assert len(cases) == 4  # three messages and the shares
    assert {case.steps for case in cases} == {(SINGLE_STEP,)}
    assert {case.verdict for case in cases} == {"agree"}
    assert {(case.bucket, case.observed) for case in cases if case.kind == "case"} == {(0, "wt.d0")}


def test_refused_families_draw_only_refused_lists_and_run_in_a_cluster() -> None:
    for name, operator in (("weighted-refused", False), ("weighted-refused-operator", True)):
        family = FAMILIES[name]
        assert isinstance(family, WeightedFamily)
        assert family.refused_only
        assert family.operator is operator
    profile = for_version("2.14.9")
    family = FAMILIES["weighted-refused-operator"]

    @settings(max_examples=50, deadline=None, database=None)
    @given(family.units(profile))
    def draw(run: WeightedRun) -> None:
        assert run.subjects == ()
        assert run.cluster == CLUSTER
        assert not run.single
        assert all(entry.weight >= 1 for entry in run.entries)

    draw()
