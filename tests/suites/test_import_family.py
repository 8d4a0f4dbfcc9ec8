"""The import family (`suites.families.imports`): stream and service imports with a drawn `to` between
two accounts of a live server deliver where the reference maps, or are refused or taken as
expectations.toml lists; a recorded case replays; and the judging, without a server."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import assume, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from nats_conformance.fixtures.config import Account, Export, Import, ServerConfig, render_config
from nats_conformance.fixtures.errors import ConfigRejectedError, ServerError
from nats_conformance.fixtures.layouts import RELAY, WILDCARD_REFERENCE, relay_subject
from nats_conformance.fixtures.mutants import resolve_schemata
from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.servers import ProcessBackend
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations, load_expectations
from nats_conformance.records.schema import Case
from nats_conformance.reference.contexts import (
    IMPORT_CYCLE,
    IMPORT_DUPLICATE,
    IMPORT_NOT_EXPORTED,
    compile_in,
    local_pattern,
    requested,
)
from nats_conformance.reference.functions import account_hash
from nats_conformance.reference.matching import contains
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.republish import subjects_collide
from nats_conformance.reference.subjects import is_valid_subject
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.engine.family import cases_of, check
from nats_conformance.suites.engine.verdicts import wrong_subject
from nats_conformance.suites.families import FAMILIES, family_of_feature
from nats_conformance.suites.families.imports import (
    ImportFamily,
    ImportObservation,
    ImportRun,
    account_function_imports,
    exports_near,
    import_runs,
    listens_near,
    published_subjects,
    reversible_destinations,
)
from nats_conformance.suites.strategies import sources
from tests.families import judged_offline, live_session, run_agreeing

FAMILY = FAMILIES["import"]


def judged_cases(run: ImportRun, observed: ImportObservation, version: str = "2.14.5") -> list[Case]:
    return judged_offline("import", run, observed, version)


def judged_live(
    unit: ImportRun, server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> list[Case]:
    """The unit's cases as the family executes and judges it on a fresh server."""
    with live_session(
        "import", server_factory=server_factory, expectations=expectations, run_dir=tmp_path / "run"
    ) as (session, context, _):
        return cases_of(check(FAMILY, session, context, unit))


def judged(run: ImportRun, observed: ImportObservation, version: str = "2.14.5") -> list[tuple[str, str]]:
    return [(case.verdict, case.difference) for case in judged_cases(run, observed, version)]


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
        ("diverge", "duplicated"),
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
    # its subjects were never delivered: the panic is what the server did with them too
    with_subjects = ImportRun("stream", "e.*", "$1.$1", ("e.a", "e.b"))
    assert judged(with_subjects, crashed) == [("diverge", "server-crash")] * 3
    cut = ImportObservation(configured=True, failure="connection reset")
    assert judged(ImportRun("stream", "e.*", "x.$1", ("e.a",)), cut) == [
        ("agree", ""),
        ("unknown", "unknown"),
    ]


def test_a_wrong_subject_is_named_as_in_every_family() -> None:
    """`wrong_subject` sets apart a source token that begins with `*` where the subject has another
    token there, and partition counts past 31 and 32 bits, as for mappings and stream transforms, so one
    expectation can cover each."""
    star = ImportRun("stream", "e.*a.*", "x.$1", ("e.*a.b",))
    assert judged(star, ImportObservation(configured=True, arrived=(("x.c",),))) == [
        ("agree", ""),
        ("diverge", "wrong-subject"),  # the subject holds `*a` itself: its matching is not at issue
    ]
    assert wrong_subject("e.*a.*", "x.$1", "e.q.b") == "wrong-subject-star-prefixed-token"
    assert wrong_subject("e.*a.*", "x.$1", "e") == "wrong-subject-star-prefixed-token"
    assert wrong_subject("e.*", "{{partition(4294967295,1)}}", "e.a") == "wrong-subject-count-beyond-31-bits"
    assert wrong_subject("e.*", "{{partition(2147483647,1)}}", "e.a") == "wrong-subject"
    count = ImportRun("stream", "e.*", "x.{{partition(4294967299,1)}}", ("e.a",))
    assert judged(count, ImportObservation(configured=True, arrived=(("x.1",),)), "2.9.25") == [
        ("agree", ""),
        ("diverge", "wrong-subject-count-beyond-32-bits"),
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


@given(st.data())
@settings(max_examples=100, deadline=None)
def test_a_relay_collides_with_the_import_and_with_none_of_its_subjects(data: st.DataObject) -> None:
    """The exporter's import from the relay account collides with the unit's local subject (so the
    server's cycle check of the unit's import walks it), and no subject of the unit's source, where a
    service request arrives in the exporter, falls under it (so it changes no delivery)."""
    drawn = data.draw(import_runs(for_version("2.14.5"), file_only=False))
    assert not drawn.relay
    run = replace(drawn, relay=relay_subject(drawn.kind, drawn.source, drawn.destination))
    assume(run.relay)
    local = (run.destination or run.source).split(".")
    read = [token if run.kind == "stream" else WILDCARD_REFERENCE.sub("*", token) for token in local]
    assert subjects_collide(run.relay, ".".join(read))
    if run.kind == "stream":
        assert run.relay.split(".")[0] == "*"
    else:
        assert not subjects_collide(run.relay, run.source)
    _, exporter, relay = run.accounts()
    assert exporter.imports == (Import(run.kind, RELAY, run.relay, run.relay),)
    assert relay.exports == exporter.exports
    recorded = judged_cases(run, ImportObservation(rejection="refused"))[0]
    assert FAMILY.unit_of(CaseFile.of(recorded)) == replace(run, subjects=(), seed=0)


@pytest.mark.live
@pytest.mark.parametrize(
    "drawn", [("stream", "e.*.>", "x.{{wildcard(1)}}.>"), ("service", "e.*.*", "x.$2.$1")]
)
def test_an_import_whose_exporter_imports_from_the_relay_agrees(
    drawn: tuple[str, str, str],
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    """With the exporter importing a colliding subject of the relay account, the import is taken and
    every subject arrives where the reference maps it, as without the relay."""
    kind, source, to = drawn
    relay = relay_subject(kind, source, to)
    assert relay == ("*.*.>" if kind == "stream" else "x.*.*")
    subjects = tuple(published_subjects(kind, source, to, for_version("2.14.5"), 7))
    unit = ImportRun(kind, source, to, subjects, 7, relay)
    cases = judged_live(unit, server_factory, expectations, tmp_path)
    assert f'{{{kind}: {{account: "RLY", subject: "{relay}"}}' in render_config(
        ServerConfig(accounts=unit.accounts())
    )
    taken = cases[0].observed == "accept"
    assert [case.verdict for case in cases] == ["agree"] * (1 + len(subjects) * taken), [
        c.difference for c in cases
    ]


@pytest.mark.live
def test_a_crash_while_a_units_configuration_loads_is_its_own_only_if_it_recurs(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server panics while the unit's configuration loads, of something else in force (here a stream
    import whose `to` uses one wildcard twice, taken and crashing the server at the reload's probe
    subscription on the releases expectations.toml names): the unit's configuration is loaded again on
    the restarted server and judged on its own (refused, as the reference says), and the restart is
    journaled, where the unit used to be blamed for the crash."""
    configure, crashing = Session.configure_accounts, ImportRun("stream", "e.*", "$1.$1", ()).accounts()
    loads: list[str] = []

    def crash_first(self: Session, *accounts: Account) -> None:
        if loads:
            loads.append("unit")
            configure(self, *accounts)
            return
        loads.append("loaded")
        try:
            configure(self, *crashing)
        except ConfigRejectedError:
            raise
        except ServerError:
            loads[0] = "crashed"
            raise

    monkeypatch.setattr(Session, "configure_accounts", crash_first)
    refused = ImportRun("service", "e.gUIz.>", "gUIz.QW.{{splitFromRight(1,3)}}", ())
    with live_session(
        "import", server_factory=server_factory, expectations=expectations, run_dir=tmp_path / "run"
    ) as (session, context, _):
        cases = cases_of(check(FAMILY, session, context, refused))
    if loads[0] != "crashed":
        pytest.skip(f"nats-server {session.server.version} loads e.* -> $1.$1 without a crash")
    assert [(case.verdict, case.observed) for case in cases] == [("agree", "reject")]
    assert loads == ["crashed", "unit"]
    assert len(session.restarts) == 1
    assert "panic" in session.restarts[0]


@pytest.mark.live
@pytest.mark.parametrize(
    ("prefix", "taken"),
    [("p", True), ("p.q.", True), ("p.*", False), ("p.>", False), ("p.*q", True), ("q>", True)],
)
def test_a_stream_import_with_a_prefix_delivers_behind_it_or_is_refused(
    prefix: str,
    taken: bool,
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    """A stream import with `prefix` in place of `to`: a literal prefix is taken and every subject
    arrives behind it (`p.` added once), one that is not a literal is refused, as the reference says."""
    source = "e.*.>"
    subjects = tuple(published_subjects("stream", source, "", for_version("2.14.5"), 3))
    unit = ImportRun("stream", source, "", subjects, 3, prefix=prefix)
    assert 'prefix: "' + prefix + '"' in render_config(ServerConfig(accounts=unit.accounts()))
    cases = judged_live(unit, server_factory, expectations, tmp_path)
    assert [case.verdict for case in cases] == ["agree"] * (1 + len(subjects) * taken)
    assert cases[0].observed == ("accept" if taken else "reject")
    arrived = [case.observed for case in cases[1:]]
    assert all(subject.startswith(prefix.rstrip(".") + ".e.") for subject in arrived)
    assert FAMILY.unit_of(CaseFile.of(cases[0])).prefix == prefix


@given(st.data())
def test_an_account_function_import_has_a_literal_source_and_one_call_in_its_to(data: st.DataObject) -> None:
    source = data.draw(sources(namespace="e"))
    literal, to = data.draw(account_function_imports(source, for_version("2.14.10")))
    assert not {"*", ">"} & set(literal.split("."))
    assert len(literal.split(".")) == len(source.split("."))
    calls = [token for token in to.split(".") if token not in ("r", "s")]
    assert len(calls) == 1, to
    assert "account-hash" in calls[0].lower(), to


@pytest.mark.parametrize(
    ("release", "file_only", "drawn"),
    [("2.14.10", True, True), ("2.14.9", True, False), ("2.14.10", False, False)],
)
def test_only_a_file_on_a_release_with_account_functions_draws_them(
    release: str, file_only: bool, drawn: bool
) -> None:
    def called(run: ImportRun) -> bool:
        return "account-hash" in run.destination.lower()

    runs = import_runs(for_version(release), file_only=file_only)
    search = settings(max_examples=300, database=None, derandomize=True)
    if drawn:
        run = find(runs, lambda run: called(run) and "*" not in run.source, settings=search)
        assert (run.prefix, run.relay, run.export) == ("", "", "")
    else:
        with pytest.raises(NoSuchExample):
            find(runs, called, settings=search)


@pytest.fixture(scope="module")
def with_account_functions() -> Callable[[], Backend]:
    """Servers of 2.14.10, the first release with account functions: its mutant schemata build with every
    mutant off (the original code, tests/live/test_mutants.py), which CI builds anyway."""
    binary = resolve_schemata("2.14.10").binary
    return lambda: ProcessBackend(binary)


@pytest.mark.live
@pytest.mark.parametrize(
    "imported",
    [
        ("e.*", "x.{{account-hash()}}.{{account-hash-import()}}.$1", True),
        ("e.a", "x.{{account-hash-leaf-remote()}}", False),
        ("e.a", "x.{{account-hash-import(1)}}", False),
    ],
)
def test_an_import_in_a_file_resolves_account_functions_or_is_refused(
    imported: tuple[str, str, bool],
    with_account_functions: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    """From 2.14.10 and 2.15.3 an import's `to` may hold account functions: the importer's hash and
    the exporter's arrive in the subject; a function the import has no account for, or one given an
    argument, is refused (with a literal source, whose `to` is no transform, too)."""
    source, to, taken = imported
    unit = ImportRun("stream", source, to, ("e.a",))
    cases = judged_live(unit, with_account_functions, expectations, tmp_path)
    assert [case.verdict for case in cases] == ["agree"] * (1 + taken), cases
    assert cases[0].observed == ("accept" if taken else "reject")
    if taken:
        assert cases[1].observed == f"x.{account_hash('IMP')}.{account_hash('EXP')}.a"


@pytest.mark.live
@pytest.mark.parametrize("kind", ["stream", "service"])
def test_an_import_whose_exporter_imports_everything_back_is_refused(
    kind: str, server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    """The exporter imports `>` back from the importer (which then exports it): the two imports form a
    cycle, and the configuration is refused whichever import the server adds last, as the reference
    says (`IMPORT_CYCLE`); nothing is published."""
    unit = ImportRun(kind, "e.*", "x.$1", ("x.a",) if kind == "service" else ("e.a",), cycle=True)
    importer, exporter, _ = unit.accounts()
    assert importer.exports == exporter.exports
    assert exporter.imports == (Import(kind, "IMP", ">", ">"),)
    cases = judged_live(unit, server_factory, expectations, tmp_path)
    assert [(case.verdict, case.expected, case.observed) for case in cases] == [
        ("agree", f"reject:{IMPORT_CYCLE}", "reject")
    ], cases
    assert json.loads(cases[0].steps[0])["cycle"] is True
    assert FAMILY.unit_of(CaseFile.of(cases[0])).cycle


@pytest.mark.live
@pytest.mark.parametrize("kind", ["stream", "service"])
@pytest.mark.parametrize("twist", ["duplicate", "unexported"])
def test_an_import_listed_twice_or_of_nothing_exported_is_refused(
    kind: str, twist: str, server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    """The importer lists its import twice (`IMPORT_DUPLICATE`), or the exporter exports nothing
    (`IMPORT_NOT_EXPORTED`): the configuration is refused, as the reference says; nothing is
    published, and the case's step brings the twist back."""
    subjects = ("x.a",) if kind == "service" else ("e.a",)
    unit = ImportRun(kind, "e.*", "x.$1", subjects, **{twist: True})
    importer, exporter, _ = unit.accounts()
    if twist == "duplicate":
        assert importer.imports == (importer.imports[0], importer.imports[0])
    else:
        assert exporter.exports == ()
    refusal = IMPORT_DUPLICATE if twist == "duplicate" else IMPORT_NOT_EXPORTED
    cases = judged_live(unit, server_factory, expectations, tmp_path)
    assert [(case.verdict, case.expected, case.observed) for case in cases] == [
        ("agree", f"reject:{refusal}", "reject")
    ], cases
    assert json.loads(cases[0].steps[0])[twist] is True
    assert getattr(FAMILY.unit_of(CaseFile.of(cases[0])), twist)


@given(st.sampled_from(("e.*.a", "e.*.*.>", "e.b.*", "e.a")), st.data())
@settings(max_examples=60, deadline=None)
def test_an_export_near_the_import_is_a_valid_subject_of_its_account(
    source: str, data: st.DataObject
) -> None:
    export = data.draw(exports_near(source))
    assert is_valid_subject(export.replace("*x", "x"))
    assert export.split(".")[0] == "e"


@pytest.mark.parametrize(
    ("export", "refusal"),
    [
        ("e.*.>", ""),
        ("e.*.*", ""),
        ("e.*.a", ""),
        ("e.*.b", IMPORT_NOT_EXPORTED),
        ("e.x.a", IMPORT_NOT_EXPORTED),
    ],
)
def test_an_import_is_taken_iff_the_export_contains_it(export: str, refusal: str) -> None:
    """`e.*.a` under an export of `*` where it has `*` (mutants 1494 and 1498 of 2.14.10), or not."""
    unit = ImportRun("stream", "e.*.a", "", ("e.b.a",), export=export)
    assert unit.refusal == refusal
    assert (refusal == "") is contains(unit.source, export)
    _, exporter, _ = unit.accounts()
    assert {item.subject for item in exporter.exports} == {export}
    step = json.loads(unit.to_json())
    assert step["export"] == export
    case = CaseFile("stream-import", unit.source, "", "e.b.a", "2.14.10", steps=(unit.to_json(),))
    assert FAMILY.unit_of(case).export == export
    refused = ImportObservation(rejection="stream import not authorized")
    other = "reference-accept-server-reject-narrow-export" if not refusal else ""
    assert judged(unit, refused)[0][1] == other


@pytest.mark.live
@pytest.mark.parametrize("kind", ["stream", "service"])
@pytest.mark.parametrize("export", ["e.*.>", "e.*.b"])
def test_an_import_under_an_export_of_stars_is_taken_iff_contained(
    kind: str, export: str, server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    """`e.*.a` under an export of `e.*.>` is taken and delivers; under `e.*.b` it is refused."""
    unit = ImportRun(kind, "e.*.a", "", ("e.b.a",), export=export)
    cases = judged_live(unit, server_factory, expectations, tmp_path)
    taken = export == "e.*.>"
    assert [(case.verdict, case.expected) for case in cases][:1] == [
        ("agree", "accept" if taken else f"reject:{IMPORT_NOT_EXPORTED}")
    ], cases
    assert [case.verdict for case in cases] == ["agree"] * (2 if taken else 1), cases


BATCH = [
    ImportRun("stream", "e.*", "x.$1", ("e.a", "e.b")),
    ImportRun("service", "e.*", "x.$1", ("x.a",)),
    ImportRun("stream", "e.*.*", "y.{{wildcard(2)}}.{{wildcard(1)}}", ("e.a.b",)),
    ImportRun("stream", "e.*", "x.$2", ("e.a",)),
    ImportRun("stream", "e.*", "x.$2", ("e.a",)),
    ImportRun("stream", "e.*", "x.$1", ("e.c",), duplicate=True),
    ImportRun("service", "e.*", "x.$1", ("x.a",), unexported=True),
]
"""Imports taken, one refused twice (refusals that read alike), and twisted configurations."""


def judged_together_and_alone(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> tuple[list[list[tuple[str, str, str]]], list[list[tuple[str, str, str]]], list[str]]:
    """Each unit of `BATCH` judged from one `execute_many` of them all, then from an `execute` of its
    own, on a fresh server; and the server's restarts."""
    with live_session(
        "import", server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    ) as (session, context, _):

        def cases(unit: ImportRun, observed: ImportObservation | ServerError) -> list[tuple[str, str, str]]:
            assert not isinstance(observed, ServerError), observed
            judged = cases_of(FAMILY.judge(context, session.profile, unit, observed))
            return [(case.subject, case.verdict, case.difference) for case in judged]

        outcomes = FAMILY.execute_many(session, BATCH)
        together = [cases(unit, outcome) for unit, outcome in zip(BATCH, outcomes, strict=True)]
        alone = [cases(unit, FAMILY.execute(session, unit)) for unit in BATCH]
        return together, alone, list(session.restarts)


@pytest.mark.live
def test_a_batch_of_imports_is_judged_as_each_alone(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    """`ImportFamily.execute_many` (the every-context family's import place): each unit's accounts under
    names of their own in one reload, a refused import found by its words, then the units published side
    by side; each is judged as alone."""
    together, alone, _ = judged_together_and_alone(server_factory, expectations, tmp_path)
    assert together == alone
    assert {verdict for cases in together for _, verdict, _ in cases} == {"agree"}


@pytest.mark.live
def test_a_server_that_dies_during_a_batch_of_imports_runs_the_cut_units_again_alone(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server dies while the batch's units publish (stopped here, as a crash would end it): it is
    restarted, journaled, and every unit the death cut short runs again alone, so that each is judged as
    alone and none is cut short."""
    observed = ImportFamily._observed
    stopped: list[str] = []

    def dying(
        family: ImportFamily, session: Session, unit: ImportRun, exporter_url: str
    ) -> ImportObservation:
        if not stopped and unit is BATCH[2]:
            stopped.append(session.server.url)
            session.server.stop()
        return observed(family, session, unit, exporter_url)

    monkeypatch.setattr(ImportFamily, "_observed", dying)
    together, alone, restarts = judged_together_and_alone(server_factory, expectations, tmp_path)
    assert stopped
    assert len(restarts) == 1, restarts
    assert together == alone


def test_the_importers_second_subscription_receives_what_matches_it_once() -> None:
    """`listen`: a message that arrived right under `>` must reach the importer's other subscription iff
    its subject matches it; the expected and observed texts say what that subscription had."""
    run = ImportRun("stream", "e.*", "x.$1", ("e.a", "e.b", "e.c"), listen="x.a")
    observed = ImportObservation(
        configured=True, arrived=(("x.a",), ("x.b",), ("x.c",)), heard=(("x.a",), ("x.b",), ())
    )
    cases = judged_cases(run, observed)
    assert [(case.verdict, case.difference) for case in cases] == [
        ("agree", ""),
        ("agree", ""),
        ("diverge", "listener-extra"),
        ("agree", ""),
    ]
    assert (cases[1].expected, cases[1].observed) == ("x.a; x.a: x.a", "x.a; x.a: x.a")
    assert cases[3].observed == "x.c; x.a: nothing"
    missed = replace(observed, heard=((), (), ()))
    assert judged(run, missed)[1] == ("diverge", "listener-missed")
    twice = replace(observed, heard=(("x.a", "x.a"), (), ()))
    assert judged(run, twice)[1] == ("diverge", "listener-wrong")


def test_a_listener_missed_under_a_to_that_repeats_a_wildcard_is_set_apart() -> None:
    run = ImportRun("stream", "e.*", "$1.$1", ("e.a",), listen="a.>")
    observed = ImportObservation(configured=True, arrived=(("a.a",),), heard=((),))
    assert judged(run, observed, "2.14.10")[1] == ("diverge", "listener-missed-repeated-wildcard")


def test_a_listener_is_judged_only_where_the_message_arrived_right_under_the_wide_one() -> None:
    run = ImportRun("stream", "e.*", "x.$1", ("e.a",), listen="x.*")
    observed = ImportObservation(configured=True, arrived=(("x.b",),), heard=(("x.b",),))
    assert judged(run, observed)[1] == ("diverge", "wrong-subject")


@given(data=st.data())
@settings(max_examples=60, deadline=None)
def test_listeners_are_valid_subjects_near_where_an_import_delivers(data: st.DataObject) -> None:
    """`listens_near`: a valid subject near the delivered subject (its first token kept, each other token
    kept, `*`, `x` or a last `>`), and near the `to` with its placeholders made `*` when nothing is
    delivered."""
    delivered = data.draw(st.sampled_from(("x.a.b", "x.a", "")))
    listen = data.draw(listens_near("x.$1.{{wildcard(2)}}", delivered))
    base = (delivered or "x.*.*").split(".")
    tokens = listen.split(".")
    assert is_valid_subject(listen)
    assert tokens[0] == "x"
    assert all(
        token in ("*", "x", ">") or (index < len(base) and token == base[index])
        for index, token in enumerate(tokens)
    ), listen


def test_a_recorded_listener_replays_with_its_unit() -> None:
    run = ImportRun("stream", "e.*", "x.$1", ("e.a",), listen="x.>")
    case = judged_cases(run, ImportObservation(configured=True, arrived=(("x.a",),), heard=(("x.a",),)))[1]
    assert FAMILY.unit_of(CaseFile.of(case)).listen == "x.>"


def test_an_export_near_an_import_sometimes_holds_a_literal_token_under_its_wildcard() -> None:
    """`*x` where the import has `*`: a literal token that begins with a wildcard's character, which
    does not contain the import's `*` (`find` fails when no draw shows it)."""
    found = find(
        exports_near("e.*.b"),
        lambda export: export.split(".")[1] == "*x",
        settings=settings(max_examples=2000, derandomize=True, database=None),
    )
    assert not contains("e.*.b", found)
