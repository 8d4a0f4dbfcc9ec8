"""Every `unknown` case states its reason from the one list (`records.unknowns`): the producers that know
it say it, and a failure's text tells it otherwise (`fixtures.unobserved.unobserved_reason`), for each
failure the clients and the servers' sessions produce."""

from __future__ import annotations

import itertools

import pytest

from nats_conformance.fixtures.errors import (
    ReloadTimeoutError,
    ServerDiedError,
    ServerStalledError,
    ServerStoppedError,
)
from nats_conformance.fixtures.unobserved import unobserved, unobserved_reason
from nats_conformance.records import unknowns
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import NOT_SUPPORTED
from nats_conformance.suites.engine.verdicts import RunContext, judged_as, make_case


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        ("no PONG from the server in time", unknowns.TIMEOUT),
        ("no PONG from the server within 5s", unknowns.TIMEOUT),
        ("no reply to $JS.API.STREAM.CREATE.T within 5.0s", unknowns.TIMEOUT),
        ("nothing published on the publisher's server reached the tap within 5s", unknowns.TIMEOUT),
        ("127.0.0.1:4222 sent nothing in time", unknowns.TIMEOUT),
        ("publish: no streaming server answered within 1s", unknowns.TIMEOUT),
        ("nats-py got no PONG within 2.0s: TimeoutError()", unknowns.TIMEOUT),
        ("stan-1 neither became ready nor exited within 10s: last line", unknowns.TIMEOUT),
        ("configuration generation 3 not in force after 10s", unknowns.TIMEOUT),
        ("the server closed the connection", unknowns.CONNECTION_LOST),
        ("tap connection: the server closed the connection", unknowns.CONNECTION_LOST),
        ("connection lost: [Errno 104] Connection reset by peer", unknowns.CONNECTION_LOST),
        ("cannot connect to 127.0.0.1:4222: Connection refused", unknowns.CONNECTION_LOST),
        ("server error: 'Slow Consumer'", unknowns.CONNECTION_LOST),
        ("publish: no streaming server listens (no responders)", unknowns.CONNECTION_LOST),
        ("127.0.0.1:4222 does not speak the NATS protocol", unknowns.CONNECTION_LOST),
        ("the server exited during a reload", unknowns.SERVER_DIED),
        ("the server died with no panic in its log (no PONG from the server in time)", unknowns.SERVER_DIED),
        ("reply on $JS.API.INFO is not JSON: b'x'", unknowns.SERVER_ERROR),
        ("stream T kept earlier messages (last sequence 6)", unknowns.SERVER_ERROR),
        ("", unknowns.NOTHING_OBSERVED),
    ],
)
def test_a_failures_text_tells_its_reason(failure: str, reason: str) -> None:
    assert unobserved_reason(failure) == reason
    assert unobserved(failure) == f"{reason}: {failure}"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ServerStalledError("took 9.0 s to answer a PING"), unknowns.SERVER_STALLED),
        (ServerDiedError("nats-server on port 1 is not running"), unknowns.SERVER_DIED),
        (ServerStoppedError("the server stopped answering (x)"), unknowns.SERVER_DIED),
        (ReloadTimeoutError("configuration generation 3 not in force"), unknowns.TIMEOUT),
    ],
)
def test_an_errors_kind_tells_its_reason_before_its_text(error: Exception, reason: str) -> None:
    assert unobserved_reason(error) == reason


def test_a_stated_reason_is_kept_and_an_unlisted_one_refused() -> None:
    said = unknowns.stated(unknowns.STEP_UNOBSERVED, "not run: step 0 (configure) did not complete: x")
    assert unobserved(said, unknowns.TIMEOUT) == said
    assert unknowns.reason_stated(said) == unknowns.STEP_UNOBSERVED
    assert unknowns.unstated(said) == "not run: step 0 (configure) did not complete: x"
    assert unknowns.reason_stated("no reply: at all") == ""
    with pytest.raises(ValueError, match="not a listed reason"):
        unknowns.stated("gremlins", "x")


def _context() -> RunContext:
    counter = itertools.count()
    return RunContext("run", "nats-server", "2.14.5", "process", Expectations(), lambda: next(counter))


MAPPING = {"feature": "mapping", "functions": (), "source": "a.*", "destination": "b.$1", "observed": ""}


def _case(difference: str, detail: str, reason: str = "") -> tuple[str, str]:
    made = make_case(
        _context(), **MAPPING, expected="b.x", difference=difference, detail=detail, reason=reason
    )
    return made.verdict, made.detail


def test_every_unknown_case_made_states_a_reason_and_no_other_case_does() -> None:
    assert _case("unknown", "no PONG from the server in time") == (
        "unknown",
        "timeout: no PONG from the server in time",
    )
    assert _case("unknown", "exited", unknowns.ADAPTER_FAILED) == ("unknown", "adapter-failed: exited")
    assert _case("unknown", "") == ("unknown", "nothing-observed: ")
    # a reason the difference tells is not stated again
    assert _case(NOT_SUPPORTED, "") == ("unknown", "")
    assert _case("wrong-subject", "no PONG from the server in time") == (
        "diverge",
        "no PONG from the server in time",
    )


def test_a_case_judged_by_a_refusal_keeps_what_happened_without_the_reason() -> None:
    context = _context()
    unknown = make_case(context, **MAPPING, expected="b.x", difference="unknown", detail="not published")
    refusal = make_case(context, **MAPPING, expected="accept", difference="reference-accept-server-reject")
    judged = judged_as(unknown, refusal)
    assert (judged.verdict, judged.detail) == ("diverge", "not published")
