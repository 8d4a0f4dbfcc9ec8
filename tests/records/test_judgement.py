"""`records.judgement`: when an adapter judged by a release's engine conforms to it, and the exit status
that verdict gives (README, "Exit statuses")."""

from __future__ import annotations

from dataclasses import replace

from nats_conformance.records.judgement import DivergenceTally, EngineJudgement, judgements, run_conforms
from nats_conformance.records.schema import Case
from nats_conformance.reference.cli import CONFORMS_TO_ENGINE, DIVERGED, PASSED, TOO_MANY_UNKNOWN, exit_status

DIVERGING = Case(
    run_id="r",
    case_id=0,
    implementation="lib",
    server_version="2.14.5",
    backend="adapter",
    feature="mapping",
    functions="left",
    source="*",
    destination="{{left(1,1)}}",
    subject="b",
    expected='{"subject": "b"}',
    observed="error unknown-function",
    verdict="diverge",
    difference="reference-accept-server-reject-unknown-function",
    oracle="reference-alone",
)


def test_every_divergence_shared_with_the_engine_conforms() -> None:
    tally = DivergenceTally()
    tally.add(
        [DIVERGING, replace(DIVERGING, case_id=1), replace(DIVERGING, verdict="agree", oracle="all-agree")]
    )
    judgement = tally.judgement("lib@2.14.5", "2.14.5")
    assert judgement.conforms
    assert judgement.verdict == "conforms to nats-server 2.14.5"
    assert judgement.shared == {DIVERGING.case_class: 2}
    assert EngineJudgement.of(judgement.describe()) == judgement

    tally.add([replace(DIVERGING, oracle="target-alone")])
    mixed = tally.judgement("lib@2.14.5", "2.14.5")
    assert not mixed.conforms
    assert mixed.lines()[0] == (
        "verdict: lib@2.14.5 diverges from the documents and from nats-server 2.14.5 "
        "(1 of 3 divergences not nats-server 2.14.5's)"
    )
    assert not DivergenceTally().judgement("lib@2.14.5", "2.14.5").conforms  # nothing to conform in


def test_a_run_conforms_only_when_its_every_divergence_is_a_conforming_adapter_s() -> None:
    judged = EngineJudgement("lib@2.14.5", "2.14.5", 2, {DIVERGING.case_class: 2}).describe()
    assert run_conforms({"verdicts": {"diverge": 2}, "judgements": [judged]})
    assert not run_conforms({"verdicts": {"diverge": 3}, "judgements": [judged]})  # a server's too
    assert not run_conforms({"verdicts": {"diverge": 0}, "judgements": []})
    assert judgements({"verdicts": {}}) == ()  # a manifest written before judgements


def test_divergences_outrank_unknown_cases_which_outrank_conformance() -> None:
    assert exit_status(diverged=True, unknown="many", conforms=True) == DIVERGED
    assert exit_status(diverged=False, unknown="many", conforms=True) == TOO_MANY_UNKNOWN
    assert exit_status(diverged=False, unknown=None, conforms=True) == CONFORMS_TO_ENGINE == 4
    assert exit_status(diverged=False, unknown=None) == PASSED
