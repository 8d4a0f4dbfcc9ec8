"""The import family (`suites.families.imports`): stream and service imports with a drawn `to` between
two accounts of a live server deliver where the reference maps, or are refused or taken as
expectations.toml lists; a recorded case replays; and the judging, without a server."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from fixtures.config import Account, Export, Import, ServerConfig, render_config
from fixtures.options import Target
from fixtures.servers.base import Backend
from records.casefile import CaseFile
from records.expectations import Expectations, load_expectations
from reference.contexts import compile_in, local_pattern, requested
from reference.profiles import for_version
from suites.__main__ import main
from suites.engine.family import cases_of
from suites.engine.verdicts import RunContext
from suites.families import FAMILIES, family_of_feature
from suites.families.imports import ImportObservation, ImportRun, published_subjects, reversible_destinations
from tests.families import run_agreeing

FAMILY = FAMILIES["import"]


def judged(run: ImportRun, observed: ImportObservation, version: str = "2.14.5") -> list[tuple[str, str]]:
    counter = itertools.count()
    context = RunContext("run", "nats-server", version, "process", Expectations(), lambda: next(counter))
    cases = cases_of(FAMILY.judge(context, for_version(version), run, observed))
    return [(case.verdict, case.difference) for case in cases]


def test_the_configuration_renders_exports_imports_and_the_user_without_credentials() -> None:
    config = ServerConfig(
        accounts=(
            Account("IMP", imports=(Import("stream", "EXP", "e.*", "x.$1"),)),
            Account("EXP", exports=(Export("stream", ">"),)),
        )
    )
    text = render_config(config, port=4222)
    assert '{stream: {account: "EXP", subject: "e.*"}, to: "x.$1"}' in text
    assert 'exports: [{stream: ">"}]' in text
    assert text.rstrip().endswith('no_auth_user: "IMP"')


def test_each_stream_delivery_is_judged_against_the_reference() -> None:
    run = ImportRun("stream", "e.*.*", "x.$2.$1", ("e.a.b", "e.c.d", "e.e.f", "e.g.h"))
    arrived = (("x.b.a",), ("x.c.d",), (), ("x.h.g", "x.h.g"))
    assert judged(run, ImportObservation(configured=True, arrived=arrived)) == [
        ("agree", ""),
        ("agree", ""),
        ("diverge", "wrong-subject"),
        ("diverge", "not-delivered"),
        ("diverge", "delivered-more-than-once"),
    ]


def test_a_service_request_travels_the_transform_backwards_and_its_reply_comes_back() -> None:
    run = ImportRun("service", "e.*.*", "x.$2.$1", ("x.b.a", "x.d.c", "x.f.e"))
    observed = ImportObservation(
        configured=True, arrived=(("e.a.b",), ("e.c.d",), ("e.d.c",)), replied=(True, False, True)
    )
    assert judged(run, observed) == [
        ("agree", ""),
        ("agree", ""),
        ("diverge", "no-reply"),
        ("diverge", "wrong-subject"),
    ]
    assert (
        published_subjects("service", "e.*.*", "x.$2.{{wildcard(1)}}", for_version("2.14.5"), 1)[0][:2]
        == "x."
    )


def test_refusals_crashes_and_literal_sources_are_told_apart() -> None:
    spread = ImportRun("stream", "e.*", "x.{{split(1,-)}}", ())
    assert judged(spread, ImportObservation(rejection="not allowed")) == [
        ("diverge", "reference-accept-server-reject")
    ]
    repeated = ImportRun("service", "e.*.*", "x.$1.$1", ())
    assert judged(repeated, ImportObservation(configured=True)) == [
        ("diverge", "reference-reject-import-not-reversible-server-accept")
    ]
    literal = ImportRun("stream", "e.b", "x.{{random(3)}}", ("e.b",))
    assert judged(literal, ImportObservation(configured=True, arrived=(("x.{{random(3)}}",),))) == [
        ("agree", ""),
        ("diverge", "wrong-subject-literal-source"),
    ]
    crashed = ImportObservation(failure="panic: runtime error", crashed=True)
    assert judged(ImportRun("stream", "e.*", "$1.$1", ()), crashed) == [("diverge", "server-crash")]
    cut = ImportObservation(configured=True, failure="connection reset")
    assert judged(ImportRun("stream", "e.*", "x.$1", ("e.a",)), cut) == [
        ("agree", ""),
        ("unknown", "unknown"),
    ]


def test_the_listed_findings_are_expected_on_the_releases_that_show_them() -> None:
    listed = load_expectations()
    for version, feature, functions, difference in (
        ("2.14.5", "stream-import", "split", "reference-accept-server-reject"),
        ("2.10.27", "stream-import", "wildcard", "server-crash"),
        ("2.9.25", "service-import", "partition", "reference-reject-import-not-reversible-server-accept"),
        ("2.12.15", "stream-import", "random", "wrong-subject-literal-source"),
        ("2.2.6", "stream-import", "n", "reference-reject-invalid-destination-server-accept"),
        ("2.8.4", "stream-import", "n", "server-crash"),
        ("2.9.25", "service-import", "wildcard", "not-delivered"),
        ("2.14.5", "stream-import", "wildcard", "reference-accept-server-reject-jwt-validation"),
    ):
        entry = listed.classify(
            "nats-server", version, feature=feature, functions=functions, difference=difference
        )
        assert entry is not None, (version, feature, difference)
    assert (
        listed.classify(
            "nats-server",
            "2.9.25",
            feature="stream-import",
            functions="split",
            difference="reference-accept-server-reject",
        )
        is None
    )


@pytest.mark.live
def test_drawn_imports_agree_or_are_listed(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    rows = run_agreeing(
        "import", 200, server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    )
    assert {row["feature"] for row in rows} == {"stream-import", "service-import"}
    delivered = [row for row in rows if row["subject"] and row["verdict"] == "agree"]
    assert {row["feature"] for row in delivered} == {"stream-import", "service-import"}, (
        "nothing was delivered"
    )


@pytest.mark.live
def test_drawn_imports_in_account_jwts_agree_or_are_listed(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    rows = run_agreeing(
        "import-operator", 100, server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    )
    assert all(row["backend"].endswith("-operator") for row in rows)
    delivered = [row for row in rows if row["subject"] and row["verdict"] == "agree"]
    assert {row["feature"] for row in delivered} == {"stream-import", "service-import"}, (
        "nothing was delivered"
    )


@pytest.mark.live
def test_a_case_of_a_service_import_replays(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    reason = FAMILY.unsupported(target.spec.text, target.backend)
    if reason:
        pytest.skip(reason)
    assert family_of_feature("service-import") is FAMILY
    case = CaseFile("service-import", "e.*.*", "x.$2.$1", "x.b.a", target.spec.text)
    assert FAMILY.unit_of(case) == ImportRun("service", "e.*.*", "x.$2.$1", ("x.b.a",))
    command = ["replay", "--server-version", target.spec.text, "--backend", target.backend]
    status = main([*command, "--feature", "service-import", "--source", "e.*.*", "--destination", "x.$2.$1"])
    output = capsys.readouterr().out
    assert status == 0, output
    assert "agree" in output


@given(st.data())
@settings(max_examples=50, deadline=None)
def test_a_reversible_destination_is_taken_by_a_service_import(data: st.DataObject) -> None:
    """Without a spaced literal or a `$` of an index no wildcard has, a destination of
    `reversible_destinations` is one the reference takes in a service import, and every request on its
    local pattern reaches one exporter subject."""
    source = data.draw(st.sampled_from(["e.*", "e.*.x.*", "e.a.*.*.>", "e.b"]))
    destination = data.draw(reversible_destinations(source))
    profile = for_version("2.14.5")
    wildcards = {f"${n}" for n in range(1, source.count("*") + 1)}
    if " " in destination or any(t[:1] == "$" and t not in wildcards for t in destination.split(".")):
        return
    transform = compile_in("service-import", source, destination, profile)
    local = local_pattern(destination, profile).replace("*", "q").replace(">", "q")
    assert requested(transform, local)


@pytest.mark.parametrize("token", ["$0", "$3", "$9223372036854775808", "$-7"])
def test_a_reversible_destination_sometimes_names_an_index_no_wildcard_has(token: str) -> None:
    """The boundary of `$n`: an index of no wildcard of the source (0, one past the last, an integer edge),
    beside the source's wildcards, each still named once (`find` fails when no draw shows the token)."""
    found = find(
        reversible_destinations("e.*.*"),
        lambda destination: token in destination.split("."),
        settings=settings(max_examples=5000, derandomize=True, database=None),
    )
    for n in (1, 2):
        names = {f"${n}", f"{{{{wildcard({n})}}}}", f"{{{{ wildcard({n}) }}}}"}
        assert sum(part in names for part in found.split(".")) == 1
