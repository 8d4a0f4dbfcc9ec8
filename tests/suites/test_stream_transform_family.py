"""The stream-transform family (`suites.families.streams`): drawn transforms in a stream, a source and a
mirror on live servers (2.10 and later) store every subject where the reference maps it, or are refused
or taken as expectations.toml lists; a recorded case replays; and the judging, without a server."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from nats_conformance.fixtures.clients.jetstream import api_error
from nats_conformance.fixtures.layouts import PLACES
from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.profiles import for_version
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES, family_of_feature
from nats_conformance.suites.families.streams import (
    CONSUMER,
    DELIVER,
    DELIVER_PREFIXES,
    Consumed,
    TransformObservation,
    TransformRun,
    consumer_of,
    deliver_prefix_of,
    transform_runs,
)
from nats_conformance.suites.strategies import with_wildcard_token
from tests.families import live_session, run_agreeing

FAMILY = FAMILIES["stream-transform"]


def judged(
    run: TransformRun, observed: TransformObservation, version: str = "2.14.5"
) -> list[tuple[str, str]]:
    counter = itertools.count()
    context = RunContext("run", "nats-server", version, "process", Expectations(), lambda: next(counter))
    cases = cases_of(FAMILY.judge(context, for_version(version), run, observed))
    return [(case.verdict, case.difference) for case in cases]


def test_each_stored_subject_is_judged_against_the_reference() -> None:
    run = TransformRun("source", "t.*.*", "x.$2.{{wildcard(1)}}", ("t.a.b", "t.c.d", "t.e.f"))
    observed = TransformObservation({"config": {}}, ("x.b.a", "x.c.d", ""))
    assert judged(run, observed) == [
        ("agree", ""),
        ("agree", ""),
        ("diverge", "wrong-subject"),
        ("diverge", "not-stored"),
    ]


def test_a_subject_with_a_wildcard_token_is_judged_stored_as_published() -> None:
    run = TransformRun("stream", "t.*.*", "x.$2.$1", ("t.a.b", "t.*.b", "t.a.*"))
    kept = TransformObservation({"config": {}}, ("x.b.a", "t.*.b", "t.a.*"))
    assert judged(run, kept) == [("agree", "")] * 4
    mapped = TransformObservation({"config": {}}, ("x.b.a", "x.b.*", ""))
    assert judged(run, mapped) == [
        ("agree", ""),
        ("agree", ""),
        ("diverge", "wrong-subject"),
        ("diverge", "not-stored"),
    ]


def wildcard_positions(run: TransformRun) -> list[tuple[str, str]]:
    """(source pattern, subject) of each subject of `run` that holds a `*` token."""
    pattern = "t.>" if run.source in (">", "") else run.source
    return [(pattern, subject) for subject in run.subjects if "*" in subject.split(".")]


@given(st.data())
def test_a_wildcard_token_is_drawn_only_where_the_source_has_a_wildcard(data: st.DataObject) -> None:
    for pattern, subject in wildcard_positions(data.draw(transform_runs(for_version("2.14.10")))):
        literal = [i for i, token in enumerate(pattern.split(".")) if token not in ("*", ">")]
        assert all(subject.split(".")[i] != "*" for i in literal), (pattern, subject)


def test_drawn_units_publish_subjects_with_a_wildcard_token() -> None:
    search = settings(max_examples=200, database=None, derandomize=True)
    found = find(transform_runs(for_version("2.14.10")), wildcard_positions, settings=search)
    assert wildcard_positions(found)


def test_a_wildcard_token_goes_only_where_the_source_has_a_wildcard() -> None:
    rng = random.Random(5)
    assert with_wildcard_token("t.a.b", "t.a.b", rng) is None
    assert {with_wildcard_token("t.a.b", "t.*.b", rng) for _ in range(20)} == {"t.*.b"}
    assert {with_wildcard_token("t.a.b.c", "t.a.>", rng) for _ in range(40)} == {"t.a.*.c", "t.a.b.*"}


def test_a_refusal_is_judged_by_the_places_rules_of_the_release() -> None:
    refused = TransformObservation({"error": {"code": 400, "err_code": 10156, "description": "no"}})
    spaced = TransformRun("stream", "t.*", "x y.$1", ())
    assert judged(spaced, refused) == [("agree", "")]
    assert judged(spaced, TransformObservation({"config": {}})) == [
        ("diverge", "reference-reject-invalid-destination-server-accept")
    ]
    assert judged(TransformRun("mirror", "t.*", "x.$1", ()), refused) == [
        ("diverge", "reference-accept-server-reject")
    ]


def test_a_unit_that_killed_the_server_is_a_crash_and_one_cut_short_is_unknown() -> None:
    run = TransformRun("mirror", "t.*", "x.{{partition(0,1)}}", ("t.a",))
    died = TransformObservation({}, failure="panic: runtime error: integer divide by zero", crashed=True)
    assert judged(run, died, "2.10.27") == [("diverge", "server-crash")]
    assert judged(run, TransformObservation({}, failure="connection reset")) == [("unknown", "unknown")]
    # A transform the reference takes would have recorded a case per subject: each is unknown too.
    taken = TransformRun("stream", "t.*", "x.$1", ("t.a", "t.b"))
    assert judged(taken, died) == [("diverge", "server-crash"), *[("unknown", "unknown")] * 2]


@pytest.mark.live
def test_drawn_transforms_in_every_place_agree_or_are_listed(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    rows = run_agreeing(
        "stream-transform", 150, server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    )
    assert {row["feature"] for row in rows} == {"stream-transform", "source-transform", "mirror-transform"}
    assert any(row["subject"] and row["observed"] != row["subject"] for row in rows), (
        "nothing was transformed"
    )


def executed(
    runs: list[TransformRun], server_factory: Callable[[], Backend], expectations: Expectations, run_dir: Path
) -> list[tuple[TransformObservation, set[str]]]:
    """What each of `runs` observed on a fresh server, one after the other, and its cases' verdicts."""
    with live_session(
        "stream-transform", server_factory=server_factory, expectations=expectations, run_dir=run_dir
    ) as (session, context, _):
        results = []
        for run in runs:
            observed = FAMILY.execute(session, run)
            judged = cases_of(FAMILY.judge(context, session.profile, run, observed))
            results.append((observed, {case.verdict for case in judged}))
        return results


@pytest.mark.live
def test_every_place_stores_a_subject_with_a_wildcard_token_as_published(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    runs = [TransformRun(place, "t.*.*", "x.$2.$1", ("t.a.b", "t.*.b", "t.a.*")) for place in PLACES]
    for run, (observed, verdicts) in zip(
        runs, executed(runs, server_factory, expectations, tmp_path), strict=True
    ):
        assert observed.stored == ("x.b.a", "t.*.b", "t.a.*"), (run.place, observed)
        assert verdicts == {"agree"}, run.place


@pytest.mark.live
def test_a_whole_source_maps_behind_a_token_that_begins_with_a_wildcard_character(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    """`>` to `>u.>` puts the literal token `>u` before every subject, in every place (a check of the
    destination's first character would keep them)."""
    runs = [TransformRun(place, ">", ">u.>", ("t.a", "t.b.c")) for place in PLACES]
    for run, (observed, verdicts) in zip(
        runs, executed(runs, server_factory, expectations, tmp_path), strict=True
    ):
        assert observed.stored == (">u.t.a", ">u.t.b.c"), (run.place, observed)
        assert verdicts == {"agree"}, run.place


@pytest.mark.live
def test_a_case_of_a_source_replays(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    reason = FAMILY.unsupported(target.spec.text, target.backend)
    if reason:
        pytest.skip(reason)
    assert family_of_feature("source-transform") is FAMILY
    case = CaseFile("source-transform", "t.*.*", "x.$2.$1", "t.a.b", target.spec.text)
    assert FAMILY.unit_of(case) == TransformRun("source", "t.*.*", "x.$2.$1", ("t.a.b",))
    command = ["replay", "--server-version", target.spec.text, "--backend", target.backend]
    status = main(
        [*command, "--feature", "source-transform", "--source", "t.*.*", "--destination", "x.$2.$1"]
    )
    assert status == 0, capsys.readouterr().out


def test_one_unit_in_four_asks_a_deliver_prefix_its_seed_picks() -> None:
    picked = [deliver_prefix_of(seed) for seed in range(16)]
    assert [prefix for prefix in picked if prefix] == list(DELIVER_PREFIXES)
    assert picked.count("") == 12


def test_a_deliver_prefix_is_taken_iff_it_is_a_subject_without_wildcards() -> None:
    refused = {"error": {"code": 400, "err_code": 10064, "description": "invalid delivery subject"}}
    for prefix, reply, verdict in [
        ("dp.x", {"config": {}}, ("agree", "")),
        ("dp.*", refused, ("agree", "")),
        ("dp..x", {"config": {}}, ("diverge", "reference-reject-invalid-deliver-prefix-server-accept")),
    ]:
        run = TransformRun("stream", "t.*", "x.$1", ("t.a",), deliver_prefix=prefix)
        observed = TransformObservation({"config": {}}, ("x.a",), external=reply)
        assert judged(run, observed) == [("agree", ""), ("agree", ""), verdict], prefix
    run = TransformRun("stream", "t.*", "x.$1", ("t.a",), deliver_prefix="dp.x")
    cut = TransformObservation({}, failure="connection reset")
    assert judged(run, cut) == [("unknown", "unknown")] * 3


def test_a_deliver_prefix_case_replays_its_prefix_and_no_subject() -> None:
    run = TransformRun("mirror", "t.*", "x.$1", ("t.a",), deliver_prefix="dp.*")
    case = CaseFile(
        "source-transform", "t.*", "x.$1", "dp.*", "2.14.10", functions=DELIVER, steps=(run.to_json(),)
    )
    assert FAMILY.unit_of(case) == TransformRun("mirror", "t.*", "x.$1", (), deliver_prefix="dp.*")


@pytest.mark.live
def test_the_server_takes_exactly_the_deliver_prefix_without_wildcards(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    runs = [TransformRun("source", "t.*", "x.$1", ("t.a",), deliver_prefix=p) for p in DELIVER_PREFIXES]
    for run, (observed, verdicts) in zip(
        runs, executed(runs, server_factory, expectations, tmp_path), strict=True
    ):
        assert observed.external is not None
        assert (api_error(observed.external) is None) is (run.deliver_prefix == "dp.x"), observed.external
        assert verdicts == {"agree"}, run.deliver_prefix


def test_a_push_consumer_must_deliver_what_the_stream_stores() -> None:
    run = TransformRun("source", "t.*", "x.$1", ("t.a", "t.b"), consumer="durable")
    stored = ("x.a", "x.b")
    for consumed, verdict in [
        (Consumed(("x.a", "x.b")), ("agree", "")),
        (Consumed(("x.b", "x.a")), ("diverge", "consumer-differs")),
        (Consumed(refusal="durable name not in subject (code 400)"), ("diverge", "consumer-refused")),
    ]:
        observed = TransformObservation({"config": {}}, stored, consumed=consumed)
        assert judged(run, observed) == [("agree", ""), ("agree", ""), ("agree", ""), verdict], consumed


def test_a_unit_that_hung_the_server_is_judged_hung_and_its_consumer_unknown() -> None:
    run = TransformRun("mirror", "t.*", "x.$1", ("t.a",), consumer="named")
    hung = TransformObservation({}, failure="the server hung, idle and answering nothing: ...", hung=True)
    assert judged(run, hung) == [("diverge", "server-hang"), ("unknown", "unknown"), ("unknown", "unknown")]


def test_seeds_pick_consumers_apart_from_deliver_prefixes() -> None:
    forms = [consumer_of(seed) for seed in range(16)]
    assert [form for form in forms if form] == ["named", "durable", "named", "durable"]
    assert not any(consumer_of(seed) and deliver_prefix_of(seed) for seed in range(64))


def test_a_consumer_case_replays_every_subject_of_its_unit() -> None:
    run = TransformRun("stream", "t.*", "x.$1", ("t.a", "t.b"), consumer="durable")
    case = CaseFile(
        "stream-transform", "t.*", "x.$1", "", "2.14.10", functions=CONSUMER, steps=(run.to_json(),)
    )
    assert FAMILY.unit_of(case) == run
