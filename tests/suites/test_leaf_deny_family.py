"""The leaf-deny family (`suites.families.leafnode`): a leaf node remote's deny lists, with account
functions on 2.14.10, hold back exactly the subjects the reference says, on live servers; a recorded case
replays; and the judging, without a server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import find, settings
from hypothesis.errors import NoSuchExample

from nats_conformance.fixtures.mutants import resolve_schemata
from nats_conformance.fixtures.servers import ProcessBackend
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case
from nats_conformance.reference.leafnode import InvalidDenySubjectError, deny_list
from nats_conformance.reference.profiles import for_version
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families.leafnode import DenyObservation, DenyRun, deny_runs
from tests.families import judged_offline, run_agreeing

FAMILY = FAMILIES["leaf-deny"]
RUN = DenyRun(("d.{{account-hash()}}", "d.a.*"), None, ("d.XqHlnZPF", "d.a.b", "d.c"))
"""Exports denied by a function (the hash of `LEAF`) and by a wildcard; no import list."""


def judged(run: DenyRun, observed: DenyObservation, version: str = "2.14.10") -> list[Case]:
    return judged_offline("leaf-deny", run, observed, version, "process-leaf")


def test_every_subject_is_judged_both_ways_by_its_direction_s_list() -> None:
    cases = judged(RUN, DenyObservation(None, (False, True, True), (True, True, True)))
    assert [(c.subject, c.expected, c.observed, c.verdict) for c in cases] == [
        ("", "accept", "accept", "agree"),
        ("d.XqHlnZPF", "export:denied", "export:denied", "agree"),
        ("d.a.b", "export:denied", "export:delivered", "diverge"),
        ("d.c", "export:delivered", "export:delivered", "agree"),
        ("d.XqHlnZPF", "import:delivered", "import:delivered", "agree"),
        ("d.a.b", "import:delivered", "import:delivered", "agree"),
        ("d.c", "import:delivered", "import:delivered", "agree"),
    ]
    assert cases[2].case_class == "leaf-deny:account-hash:export-delivered-reference-denied"
    assert json.loads(cases[0].source) == list(RUN.exports or ())
    assert cases[0].destination == ""


def test_before_2_14_10_the_function_is_a_literal_token() -> None:
    cases = judged(RUN, DenyObservation(None, (True, True, True), (True,) * 3), "2.14.5")
    assert cases[1].expected == "export:delivered"
    assert cases[1].functions == ""


@pytest.mark.parametrize(
    ("observed", "classes"),
    [
        # the server died of the unit: a crash, and each subject takes that judgement
        (DenyObservation(failure="panic: nil", crashed=True), {"leaf-deny:account-hash:server-crash"}),
        # it took the lists and runs, yet passed nothing on: a verdict, not an unknown
        (DenyObservation(failure="timeout", stalled=True), {"leaf-deny:account-hash:not-forwarding"}),
        # any other failure leaves every case unknown
        (DenyObservation(failure="connection reset"), {"leaf-deny:account-hash:unknown"}),
    ],
)
def test_a_unit_cut_short_gives_every_case_one_verdict(observed: DenyObservation, classes: set[str]) -> None:
    cases = judged(RUN, observed)
    assert len(cases) == 1 + 2 * len(RUN.subjects)
    assert {c.case_class for c in cases} == classes
    assert observed.failure in cases[0].detail


def test_an_error_logged_about_the_lists_and_a_refusal_are_judged_on_the_configuration() -> None:
    logged = judged(
        RUN, DenyObservation(None, (False, False, True), (True,) * 3, logged="[ERR] deny subject")
    )
    assert (logged[0].observed, logged[0].difference) == ("accept:logged-deny-error", "logged-deny-error")
    assert [c.verdict for c in logged[1:]] == ["agree"] * 6
    refused = DenyRun(("d.{{account-hash-import()}}",), None, ("d.a",))
    [case] = judged(refused, DenyObservation(refusal="function is not available"))
    assert (case.expected, case.observed, case.verdict) == (
        "reject:function-not-available",
        "reject",
        "agree",
    )
    assert case.functions == "account-hash-import"


def test_a_case_replays_its_lists_and_subject() -> None:
    case = judged(RUN, DenyObservation(None, (True, True, True), (True,) * 3))[1]
    assert FAMILY.unit_of(CaseFile.of(case)) == DenyRun(RUN.exports, None, ("d.XqHlnZPF",))


@pytest.mark.parametrize(("release", "drawn"), [("2.14.10", True), ("2.14.9", False)])
def test_account_functions_are_drawn_where_the_release_has_them(release: str, drawn: bool) -> None:
    def called(run: DenyRun) -> bool:
        return "{{" in json.dumps([run.exports, run.imports])

    search = settings(max_examples=300, database=None, derandomize=True)
    if drawn:
        run = find(deny_runs(for_version(release)), called, settings=search)
        assert run.subjects
    else:
        with pytest.raises(NoSuchExample):
            find(deny_runs(for_version(release)), called, settings=search)


NO_SUBJECT = {
    "empty token": lambda tokens: "" in tokens,
    "> before the end": lambda tokens: ">" in tokens[:-1],
    "space token": lambda tokens: " " in tokens,
}


@pytest.mark.parametrize("shape", NO_SUBJECT)
def test_lists_that_are_no_subject_are_drawn_and_refused(shape: str) -> None:
    """An entry with an empty token, a `>` before its end or a space token: only the subject check refuses
    such a list, so a server whose check lets it through is told apart."""

    def holds(run: DenyRun) -> bool:
        entries = (run.exports or ()) + (run.imports or ())
        return any(NO_SUBJECT[shape](entry.split(".")) for entry in entries)

    search = settings(max_examples=2000, database=None, derandomize=True)
    run = find(deny_runs(for_version("2.14.10")), holds, settings=search)
    with pytest.raises(InvalidDenySubjectError):
        deny_list((run.exports or ()) + (run.imports or ()), for_version("2.14.10"), "L", "R")


@pytest.fixture(scope="module")
def with_account_functions() -> Callable[[], Backend]:
    """Servers of 2.14.10: its mutant schemata build with every mutant off, which CI builds anyway."""
    binary = resolve_schemata("2.14.10").binary
    return lambda: ProcessBackend(binary)


@pytest.mark.live
def test_deny_lists_with_account_functions_agree_on_2_14_10(
    with_account_functions: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    rows = run_agreeing(
        "leaf-deny", 300, server_factory=with_account_functions, expectations=expectations, run_dir=tmp_path
    )
    assert all(row["backend"].endswith("-leaf") for row in rows)
    denied = {row["observed"] for row in rows if row["functions"] and row["verdict"] == "agree"}
    assert {"export:denied", "import:denied", "export:delivered", "import:delivered"} <= denied


@pytest.mark.live
def test_deny_lists_agree_or_are_listed(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    rows = run_agreeing(
        "leaf-deny", 300, server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    )
    assert {row["verdict"] for row in rows} <= {"agree", "expected"}
