"""Operator (JWT) mode: mappings live in the test account's JWT and change when a new JWT is pushed to the
running server's resolver, without a restart.

https://docs.nats.io/nats-concepts/subject_mapping, introduction: "When using operator JWT security with
the built-in
resolver you define the mappings [...] in the account JWT so after modifying them they will take effect as
soon as you push the updated account JWT to the servers." The transform and validation properties run
unchanged on `operator_server`, whose `apply` pushes a JWT (fixtures/servers/operator.py); the other
tests pin what a push does, release by release.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence

import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.fixtures.clients.wire import WireConnection
from nats_conformance.fixtures.config import Mapping, ServerConfig, WeightedDestination
from nats_conformance.fixtures.errors import ClaimsRejectedError, MappingNotInstalledError, ServerError
from nats_conformance.fixtures.pytest_fixtures import announced_version
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.local import LocalServer
from nats_conformance.fixtures.servers.operator import CLAIMS_UPDATE_GENERAL, OperatorBackend
from nats_conformance.fixtures.servers.probe import Prober
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.partition import FNV_OFFSET_BASIS, fnv1a32
from nats_conformance.reference.versions import Version
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.properties import check_transform, check_validation

pytestmark = [pytest.mark.live, pytest.mark.operator]


def deliveries(url: str, subjects: Sequence[str]) -> list[str]:
    """Publish one message per subject; the subjects a `>` subscription of the same account saw."""
    with WireConnection(url, name="nats-conformance-operator-tap") as connection:
        connection.subscribe(">", 1)
        connection.flush()
        for subject in subjects:
            connection.publish(subject, b"x")
        connection.flush()
        return [message.subject for message in connection.pending]  # the flush read them all


def identity(server: OperatorBackend) -> object:
    """What changes when the server process is restarted: its pid, or its container's id."""
    return getattr(server.inner, "pid", None) or getattr(server.inner, "container_id", None)


@pytest.fixture
def fresh_operator(server_factory: Callable[[], Backend]) -> Iterator[Callable[..., OperatorBackend]]:
    """Starts extra operator-mode servers of the current target (for raw pushes that would leave the
    session server in an unknown state); all are stopped after the test."""
    made: list[OperatorBackend] = []

    def start(*, resolver: str = "full", request_timeout: float = 5.0) -> OperatorBackend:
        inner = server_factory()
        assert isinstance(inner, LocalServer)
        backend = OperatorBackend(inner, resolver=resolver, request_timeout=request_timeout)
        made.append(backend)
        backend.start(ServerConfig())
        return backend

    try:
        yield start
    finally:
        for backend in made:
            backend.cleanup()


@pytest.mark.mapping
@pytest.mark.min_server("2.9.0")
@given(data=st.data())
def test_every_subject_arrives_on_the_reference_subject_after_a_push(
    operator_server: OperatorBackend,
    operator_context: RunContext,
    recorder: RecordWriter,
    data: st.DataObject,
) -> None:
    """The transform property of test_transform.py with the batch's mappings pushed in the account JWT.

    From 2.9: before, the server's JWT library refuses `*` and `>` tokens in mapping destinations
    (nats-io/jwt v2.0.2-v2.2.x `Mapping.Validate`), which a config file accepts (see
    `test_full_wildcard_destination_is_pushable_from_2_9`)."""
    check_transform(operator_server, operator_context, recorder, data)


@pytest.mark.validation
@pytest.mark.min_server("2.9.0")
@given(data=st.data())
def test_server_installs_exactly_the_mappings_the_reference_accepts(
    operator_server: OperatorBackend,
    operator_context: RunContext,
    recorder: RecordWriter,
    data: st.DataObject,
) -> None:
    """The validation property of test_validation.py where "accept" means the pushed mapping is
    installed; a mapping the server cannot compile is acknowledged and dropped, which counts as a
    rejection (from 2.9, as above)."""
    check_validation(operator_server, operator_context, recorder, data)


@pytest.mark.partition
@pytest.mark.xfail(
    reason="2.12-2.14.5: a literal-source mapping first in the account's list hashes an empty key",
    strict=True,
)
def test_partition_of_a_literal_source_hashes_the_subject(
    fresh_operator: Callable[..., OperatorBackend],
) -> None:
    """Release notes of 2.12.0 (https://github.com/nats-io/nats-server/releases/tag/v2.12.0): from 2.12 the
    one-argument `partition(n)` hashes the whole subject.

    The server splits the published subject into tokens only while passing mappings that do not match
    it literally (accounts.go `selectMappedSubject`), so a literal-source mapping first in the account's
    list hashes no tokens at all. That order follows Go map iteration of the JWT (or config file), so
    with other mappings the result varies between pushes and reloads (expectations.toml,
    `partition-of-literal-source-hashes-nothing`). Here the JWT holds this mapping alone (no probe): it
    is first on every push, so the bug shows every time.
    """
    server = fresh_operator()
    if announced_version(server.version) < Version(2, 12, 0):
        pytest.skip(f"partition(n) of a literal source needs nats-server >= 2.12.0 ({server.version} found)")
    server.push_account_jwt(server.keys.account_jwt([Mapping("orders.new", "p.{{partition(12)}}")]))
    observed = deliveries(server.url, ["orders.new"])
    assert observed != [f"p.{FNV_OFFSET_BASIS % 12}"], "hashed an empty key"
    assert observed == [f"p.{fnv1a32(b'orders.new') % 12}"]


def test_pushed_mapping_takes_effect_without_a_restart(operator_server: OperatorBackend) -> None:
    """Two pushes change where `jwt.*` goes; the server process is the same and never reloaded."""
    before, offset = identity(operator_server), len(operator_server.logs())
    operator_server.apply(ServerConfig().with_mappings(Mapping("jwt.*", "first.$1")))
    assert deliveries(operator_server.url, ["jwt.a"]) == ["first.a"]
    operator_server.apply(ServerConfig().with_mappings(Mapping("jwt.*", "second.$1")))
    assert deliveries(operator_server.url, ["jwt.a", "other"]) == ["second.a", "other"]
    assert identity(operator_server) == before
    assert operator_server.is_running()
    assert "Reloaded server configuration" not in operator_server.logs()[offset:]


def test_a_connection_kept_open_sees_each_pushed_generation(operator_server: OperatorBackend) -> None:
    """A user connected before a push publishes through the pushed JWT's mappings (the backend's probe
    keeps one connection between pushes, `fixtures.servers.probe.Prober`); a prober whose connection
    was closed opens another."""
    prober = Prober(operator_server.url)
    try:
        generation = operator_server.config.generation
        assert prober(generation)
        assert not prober(generation + 1)
        operator_server.apply(ServerConfig().with_mappings(Mapping("kept.*", "seen.$1")))
        assert operator_server.config.generation == generation + 1
        assert prober(generation + 1)
        assert not prober(generation)
        prober.close()
        assert prober(generation + 1)
    finally:
        prober.close()


OVER_100_ANSWERS = {
    "full": 'jwt validation failed - validation errors: [Mapping "w.*" exceeds 100% among all of '
    "it's weighted to mappings]",
    "memory": "jwt update resulted in error - account validation failed",
}
"""What each resolver answers to a JWT whose weights for one source sum to 120 (same on 2.2.6-2.14.5)."""


@pytest.mark.parametrize("resolver", sorted(OVER_100_ANSWERS))
def test_jwt_with_weights_over_100_is_rejected_by_the_push(
    fresh_operator: Callable[..., OperatorBackend], resolver: str
) -> None:
    """The push answers with the server's validation error (one line); the previous mappings stay."""
    server = fresh_operator(resolver=resolver)
    server.apply(ServerConfig().with_mappings(Mapping("w.*", "kept.$1")))
    over = (WeightedDestination("a.$1", 60), WeightedDestination("b.$1", 60))
    with pytest.raises(ClaimsRejectedError) as caught:
        server.apply(ServerConfig().with_mappings(Mapping("w.*", over)))
    assert "\n" not in str(caught.value)
    assert caught.value.server_message == OVER_100_ANSWERS[resolver]
    assert deliveries(server.url, ["w.a"]) == ["kept.a"]


def validates_claim_mappings(version: str) -> bool:
    """Whether the release refuses an account JWT whose mapping it cannot compile ("jwt validation
    failed", `validateAccountClaimMappings`): 2.14.8 and later 2.14 releases, and 2.15.1 and later
    (measured 2026-11-26: 2.14.7 and 2.15.0 acknowledge the JWT and drop the mapping)."""
    release = announced_version(version)
    return release >= Version(2, 15, 1) or Version(2, 14, 8) <= release < Version(2, 15, 0)


def test_destination_the_server_cannot_compile_is_dropped_or_refused(
    fresh_operator: Callable[..., OperatorBackend],
) -> None:
    """`$3` with one wildcard: the push answers "jwt updated", the mapping is not installed, the JWT's
    other mappings are, and an earlier mapping of the same source stays in force; a release that
    validates a JWT's mappings refuses the whole JWT instead, and the earlier mapping stays in force."""
    server = fresh_operator()
    keys = server.keys
    assert server.push_account_jwt(keys.account_jwt([Mapping("bad.*", "old.$1")])) == "jwt updated"
    token = keys.account_jwt([Mapping("bad.*", "new.$3"), Mapping("good.*", "fine.$1")])
    if validates_claim_mappings(server.version):
        with pytest.raises(ClaimsRejectedError, match=r'mapping "bad\.\*" -> "new\.\$3"'):
            server.push_account_jwt(token)
        assert server.installed_mappings() == {"bad.*": {"old.$1"}}
        assert deliveries(server.url, ["bad.a"]) == ["old.a"]
        return
    assert server.push_account_jwt(token) == "jwt updated"
    assert server.installed_mappings() == {"bad.*": {"old.$1"}, "good.*": {"fine.$1"}}
    assert deliveries(server.url, ["bad.a", "good.a"]) == ["old.a", "fine.a"]


def test_backend_reports_a_dropped_mapping_and_restores_the_previous_ones(
    operator_server: OperatorBackend,
) -> None:
    operator_server.apply(ServerConfig().with_mappings(Mapping("d.*", "before.$1")))
    refused = validates_claim_mappings(operator_server.version)
    with pytest.raises(ClaimsRejectedError if refused else MappingNotInstalledError) as caught:
        operator_server.apply(ServerConfig().with_mappings(Mapping("d.*", "after.$3")))
    message = "jwt validation failed" if refused else 'mapping "d.*" -> "after.$3" not installed'
    assert caught.value.server_message.startswith(message)
    assert deliveries(operator_server.url, ["d.a"]) == ["before.a"]


def test_push_replaces_the_destination_of_a_mapped_source(
    fresh_operator: Callable[..., OperatorBackend], request: pytest.FixtureRequest
) -> None:
    """A second JWT mapping the same source elsewhere takes effect (the document's promise)."""
    server = fresh_operator()
    if announced_version(server.version) < Version(2, 9, 0):
        request.applymarker(
            pytest.mark.xfail(
                reason="before 2.9 the push is acknowledged but the old destination stays in force "
                "(Account.AddWeightedMappings assigns the old entry to itself)",
                strict=True,
            )
        )
    server.push_account_jwt(server.keys.account_jwt([Mapping("r.*", "one.$1")]))
    server.push_account_jwt(server.keys.account_jwt([Mapping("r.*", "two.$1")]))
    assert deliveries(server.url, ["r.a"]) == ["two.a"]


def test_full_wildcard_destination_is_pushable_from_2_9(operator_server: OperatorBackend) -> None:
    """`wc.>` -> `out.>` is valid in a config file on every release; in a JWT only from 2.9."""
    mapping = Mapping("wc.>", "out.>")
    if announced_version(operator_server.version) >= Version(2, 9, 0):
        operator_server.apply(ServerConfig().with_mappings(mapping))
        assert deliveries(operator_server.url, ["wc.a.b"]) == ["out.a.b"]
        return
    with pytest.raises(ClaimsRejectedError) as caught:
        operator_server.apply(ServerConfig().with_mappings(mapping))
    assert 'Subject "out.>" in weighted mapping "wc.>" is not allowed to contains wildcard' in str(
        caught.value
    )


@pytest.mark.parametrize("resolver", ["full", "memory"])
def test_general_claims_update_subject_is_served_by_the_full_resolver_only(
    fresh_operator: Callable[..., OperatorBackend], resolver: str
) -> None:
    """`$SYS.REQ.CLAIMS.UPDATE` updates the account with the full resolver; MEMORY never answers it
    (both answer `$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE`, which the backend uses)."""
    server = fresh_operator(resolver=resolver, request_timeout=0.5)
    token = server.keys.account_jwt([Mapping("g.*", "general.$1")])
    if resolver == "full":
        assert server.push_account_jwt(token, subject=CLAIMS_UPDATE_GENERAL) == "jwt updated"
        assert deliveries(server.url, ["g.a"]) == ["general.a"]
    else:
        with pytest.raises(ServerError, match="no answer"):
            server.push_account_jwt(token, subject=CLAIMS_UPDATE_GENERAL)
        assert deliveries(server.url, ["g.a"]) == ["g.a"]


def test_nats_py_with_the_creds_file_sees_the_pushed_mapping(operator_server: OperatorBackend) -> None:
    """The minted user JWT and seed work for a standard client (nonce signed by nats-py and nkeys)."""
    operator_server.apply(ServerConfig().with_mappings(Mapping("py.*", "seen.$1")))
    plain_url = operator_server.url.split("@", 1)[1]

    async def observe() -> str:
        connection = await nats.connect(
            f"nats://{plain_url}",
            user_credentials=str(operator_server.creds_path),
            allow_reconnect=False,
            connect_timeout=3,
        )
        try:
            subscription = await connection.subscribe("seen.*")
            await connection.publish("py.a", b"x")
            message = await subscription.next_msg(timeout=2)
            return str(message.subject)
        finally:
            await connection.close()

    assert asyncio.run(observe()) == "seen.a"
