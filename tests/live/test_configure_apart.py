"""Many units in one reload, on a live server: the server lists every fault of a file it refuses with its
line, so each refusal goes to the unit whose account holds it (`Session.configure_apart`), or to the
mapping on that line (the mapping family's batch), and the others are in force; the validation family
judges a batch of units as it judges each alone, and the overlap family its sequences."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from nats_conformance.fixtures.clients.wire import WireConnection, WireError
from nats_conformance.fixtures.config import Account, Mapping, ServerConfig
from nats_conformance.fixtures.errors import ConfigRejectedError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.transform import Transform, compile_transform
from nats_conformance.suites.engine.family import execute_many
from nats_conformance.suites.families import FAMILIES, mapping
from nats_conformance.suites.families.overlap import OverlapFamily, OverlapRun, Step
from nats_conformance.suites.families.validation import Verdict

pytestmark = pytest.mark.live


@pytest.fixture
def session(server_factory: Callable[[], Backend]) -> Iterator[Session]:
    server = server_factory()
    base = ServerConfig(accounts=(Account("base"),))
    server.start(base)
    try:
        yield Session.of(server, base)
    finally:
        server.stop()


def arrives_as(session: Session, account: Account, subject: str) -> str:
    """The subject on which a message published on `subject` by `account`'s user arrives."""
    with WireConnection(session.as_user(account.credentials).url) as connection:
        connection.subscribe(">", 1)
        connection.flush()
        connection.publish(subject, b"")
        connection.flush()
        return next(message.subject for message in connection.pending)


def test_each_refusal_goes_to_its_unit_and_the_others_are_in_force(session: Session) -> None:
    units = [
        Account("u0", mappings=(Mapping("a.*", "b.$1"),)),
        Account("u1", mappings=(Mapping("a.*", "b.$2"),)),  # a wildcard index out of range
        Account("u2", mappings=(Mapping("a.*", "c.{{nosuch(1)}}"),)),  # an unknown function
        Account("u3", mappings=(Mapping("a.*", "d.{{wildcard(1)}}"),)),
    ]
    applied = []
    apply = session.server.apply

    def counted(config: ServerConfig) -> None:
        applied.append(config)
        apply(config)

    session.server.apply = counted  # type: ignore[method-assign]
    refusals = session.configure_apart([(account,) for account in units])
    assert len(applied) == 2, "the server's lines name both refused units at once: no halving"
    assert refusals[0] == refusals[3] == ""
    assert '"b.$2"' in refusals[1]
    assert "nosuch" not in refusals[1]
    assert "nosuch" in refusals[2]
    assert '"b.$2"' not in refusals[2]
    assert arrives_as(session, units[0], "a.x") == "b.x"
    assert arrives_as(session, units[3], "a.y") == "d.y"


def test_a_batch_is_judged_as_each_of_its_units_alone(session: Session) -> None:
    """Accepted, refused, a subject that is none, and (from 2.10) an empty destination that kills the
    server on its first message: the same observations in one batch as one by one."""
    family = FAMILIES["validation"]
    pairs = [("a.*", "b.$1"), ("a.*", "b.$2"), ("a..b", "c"), ("e.*", ""), ("f.*.*", "{{wildcard(2)}}.$1")]
    together = execute_many(family, session, pairs)
    alone = [family.execute(session, pair) for pair in pairs]

    def seen(verdict: object) -> tuple[str, bool]:
        assert isinstance(verdict, Verdict)
        return verdict.observed, verdict.crashed

    assert [seen(verdict) for verdict in together] == [seen(verdict) for verdict in alone]
    assert [seen(verdict)[0] for verdict in together][:3] == ["accept", "reject", "reject"]
    assert seen(together[-1]) == ("accept", False)


def test_a_mapping_batch_names_its_refused_mappings_as_one_by_one_would(session: Session) -> None:
    """The mapping family's batch in one account: the mappings the server refuses are those it refuses
    alone, found from the lines of one refusal (two reloads), not one reload per mapping."""
    pairs = [("m1.*", "{{left(1,3)}}"), ("m2.*", "b.$1"), ("m3.*", "{{right(1,2)}}"), ("m4.*.*", "c.$2.$1")]
    compiled: list[tuple[Transform, tuple[str, ...]]] = []
    for source, destination in pairs:
        with contextlib.suppress(MappingError):  # left and right are 2.10's
            compiled.append((compile_transform(source, destination, session.profile), ("x",)))
    pairs = [(transform.source, transform.destination) for transform, _ in compiled]
    alone = set()
    for source, destination in pairs:
        try:
            session.configure(Mapping(source, destination))
        except ConfigRejectedError:
            alone.add(source)
    applied: list[ServerConfig] = []
    apply = session.server.apply

    def counted(config: ServerConfig) -> None:
        applied.append(config)
        apply(config)

    session.server.apply = counted  # type: ignore[method-assign]
    rejected: list[tuple[Transform, tuple[str, ...], str]] = []
    accepted = mapping._apply_bisecting(session, compiled, rejected)
    assert {transform.source for transform, _, _ in rejected} == alone
    assert all(f'"{transform.source}"' in words for transform, _, words in rejected)
    assert {transform.source for transform, _ in accepted} == {source for source, _ in pairs} - alone
    assert len(applied) == (2 if alone else 1)


def test_a_restart_puts_in_force_the_groups_the_server_takes(session: Session) -> None:
    """With `restart`, a server that refuses the file at its start is started again with fewer groups
    until each refusal names one; it runs at the end, with the groups it took."""
    units = [
        Account("u0", mappings=(Mapping("a.*", "b.$1"),)),
        Account("u1", mappings=(Mapping("a.*", "b.$2"),)),  # a wildcard index out of range
        Account("u2", mappings=(Mapping("a.*", "d.{{wildcard(1)}}"),)),
    ]
    refusals = session.configure_apart([(account,) for account in units], restart=True)
    assert refusals[0] == refusals[2] == ""
    assert refusals[1]
    assert session.server.is_running()
    assert arrives_as(session, units[0], "a.x") == "b.x"
    assert arrives_as(session, units[2], "a.y") == "d.y"


def test_overlap_sequences_side_by_side_see_what_each_sees_alone(
    session: Session, server_factory: Callable[[], Backend]
) -> None:
    """Sequences run together (each in an account of its own, those with the same reloads and restarts
    sharing them) deliver every subject after every step where each sequence alone delivers it, on a
    server with no account."""
    family = FAMILIES["overlap"]
    assert isinstance(family, OverlapFamily)
    first = (("ov.*", "od.m0.$1"), ("ov.a.*", "od.m1.$1"))
    units = [
        OverlapRun((Step("configure", first), Step("reload", (("ov.*", "od.m0s1.$1"),))), ("ov.a", "ov.b")),
        OverlapRun((Step("configure", first), Step("restart", first[1:])), ("ov.a.b", "ov.c")),
        OverlapRun((Step("configure", (("ov.>", "od.m0.>"),)), Step("reload", first)), ("ov.a.c", "ov.b.c")),
        OverlapRun((Step("configure", first), Step("reload", (("ov.*", "od.m0.$2"),))), ("ov.a",)),  # refused
    ]
    together = family.execute_many(session, units)
    plain = server_factory()
    plain.start(ServerConfig())
    try:
        alone_session = Session.of(plain, ServerConfig())
        alone = [family.execute(alone_session, unit) for unit in units]
    finally:
        plain.stop()

    def seen(observed: object) -> list[tuple[bool, dict[tuple[int, int], list[str]]]]:
        assert isinstance(observed, tuple)
        return [
            (bool(step.rejection), step.deliveries.deliveries if step.deliveries else {}) for step in observed
        ]

    assert [seen(steps) for steps in together] == [seen(steps) for steps in alone]
    assert seen(together[3])[1][0]  # the last sequence's second step was refused


def test_the_users_of_accounts_a_reload_adds_log_in_as_soon_as_it_returns(session: Session) -> None:
    """On 2.9.25 such a user was refused ("Authorization Violation") in about one login of 400 right
    after the reload's mappings were in force (`Session.await_logins`); every login of 800 succeeds at
    the first try."""
    refused = []
    for batch in range(200):
        groups = [(Account(f"l{batch}x{index}", (Mapping("ov.a", "od.x"),)),) for index in range(4)]
        assert session.configure_apart(groups) == [""] * len(groups)
        for (account,) in groups:
            try:
                WireConnection(session.as_user(account.credentials).url, timeout=2.0).close()
            except WireError as error:
                refused.append((account.name, str(error)))
    assert refused == []
