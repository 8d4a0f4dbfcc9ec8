"""suites.harness against a live server: every delivery is observed by the barrier, none is invented, both
through one `>` tap (`publish_and_observe`) and through N subscriptions on one connection
(`observe_subscriptions`)."""

from __future__ import annotations

import socket
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest

from nats_conformance.fixtures.clients.wire import WireConnection, WireError
from nats_conformance.fixtures.config import Mapping, ServerConfig
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.suites.harness import (
    Observation,
    Observer,
    SubscriptionObservation,
    clear_mappings,
    collect_until_pong,
    observe_subscriptions,
    pedantic_refusals,
    publish_and_observe,
)

pytestmark = pytest.mark.live


def test_an_observation_keeps_the_first_subject_and_the_repeats() -> None:
    deliveries = [(0, b"a"), (1, b"b"), (0, b"c"), (7, b"z"), (-1, b"z"), (1, b"\xff")]
    ids = np.array([case_id for case_id, _ in deliveries], np.int64)
    observation = Observation.of(3, ids, pa.array([subject for _, subject in deliveries], pa.binary()))
    assert observation.subjects_of(0) == ["a", "c"]
    assert observation.subjects_of(1) == ["b", "\udcff"]
    assert observation.subjects_of(2) == []
    assert observation.first_subjects(0, 3).to_pylist() == [b"a", b"b", None]
    assert observation.received == 4


def test_every_publication_is_observed_across_chunks(server: Backend) -> None:
    server.apply(ServerConfig(mappings=(Mapping("m.*", "out.{{wildcard(1)}}"),)))
    subjects = [f"m.{index}" for index in range(2_500)] + ["plain.ö", "x.\udcff"]
    observation = publish_and_observe(server.url, subjects, chunk=100, window=2)
    assert observation.failure == ""
    assert observation.published == len(subjects)
    assert [observation.subjects_of(i) for i in range(2_500)] == [[f"out.{i}"] for i in range(2_500)]
    assert observation.subjects_of(2_500) == ["plain.ö"]
    assert observation.subjects_of(2_501) == ["x.\udcff"]  # not UTF-8: kept as a surrogate escape
    assert observation.received == len(subjects)


def test_an_observer_keeps_its_connections_and_opens_new_ones_after_a_restart(
    server_factory: Callable[[], Backend],
) -> None:
    """Observations on one `Observer` share its tap and publisher until the server restarts; the next
    observation then opens new ones and sees every delivery, as does each before it."""
    server = server_factory()
    server.start(ServerConfig(mappings=(Mapping("m.*", "out.$1"),)))
    subjects = ["m.a", "m.b", "plain"]
    wanted = [["out.a"], ["out.b"], ["plain"]]
    with Observer(server.url) as observer:
        first = observer.observe(subjects)
        tap = observer._tap
        again = observer.observe(subjects)
        assert observer._tap is tap
        server.stop()
        server.start(ServerConfig(mappings=(Mapping("m.*", "moved.$1"),)))
        url_kept = server.url == observer.url
        after = observer.observe(subjects)
        assert observer._tap is not tap
    assert tap is not None
    assert not tap.is_alive()
    for observation in (first, again):
        assert observation.failure == ""
        assert [observation.subjects_of(index) for index in range(3)] == wanted
    if url_kept:  # a process keeps its port
        assert after.failure == ""
        assert [after.subjects_of(index) for index in range(3)] == [["moved.a"], ["moved.b"], ["plain"]]
    else:  # a container may not: the observer's server is gone
        assert "cannot connect" in after.failure


def test_no_server_is_a_failure() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    observation = publish_and_observe(f"nats://127.0.0.1:{port}", ["a"])
    assert "cannot connect" in observation.failure
    assert observation.subjects_of(0) == []


def test_every_delivery_is_read_by_the_pong(server: Backend) -> None:
    clear_mappings(server)
    patterns = ["a.*", "a.>", "b", "a.*"]
    subjects = ["a.x", "a.x.y", "b", "c", "a.\udcff"]
    observation = observe_subscriptions(server.url, patterns, subjects, chunk_deliveries=8)
    assert observation.failure == ""
    assert observation.published == len(subjects)
    assert observation.deliveries == {
        (1, 0): ["a.x"],
        (2, 0): ["a.x"],
        (4, 0): ["a.x"],
        (2, 1): ["a.x.y"],
        (3, 2): ["b"],
        (1, 4): ["a.\udcff"],
        (2, 4): ["a.\udcff"],
        (4, 4): ["a.\udcff"],
    }


def test_err_and_silence_end_the_observation(server: Backend) -> None:
    observation = observe_subscriptions(server.url, ["a..b"], ["a"])
    assert "Invalid Subject" in observation.failure
    assert observation.published == 0
    with WireConnection(server.url) as connection, pytest.raises(WireError, match="no PONG"):
        collect_until_pong(connection, SubscriptionObservation(), timeout=0.2)  # no PING sent


def test_a_pedantic_connection_is_refused_exactly_the_subjects_that_are_no_literal_ones(
    server: Backend,
) -> None:
    subjects = ["a..b", "a.*", "a.>", ".a", "a.*b", "a.>b", "a"]
    assert pedantic_refusals(server.url, subjects) == [True, True, True, True, False, False, False]
