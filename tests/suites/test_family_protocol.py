"""A family is what is checked (issue 55, "families as peers"): `Family` has at most ten members, and how
its units are scheduled and where its servers are placed are values the engine reads (`Schedule`,
`Placement`), never members of their own."""

from __future__ import annotations

from nats_conformance.suites.engine.family import Description, Family, Placement, Schedule, ServerFamily
from nats_conformance.suites.families import FAMILIES, LIBRARY

MOST = 10
SCHEDULING = {"side_by_side", "rolling", "steered", "width", "slot", "execute_many"}
PLACING = {"layout", "server_for", "unsupported", "base_config"}


def members(protocol: type) -> set[str]:
    """The public names a protocol declares in its own body: annotations, methods and properties."""
    declared = set(vars(protocol)) | set(vars(protocol).get("__annotations__", {}))
    return {name for name in declared if not name.startswith("_")}


def test_a_family_has_at_most_ten_members() -> None:
    assert members(Family) == {
        "name",
        "features",
        "description",
        "schedule",
        "draw",
        "execute",
        "judge",
        "unknown",
        "unit_of",
        "shrinking",
    }
    assert len(members(Family)) <= MOST


def test_scheduling_and_placement_are_values_not_members() -> None:
    assert not (SCHEDULING | PLACING | {"summary", "budget"}) & (members(Family) | members(ServerFamily))
    assert members(ServerFamily) == {"placement", "units"}


def test_every_registered_family_gives_its_values() -> None:
    for family in [*FAMILIES.values(), LIBRARY]:
        assert isinstance(family.description, Description), family.name
        assert isinstance(family.schedule, Schedule), family.name
        assert family.schedule.side_by_side >= 1, family.name
    for family in FAMILIES.values():
        assert isinstance(family.placement, Placement), family.name
