"""JetStream families run their units side by side, each in a JetStream account of its own
(`suites.engine.family.JetStreamSlots`), on a live server: every unit, though all use the same stream
names and subjects, shows the very cases it shows when run alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.suites.engine.family import JetStreamSlots, ServerFamily, cases_of, check, check_many
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.strategies import Enough, run_batches
from tests.families import live_session

pytestmark = [pytest.mark.live, pytest.mark.min_server("2.10.0")]
RANDOM = "random("


def _units(family: ServerFamily[Any, Any], profile: ReleaseProfile, count: int) -> list[Any]:
    """`count` distinct units the family draws with seed 1, as a campaign does."""
    strategy = family.units(profile)
    units: list[Any] = []

    def take(unit: Any) -> float:
        if unit not in units:
            units.append(unit)
        if len(units) >= count:
            raise Enough
        return 0.0

    run_batches(lambda data: data.draw(strategy), 10 * count, 1, take)
    return units


@pytest.mark.parametrize("name", ["republish", "stream-transform"])
def test_units_side_by_side_show_what_each_shows_alone(
    name: str, server_factory: Callable[[], Backend], expectations: Expectations, tmp_path: Path
) -> None:
    family = FAMILIES[name]
    assert isinstance(family, JetStreamSlots)
    slots = family.schedule.side_by_side
    assert slots > 1
    with live_session(name, server_factory=server_factory, expectations=expectations, run_dir=tmp_path) as (
        session,
        context,
        _,
    ):
        users = {family.schedule.slot(session, index, True).url for index in range(slots)}
        assert len(users) == slots  # one account's user per slot
        units = _units(family, session.profile, slots)

        def shown(judged: Any) -> list[tuple[str, str, str, str]]:
            """What a case shows; the expected subject but where a `random(n)` call drew it, once a run."""
            return [
                (c.verdict, c.difference, c.subject, "" if RANDOM in c.destination.lower() else c.expected)
                for c in cases_of(judged)
            ]

        together = [shown(judged) for judged in check_many(family, session, context, units)]
        alone = [shown(check(family, session, context, unit)) for unit in units]
        assert not session.restarts
    assert together == alone
    assert sum(len(cases) for cases in together) > len(units)  # the units published, not only created
