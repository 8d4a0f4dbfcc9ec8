"""Every backend, against real servers: start, version, mapping, reload, rejection, stop.

Runs once per target (`--backend` x `--server-version`). The mapping examples are observed with nats-py
on a wire tap (`>`), as a user of the server would see them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nats_conformance.fixtures.clients.nats_py import wire_tap_sync
from nats_conformance.fixtures.config import Mapping, ServerConfig
from nats_conformance.fixtures.errors import ConfigRejectedError, ServerDiedError
from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.pytest_fixtures import announced_version
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.reference.versions import Version

pytestmark = pytest.mark.live

WILDCARD_MAPPING = ServerConfig(mappings=(Mapping("foo.*", "bar.{{wildcard(1)}}"),))
LEGACY_MAPPING = ServerConfig(mappings=(Mapping("foo.*", "baz.$1.legacy"),))
OUT_OF_RANGE = ServerConfig(mappings=(Mapping("foo.*", "bar.$3"),))


def test_server_announces_the_requested_version(server: Backend, target: Target) -> None:
    assert server.is_running()
    assert server.url.startswith("nats://127.0.0.1:")
    if target.spec.release:
        assert server.version == target.spec.release


@pytest.mark.min_server("2.8.0")
def test_mapping_from_config_is_observed_by_nats_py(server: Backend) -> None:
    server.apply(WILDCARD_MAPPING)
    assert wire_tap_sync(server.url, ["foo.x", "foo.y", "other"]) == ["bar.x", "bar.y", "other"]


def test_legacy_mapping_is_observed_by_nats_py(server: Backend) -> None:
    server.apply(LEGACY_MAPPING)
    assert wire_tap_sync(server.url, ["foo.x", "other"]) == ["baz.x.legacy", "other"]


def test_reload_changes_the_mapping(server: Backend) -> None:
    server.apply(LEGACY_MAPPING)
    assert wire_tap_sync(server.url, ["foo.a"]) == ["baz.a.legacy"]
    server.apply(ServerConfig(mappings=(Mapping("foo.*", "qux.$1"),)))
    assert wire_tap_sync(server.url, ["foo.a"]) == ["qux.a"]


def test_rejected_reload_carries_the_server_message_and_keeps_the_old_config(server: Backend) -> None:
    server.apply(LEGACY_MAPPING)
    with pytest.raises(ConfigRejectedError) as caught:
        server.apply(OUT_OF_RANGE)
    assert 'mapping for "foo.*"' in caught.value.server_message
    assert wire_tap_sync(server.url, ["foo.z"]) == ["baz.z.legacy"]
    assert server.is_running()


def test_rejected_start_carries_the_server_message(server_factory: Callable[[], Backend]) -> None:
    fresh = server_factory()
    with pytest.raises(ConfigRejectedError) as caught:
        fresh.start(OUT_OF_RANGE)
    assert 'mapping for "foo.*"' in caught.value.server_message
    assert "\n" not in str(caught.value)
    assert not fresh.is_running()


def test_stop_leaves_nothing_running(server_factory: Callable[[], Backend]) -> None:
    fresh = server_factory()
    fresh.start(LEGACY_MAPPING)
    assert fresh.is_running()
    fresh.stop()
    assert not fresh.is_running()
    fresh.stop()


def test_a_server_that_dies_is_reported_in_one_line(server_factory: Callable[[], Backend]) -> None:
    fresh = server_factory()
    fresh.start(ServerConfig())
    kill = getattr(fresh, "kill", None)
    if kill is None:
        pytest.skip(f"the {fresh.name} backend cannot kill its server")
    kill()
    assert not fresh.is_running()
    with pytest.raises(ServerDiedError) as caught:
        fresh.apply(LEGACY_MAPPING)
    assert "\n" not in str(caught.value)


@pytest.mark.max_server("2.7.99")
def test_wildcard_function_is_rejected_before_2_8(server: Backend) -> None:
    assert announced_version(server.version) < Version(2, 8, 0)
    with pytest.raises(ConfigRejectedError):
        server.apply(WILDCARD_MAPPING)
