"""Many units' accounts in one reload (`Session.configure_apart`), on a live server: the server lists every
fault of a file it refuses with its line, so each refusal goes to the unit whose account holds it, and the
others are in force; the validation family judges a batch of units as it judges each alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from fixtures.clients.wire import WireConnection
from fixtures.config import Account, Mapping, ServerConfig
from fixtures.servers.base import Backend
from fixtures.session import Session
from suites.families import FAMILIES
from suites.families.validation import Verdict

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
    together = family.execute_many(session, pairs)
    alone = [family.execute(session, pair) for pair in pairs]

    def seen(verdict: object) -> tuple[str, bool]:
        assert isinstance(verdict, Verdict)
        return verdict.observed, verdict.crashed

    assert [seen(verdict) for verdict in together] == [seen(verdict) for verdict in alone]
    assert [seen(verdict)[0] for verdict in together][:3] == ["accept", "reject", "reject"]
    assert seen(together[-1]) == ("accept", False)
