"""The cluster family: three servers of the target's build in one cluster, each subject published to one
server and observed on another over a route (`fixtures.servers.cluster`), its cases replayed in the same
layout (`--layout cluster`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.fixtures.config import Mapping
from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.cluster import ClusterBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.replay import REPLAY, replay_command
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import CASES
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.harness import publish_and_observe

pytestmark = pytest.mark.live


def test_a_subject_published_to_one_server_of_the_cluster_arrives_on_another_mapped_once(
    target: Target, server_factory: Callable[[], Backend]
) -> None:
    """`c.>` -> `c.y.>` maps `c.a` to `c.y.a` on the server it is published to; the server the tap is on
    receives it over the route as it is, not mapped again (`c.y.y.a`)."""
    if target.backend != "process":
        pytest.skip("the cluster is three servers of the process backend")
    family = FAMILIES["cluster"]
    server = family.placement.server_for(server_factory())
    assert isinstance(server, ClusterBackend)
    try:
        server.start(family.placement.base_config(server))
        assert all(node.is_running() for node in server.nodes)
        session = Session.of(server, server.config)
        assert session.publisher_url == server.nodes[1].url != server.url
        session.configure(Mapping("c.>", "c.y.>"))
        subjects = [f"c.{index}" for index in range(2_000)]
        observation = publish_and_observe(session.url, subjects, publisher_url=session.publisher_url)
        assert observation.failure == ""
        assert observation.received == len(subjects)
        assert not observation.repeated
        assert observation.subjects_of(1_234) == ["c.y.1234"]
    finally:
        server.stop()
    assert not any(node.is_running() for node in server.nodes)


def test_the_cluster_family_records_its_layout_and_its_cases_replay_in_it(
    target: Target, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if target.backend != "process":
        pytest.skip("the cluster is three servers of the process backend")
    status = main(
        [
            *("campaign", "--server-version", target.spec.text, "--backend", "process"),
            *("--family", "cluster", "--budget", "cluster=300", "--out", str(tmp_path)),
        ]
    )
    (run_dir,) = tmp_path.iterdir()
    table = pq.read_table(run_dir / CASES, columns=["backend", "verdict"])
    assert set(table.column("backend").to_pylist()) == {"process-cluster"}
    assert table.num_rows >= 300
    assert status == 0
    case = Case(
        run_id="r",
        case_id=0,
        implementation="nats-server",
        server_version=target.spec.label,
        backend="process-cluster",
        feature="mapping",
        functions="$n",
        source="a.*",
        destination="b.$1",
        subject="a.x",
        expected="b.x",
        observed="b.x",
        verdict="agree",
    )
    words = shlex.split(replay_command(case))
    assert words[words.index("--backend") + 1 :][:3] == ["process", "--layout", "cluster"]
    capsys.readouterr()
    assert main(words[len(REPLAY) - 1 :]) == 0
    assert f"mapping agree on nats-server {target.spec.label} (process-cluster)" in capsys.readouterr().out
