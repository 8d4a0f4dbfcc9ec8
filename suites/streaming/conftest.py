"""Session fixtures of the streaming suite: one NATS network with nats-streaming-server 0.25.6, shared by
every test here, and the run context its cases are recorded under.

The suite runs once per session, whatever `--server-version` says (that option names nats-server
releases). When nats-streaming-server cannot be provisioned the suite is skipped with the reason, except
under CI (`CI` set), where that is a failure: CI builds it in `./dev setup`. Without protobuf (the
`streaming` extra) the tests here are not collected, again except under CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from nats_conformance.fixtures.errors import ServerError
from nats_conformance.fixtures.provision import NATS_STREAMING_SERVER, binary_version
from nats_conformance.fixtures.servers.streaming import StreamingNetwork, has_protobuf, provision_binaries
from nats_conformance.fixtures.stash_keys import SERVERS_SEEN
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.engine.verdicts import RunContext

if not has_protobuf() and not os.environ.get("CI"):
    # The streaming client needs protobuf: pip install -e '.[streaming]'. Under CI a missing extra is an
    # error, so the tests are collected there and fail on import.
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def streaming_network(request: pytest.FixtureRequest) -> Iterator[StreamingNetwork]:
    """A nats-server for streaming servers to join; the tests start and stop the streaming servers."""
    try:
        binaries = provision_binaries()
    except ServerError as error:
        reason = f"streaming suite: nats-streaming-server 0.25.6 is not available: {error}"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    with StreamingNetwork(*binaries) as network:
        try:
            network.start()
        except ServerError as error:
            pytest.fail(f"streaming suite: the NATS network did not start: {error}", pytrace=False)
        request.config.stash.setdefault(SERVERS_SEEN, []).append(
            f"streaming: nats-streaming-server v{binary_version(binaries[1])} on nats-server "
            f"v{network.nats.version} (process)"
        )
        yield network


@pytest.fixture(scope="session")
def streaming_context(
    streaming_network: StreamingNetwork, recorder: RecordWriter, expectations: Expectations
) -> RunContext:
    """Cases of this suite are nats-streaming-server's, at the version its binary prints."""
    version = binary_version(streaming_network.streaming_binary)
    expectations.note_run(NATS_STREAMING_SERVER.name, version)
    return RunContext(
        run_id=recorder.run_id,
        implementation=NATS_STREAMING_SERVER.name,
        server_version=version,
        backend="process",
        expectations=expectations,
        next_case_id=recorder.next_case_id,
    )
