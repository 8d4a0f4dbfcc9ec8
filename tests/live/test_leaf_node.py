"""The operator family's leaf node: a second server of the same build bound to the test account, through
which the family publishes, so that each account JWT push updates a connected leaf node's interest
(`OperatorBackend`'s `leaf`), and the mapping is applied to what enters the account from the leaf."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nats_conformance.fixtures.config import Mapping, ServerConfig
from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.operator import OperatorBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.harness import publish_and_observe

pytestmark = pytest.mark.live


def test_the_operator_family_publishes_through_a_leaf_node_of_its_account(
    target: Target, server_factory: Callable[[], Backend]
) -> None:
    """Three chunks published on the leaf node arrive once each, mapped by the server's account JWT;
    after a push that drops the mapping they arrive as published; the leaf node stops with its server."""
    if target.backend != "process":
        pytest.skip("the leaf node runs beside a server of the process backend")
    family = FAMILIES["operator"]
    server = family.placement.server_for(server_factory())
    assert isinstance(server, OperatorBackend)
    try:
        server.start(family.placement.base_config(server))
        session = Session.of(server, server.config)
        assert server.leafnodes() == 1
        assert session.publisher_url == server.publisher_url != server.url

        server.push_mappings(ServerConfig(mappings=(Mapping("leafed.*", "mapped.$1"),)))
        subjects = [f"leafed.{index}" for index in range(25_000)]
        observation = publish_and_observe(
            session.url, subjects, chunk=10_000, publisher_url=session.publisher_url
        )
        assert observation.failure == ""
        assert observation.received == len(subjects)
        assert not observation.repeated
        assert [observation.subjects_of(index) for index in (0, 12_345, 24_999)] == [
            ["mapped.0"],
            ["mapped.12345"],
            ["mapped.24999"],
        ]

        server.push_mappings(ServerConfig())
        again = publish_and_observe(session.url, ["leafed.7"], publisher_url=session.publisher_url)
        assert again.subjects_of(0) == ["leafed.7"]
        leaf = server.leaf
        assert leaf is not None
    finally:
        server.stop()
    assert not leaf.is_running()
