"""The cluster-weighted family on a live super-cluster of two servers of the target's build, `east` and
`west`, joined by a gateway (`fixtures.servers.cluster`): each maps by its own cluster's entries, its
campaign records agree (or the expectations' divergences) in the cluster layout, and a case replays
from its case file in that layout."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from nats_conformance.fixtures.options import Target, build_run_config
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.cluster import ClusterBackend
from nats_conformance.records.casefile import CaseFile, read_case_file
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import case_of
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.families import FAMILIES, family_of_case
from nats_conformance.suites.families.weighted import WeightedRun
from nats_conformance.suites.replay import replay_file_on_server
from tests.families import live_session, run_agreeing

pytestmark = pytest.mark.live

PROCESS_ONLY = "the super-cluster is two servers of the process backend"


def test_each_server_of_the_super_cluster_maps_by_its_own_clusters_entries(
    target: Target, server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    """`wt.s.*: [{wt.d5.$1, 50%, east}, {wt.d7.$1, 50%, west}]`: what `east` publishes arrives on `wt.d5`
    (or, for the remainder, as published), what `west` publishes on `wt.d7`, over the gateway."""
    if target.backend != "process":
        pytest.skip(PROCESS_ONLY)
    family = FAMILIES["cluster-weighted"]
    with live_session(
        family.name, server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    ) as (session, _, _):
        server = session.server
        assert isinstance(server, ClusterBackend)
        assert [node.config.cluster_name for node in server.nodes] == ["east", "west"]
        entries = (WeightedDestination("wt.d5.$1", 50, "east"), WeightedDestination("wt.d7.$1", 50, "west"))
        subjects = tuple(f"wt.s.{index}" for index in range(1_000))
        observed = family.execute(session, WeightedRun("wt.s.*", entries, subjects))
    heads = []
    for observation in observed:
        assert observation.deliveries is not None
        assert not observation.deliveries.failure
        arrived = (observation.deliveries.subjects_for(1, index) for index in range(len(subjects)))
        heads.append(Counter(subject.split(".")[1] for each in arrived for subject in each))
    assert set(heads[0]) <= {"d5", "s"}
    assert set(heads[1]) <= {"d7", "s"}
    assert heads[0]["d5"] > 0
    assert heads[1]["d7"] > 0


def test_the_family_records_both_clusters_in_the_cluster_layout_and_a_case_replays(
    target: Target, server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    if target.backend != "process":
        pytest.skip(PROCESS_ONLY)
    rows = run_agreeing(
        "cluster-weighted",
        1_500,
        server_factory=server_factory,
        expectations=expectations,
        run_dir=tmp_path / "run",
    )
    assert {row["backend"] for row in rows} == {"process-cluster"}
    west = [row for row in rows if row["subject"] and row["steps"]]
    assert 0 < len(west) < len(rows)
    recorded = CaseFile.of(case_of(west[0]))
    assert family_of_case(recorded) is FAMILIES["cluster-weighted"]
    path = tmp_path / "case.json"
    path.write_text(recorded.to_json())
    run = build_run_config([target.spec.text], [target.backend], None, None)
    replayed = replay_file_on_server(read_case_file(path), run)
    assert {case.weights for case in replayed} == {recorded.weights}
    assert {case.subject for case in replayed if case.subject} == {west[0]["subject"]}
    assert {case.difference for case in replayed} <= {"", "remainder-delivered"}
    assert len([case for case in replayed if case.steps]) == len(replayed) // 2
