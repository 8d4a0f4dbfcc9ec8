"""The every-context family (`suites.families.contexts`): one drawn pair goes through every place a release
has on one live server, each place judged by its own family."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from nats_conformance.fixtures.errors import ServerError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.versions import Version
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES, family_of_feature
from nats_conformance.suites.families.contexts import PLACES, ContextsFamily, ContextsUnit, places
from nats_conformance.suites.families.imports import ImportRun
from nats_conformance.suites.families.republish import RepublishScenario
from nats_conformance.suites.families.streams import TransformRun
from nats_conformance.suites.strategies import MappingBatch
from tests.families import live_session, run_agreeing


def test_a_unit_is_the_same_pair_in_every_place() -> None:
    unit = ContextsUnit("t.*", "x.$1", ("t.a", "t.b"), seed=3)
    pair, batch, imported, transformed, republished = unit.member_units()
    assert pair == ("t.*", "x.$1")
    assert batch == MappingBatch((pair,), (("t.a", "t.b"),), 3)
    assert imported == ImportRun("stream", "t.*", "x.$1", ("t.a", "t.b"), 3)
    assert transformed == TransformRun("stream", "t.*", "x.$1", ("t.a", "t.b"), 3)
    assert isinstance(republished, RepublishScenario)
    assert (republished.option.source, republished.option.destination) == pair
    assert len(republished.operations) == 2
    assert len(PLACES) == len(unit.member_units())


def test_a_recorded_case_replays_in_its_own_place() -> None:
    for feature in ("validation", "mapping", "stream-import", "stream-transform", "republish"):
        assert family_of_feature(feature) is not FAMILIES["contexts"]


@pytest.mark.live
def test_one_pair_in_every_place_agrees_or_is_listed(
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    rows = run_agreeing(
        "contexts", 60, server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    )
    version = Version.parse(rows[0]["server_version"])
    places = {"validation", "stream-import"}
    if version >= Version(2, 8, 3):
        places.add("republish")
    if version >= Version(2, 10, 0):
        places.add("stream-transform")
    assert places <= {row["feature"] for row in rows}
    pairs = {(row["source"], row["destination"]) for row in rows if row["feature"] == "stream-import"}
    assert pairs & {(row["source"], row["destination"]) for row in rows if row["feature"] == "validation"}


def test_a_unit_cut_short_is_unknown_in_every_place_the_release_has() -> None:
    context = RunContext(
        "run", "nats-server", "2.9.25", "process", Expectations(), itertools.count().__next__
    )
    unit = ContextsUnit("t.*", "x.$1", ("t.a",))
    cases = cases_of(FAMILIES["contexts"].unknown(context, for_version("2.9.25"), unit, "no PONG"))
    assert {case.verdict for case in cases} == {"unknown"}
    assert {case.feature for case in cases} == {"validation", "mapping", "stream-import", "republish"}


def batch_until_whole(
    family: ContextsFamily, session: Session, units: list[ContextsUnit], attempts: int = 3
) -> list[tuple[tuple[int, object], ...] | ServerError]:
    """The batch's outcomes once no server error cut it short. A JetStream request that waits past its
    deadline on a loaded machine ends a batch with a `ServerError` (the engine then runs each unit again
    alone, `check_many`); that is timing, not an observation, so the batch runs again, up to `attempts`
    times, and the test is skipped when every attempt is cut short."""
    errors: list[ServerError] = []
    for _ in range(attempts):
        outcomes = family.execute_many(session, units)
        errors = [outcome for outcome in outcomes if isinstance(outcome, ServerError)]
        if not errors:
            return outcomes
        session.clear()
    pytest.skip(f"every batch was cut short by a server error: {errors[0]}")


@pytest.mark.live
def test_a_batch_observes_every_place_of_each_unit_as_alone(
    server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    """Units of a batch (`ContextsFamily.execute_many`: each account place for every unit at once, in
    accounts of their own, the JetStream places side by side) each observe every place the release has,
    in order, and each is judged as it is alone: the valid pairs agree, and a pair the server refuses
    (twice in the batch: their import refusals read alike) is refused in each place as alone."""
    family = FAMILIES["contexts"]
    assert isinstance(family, ContextsFamily)
    refused = ContextsUnit("t.*", "t.{{wildcard(2)}}", ("t.a",))
    units = [
        ContextsUnit("t.*", "t.x.$1", ("t.a", "t.b")),
        refused,
        ContextsUnit("t.*.*", "t.y.{{wildcard(2)}}.{{wildcard(1)}}", ("t.a.b",)),
        refused,
        ContextsUnit("t.a.>", "t.z.>", ("t.a.b", "t.a.b.c")),
    ]
    with live_session(
        "contexts", server_factory=server_factory, expectations=expectations, run_dir=tmp_path
    ) as (
        session,
        context,
        _,
    ):
        outcomes = batch_until_whole(family, session, units)
        alone = [family.execute(session, unit) for unit in units]
        version, backend = session.server.version, session.server.name
        for unit, together, single in zip(units, outcomes, alone, strict=True):
            assert not isinstance(together, Exception), together
            indices = [index for index, _, _ in places(unit, version, backend)]
            assert [index for index, _ in together] == indices
            judged = [
                [
                    (case.feature, case.subject, case.verdict, case.difference)
                    for case in cases_of(family.judge(context, session.profile, unit, observed))
                ]
                for observed in (together, single)
            ]
            assert judged[0] == judged[1], unit
            if unit is not refused:
                assert {verdict for _, _, verdict, _ in judged[0]} == {"agree"}, (unit, judged[0])
