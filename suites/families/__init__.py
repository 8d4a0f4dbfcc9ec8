"""The feature families, by name: the one registry the campaign, the pytest properties, replay, bisect
and the report go through. Adding a family is its module and one line here."""

from __future__ import annotations

from typing import Any, Final

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.replay import layout_of
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.suites.engine.family import Description, ServerFamily
from nats_conformance.suites.families.cluster import ClusterFamily
from nats_conformance.suites.families.cluster_weighted import ClusterWeightedFamily
from nats_conformance.suites.families.contexts import ContextsFamily
from nats_conformance.suites.families.imports import ImportFamily
from nats_conformance.suites.families.leafnode import LeafDenyFamily
from nats_conformance.suites.families.library import LibraryFamily
from nats_conformance.suites.families.mapping import MappingFamily
from nats_conformance.suites.families.matching import MatchingFamily
from nats_conformance.suites.families.overlap import OverlapFamily
from nats_conformance.suites.families.republish import RepublishFamily
from nats_conformance.suites.families.streaming import StreamingFamily
from nats_conformance.suites.families.streams import StreamTransformFamily
from nats_conformance.suites.families.validation import ValidationFamily
from nats_conformance.suites.families.weighted import WeightedFamily

PARTITION: Final = "mappings whose destinations use `{{partition}}`"
WEIGHTED_REFUSED: Final = (
    "one weighted list the server must refuse (a destination listed twice, weights over 100 in total, a "
    "weight over 100, a destination naming a wildcard its source lacks), one case each"
)
WEIGHTED_REFUSED_OPERATOR: Final = (
    "the weighted-refused unit pushed in an account JWT on a server in operator mode (no weight of 0, "
    "which a JWT cannot hold)"
)
OPERATOR: Final = (
    "the mapping unit on a server in operator mode, mappings pushed in account JWTs; on the process "
    "backend published through a leaf node bound to the account"
)
OVERLAP_OPERATOR: Final = (
    "the overlap unit on a server in operator mode, each step an account JWT push or a restart"
)
IMPORT_OPERATOR: Final = (
    "the import unit in account JWTs on a server in operator mode (the exporter's JWT preloaded, the "
    "importer's pushed with the import, its `to` as the claim's `local_subject`)"
)
"""The summaries of the families that are another family's unit run another way."""

FAMILIES: Final[dict[str, ServerFamily[Any, Any]]] = {
    family.name: family
    for family in (
        MappingFamily(),
        ValidationFamily(),
        MatchingFamily(),
        MappingFamily(
            name="partition",
            description=Description(PARTITION, 5_000),
            features=("partition",),
            functions=("partition",),
        ),
        WeightedFamily(),
        WeightedFamily(
            name="weighted-refused", description=Description(WEIGHTED_REFUSED, 200), refused_only=True
        ),
        WeightedFamily(
            name="weighted-refused-operator",
            description=Description(WEIGHTED_REFUSED_OPERATOR, 200),
            operator=True,
            refused_only=True,
        ),
        RepublishFamily(),
        MappingFamily(
            name="operator",
            description=Description(OPERATOR, 5_000),
            features=("mapping", "partition", "validation"),
            mappings_per_batch=5,
            operator=True,
            leaf=True,
        ),
        StreamingFamily(),
        OverlapFamily(),
        OverlapFamily(
            name="overlap-operator", description=Description(OVERLAP_OPERATOR, 1_000), operator=True
        ),
        StreamTransformFamily(),
        ImportFamily(),
        ImportFamily(name="import-operator", description=Description(IMPORT_OPERATOR, 1_000), operator=True),
        ContextsFamily(),
        ClusterFamily(),
        ClusterWeightedFamily(),
        LeafDenyFamily(),
    )
}


LIBRARY: Final = LibraryFamily()
"""The family asked of adapter and engine targets (`--target adapter:...`), where every family above runs
on a server."""


class UnknownFamilyError(ConformanceError, ValueError):
    """A family or feature name no family declares."""


def family_named(name: str) -> ServerFamily[Any, Any]:
    """The family registered as `name` (one-line error naming the known ones otherwise)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise UnknownFamilyError(f"no family named {name!r} (known: {', '.join(FAMILIES)})") from None


def family_of_feature(feature: str, *, layout: str = "") -> ServerFamily[Any, Any]:
    """The first family whose records carry `feature` (the one that replays such a case) and that lays
    its servers out as `layout` (`records.replay.LAYOUTS`, '' for the target's one server)."""
    for family in FAMILIES.values():
        if feature in family.features and family.placement.layout == layout:
            return family
    laid_out = f" in the {layout} layout" if layout else ""
    raise UnknownFamilyError(f"no family records the feature {feature!r}{laid_out}")


def family_of_case(case: CaseFile, *, layout: str = "") -> ServerFamily[Any, Any]:
    """The family that runs a case file's unit again: the first of its feature, in `layout`, or else in
    the layout it was found in."""
    return family_of_feature(case.feature, layout=layout or layout_of(case.found_on.get("backend", ""))[1])
