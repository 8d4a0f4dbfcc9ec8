"""The overlap family (`suites.families.overlap`) on live servers: drawn sequences of overlapping
configurations, reloaded, pushed in account JWTs and restarted, record cases that agree or are listed
(a changed winner is listed for every release); a recorded sequence replays from its steps."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nats_conformance.fixtures.config import ServerConfig
from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.operator import OperatorBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.overlap import OverlapRun, Step
from tests.families import live_session, run_agreeing

pytestmark = pytest.mark.live


@pytest.mark.parametrize(("name", "how"), [("overlap", "reload"), ("overlap-operator", "push")])
def test_sequences_of_overlapping_mappings_agree_or_are_listed(
    name: str,
    how: str,
    *,
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    rows = run_agreeing(name, 400, server_factory=server_factory, expectations=expectations, run_dir=tmp_path)
    assert {row["feature"] for row in rows} == {"overlap"}
    steps = [Step.from_json(step) for row in rows for step in row["steps"]]
    assert {step.how for step in steps} == {"configure", "restart", how}
    assert any(len(row["expected"].split("|")) > 1 for row in rows), "no subject matched two sources"


@pytest.mark.parametrize("from_file", [False, True])
def test_a_redirected_source_replays_from_its_steps(
    from_file: bool, target: Target, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sequence runs again for the case's subject, from the replay line's `--steps` or a case file:
    the subject follows its source's destination through a reload and a restart."""
    if target.backend == "external":
        pytest.skip("a sequence restarts the server")
    steps = (
        Step("configure", (("ov.*", "od.m0.$1"), ("ov.a.*", "od.m1.$1"))).to_json(),
        Step("reload", (("ov.*", "od.m0s1.$1"), ("ov.a.*", "od.m1.$1"))).to_json(),
        Step("restart", (("ov.*", "od.m0s2.$1"),)).to_json(),
    )
    command = ["replay", "--server-version", target.spec.text, "--backend", target.backend]
    if from_file:
        case = CaseFile("overlap", "ov.*", "od.m0s1.$1", "ov.b", target.spec.text, steps=steps)
        (tmp_path / "case.json").write_text(case.to_json())
        command.append(str(tmp_path / "case.json"))
    else:
        command += ["--feature", "overlap", "--source", "ov.*", "--destination", "od.m0s1.$1"]
        command += ["--steps", json.dumps(steps), "--subject", "ov.b"]
    status = main(command)
    shown = capsys.readouterr().out
    assert status == 0, shown
    assert [line.split()[-1] for line in shown.splitlines() if line.startswith("  observed:")] == [
        "od.m0.b",
        "od.m0s1.b",
        "od.m0s2.b",
    ]


def four_sequences(how: str) -> list[OverlapRun]:
    """Two sequences that change their first configuration by `how` (one of them twice), one that
    restarts after it, and one that changes it by `how` and then restarts; each subject matches one
    source."""
    first = Step("configure", (("ov.*", "od.m0.$1"), ("ov.a.*", "od.m1.$1")))
    redirected = Step(how, (("ov.*", "od.m0s1.$1"), ("ov.a.*", "od.m1.$1")))
    return [
        OverlapRun((first, redirected), ("ov.a.b", "ov.b", "ov.a")),
        OverlapRun((first, redirected, Step(how, (("ov.*", "od.m0.$1"),))), ("ov.a.b", "ov.b")),
        OverlapRun((first, Step("restart", (("ov.a.*", "od.m1s1.$1"),))), ("ov.a.b", "ov.b")),
        OverlapRun((first, redirected, Step("restart", (("ov.a.*", "od.m1s2.$1"),))), ("ov.a.b", "ov.b")),
    ]


def test_sequences_share_the_steps_they_put_in_force_the_same_way(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four sequences (`four_sequences`) take four configuration changes where each alone takes two or
    three: the first configuration, the reload three share, the second reload of one, and one restart
    for the two that restart, one after its first configuration and one after its reload (a restart
    keeps nothing of what came before it); each agrees, as alone."""
    units = four_sequences("reload")
    changes: list[tuple[int, bool]] = []
    configure_apart = Session.configure_apart

    def counted(session: Session, groups: list[object], *, restart: bool = False) -> list[str]:
        changes.append((len(groups), restart))
        return configure_apart(session, groups, restart=restart)  # type: ignore[arg-type]

    monkeypatch.setattr(Session, "configure_apart", counted)
    family = FAMILIES["overlap"]
    with live_session(
        "overlap", server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    ) as (
        session,
        context,
        _,
    ):
        if not session.base.accounts:
            pytest.skip("sequences run one at a time on a server started with no account")
        outcomes = family.execute_many(session, units)
        judged = [
            cases_of(family.judge(context, session.profile, u, o))
            for u, o in zip(units, outcomes, strict=True)
        ]
    assert changes == [(4, False), (3, False), (1, False), (2, True)]
    assert all(case.verdict == "agree" for cases in judged for case in cases), [
        (case.subject, case.observed, case.difference)
        for cases in judged
        for case in cases
        if case.verdict != "agree"
    ]
    assert [len(cases) for cases in judged] == [6, 6, 4, 6]


def test_sequences_in_operator_mode_share_the_test_account_and_its_pushes(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In operator mode four sequences (`four_sequences`) run side by side in the test account, each in a
    namespace of its own (`numbered`): the first configuration, the push three share, the second push of
    one and the restart of two take three pushes and one start (each alone takes two to four pushes or
    starts); each sequence agrees and observes what it observes alone."""
    units = four_sequences("push")
    calls: list[str] = []
    push, start = OperatorBackend.push_account_jwt, OperatorBackend.start

    def pushing(server: OperatorBackend, token: str, *, subject: str | None = None) -> str:
        calls.append("push")
        return push(server, token, subject=subject)

    def starting(server: OperatorBackend, config: ServerConfig) -> None:
        calls.append("start")
        start(server, config)

    monkeypatch.setattr(OperatorBackend, "push_account_jwt", pushing)
    monkeypatch.setattr(OperatorBackend, "start", starting)
    family = FAMILIES["overlap-operator"]
    with live_session(
        "overlap-operator", server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    ) as (session, context, _):
        if not isinstance(session.server, OperatorBackend):
            pytest.skip("operator mode needs a server this suite starts")
        calls.clear()
        outcomes = family.execute_many(session, units)
        together = sorted(calls)
        judged = [
            cases_of(family.judge(context, session.profile, u, o))
            for u, o in zip(units, outcomes, strict=True)
        ]
        alone = [
            cases_of(family.judge(context, session.profile, u, family.execute(session, u))) for u in units
        ]
    assert together == ["push", "push", "push", "start"]
    assert all(case.verdict == "agree" for cases in judged for case in cases), [
        (case.subject, case.observed, case.difference)
        for cases in judged
        for case in cases
        if case.verdict != "agree"
    ]
    seen = [[(case.subject, case.observed) for case in cases] for cases in judged]
    assert seen == [[(case.subject, case.observed) for case in cases] for cases in alone]
    assert [len(cases) for cases in judged] == [6, 6, 4, 6]
