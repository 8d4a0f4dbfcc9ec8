"""Root conftest: this repository's own tests opt in to the nats-conformance pytest plugin (with
`nats_conformance = true` in pyproject.toml), keep the old option spellings (`--server-version` ...) as
deprecated aliases, and use the plugin's `nats_*` fixtures under the short names they were written with."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.options import RunConfig, Target
from fixtures.plugin import add_deprecated_options
from fixtures.servers.base import Backend
from fixtures.servers.operator import OperatorBackend
from records.expectations import Expectations
from records.writer import RecordWriter
from suites.differential import RunContext

pytest_plugins = ["fixtures.plugin", "pytester"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_deprecated_options(parser)


@pytest.fixture(scope="session")
def target(nats_target: Target) -> Target:
    return nats_target


@pytest.fixture(scope="session")
def run_config(nats_run_config: RunConfig) -> RunConfig:
    return nats_run_config


@pytest.fixture(scope="session")
def recorder(nats_recorder: RecordWriter) -> RecordWriter:
    return nats_recorder


@pytest.fixture(scope="session")
def expectations(nats_expectations: Expectations) -> Expectations:
    return nats_expectations


@pytest.fixture(scope="session")
def server(nats_server: Backend) -> Backend:
    return nats_server


@pytest.fixture(scope="session")
def context(nats_context: RunContext) -> RunContext:
    return nats_context


@pytest.fixture(scope="session")
def operator_server(nats_operator_server: OperatorBackend) -> OperatorBackend:
    return nats_operator_server


@pytest.fixture(scope="session")
def operator_context(nats_operator_context: RunContext) -> RunContext:
    return nats_operator_context


@pytest.fixture
def server_factory(nats_server_factory: Callable[[], Backend]) -> Callable[[], Backend]:
    return nats_server_factory
