"""The lists of features and families agree with the family registry (suites.families): the schema's
`FEATURES`, the record schema document, and the campaigns guide's table of families."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from nats_conformance.fixtures.layouts import PLACES
from nats_conformance.records.replay import TRANSFORM_PLACES
from nats_conformance.records.schema import FEATURES, SCHEMA, SCHEMA_VERSION
from nats_conformance.suites.families import FAMILIES

ROOT = Path(__file__).resolve().parents[2]


def test_the_schema_features_are_those_the_families_record() -> None:
    recorded = {feature for family in FAMILIES.values() for feature in family.features}
    assert set(FEATURES) == recorded
    assert len(FEATURES) == len(set(FEATURES))


def test_the_schema_document_names_its_version_and_every_feature() -> None:
    text = (ROOT / "docs" / "record-schema.md").read_text()
    assert text.startswith(f"# Case records (schema version {SCHEMA_VERSION})\n")
    (row,) = [line for line in text.splitlines() if line.startswith("| feature | string |")]
    assert re.findall(r"`([a-z-]+)`", row) == list(FEATURES)


def test_the_schema_document_has_a_row_per_column_in_order() -> None:
    """Each column of `records.schema.SCHEMA`, with its type when scalar, nullable when it is."""
    text = (ROOT / "docs" / "record-schema.md").read_text()
    table = text[text.index("| column | type | meaning |") :].split("\n\n")[0].splitlines()[2:]
    rows = [line.split(" | ")[:2] for line in table]
    assert [name.removeprefix("| ") for name, _ in rows] == [field.name for field in SCHEMA]
    for (_, kind), field in zip(rows, SCHEMA, strict=True):
        if not pa.types.is_nested(field.type):
            assert kind == str(field.type) + (" (null: none)" if field.nullable else "")


def test_the_campaigns_guide_has_a_row_per_family() -> None:
    """The guide holds the marker the documentation hook puts the registry's table of families in."""
    from docs.hooks import FAMILIES_MARKER, families_table

    text = (ROOT / "docs" / "guide" / "campaigns.md").read_text()
    assert sum(line.startswith(FAMILIES_MARKER) for line in text.splitlines()) == 1
    table = families_table().splitlines()[2:]
    names = [row.split("|")[1].strip() for row in table]
    assert names == list(FAMILIES)
    assert all(row.split("|")[2].strip() for row in table)


def test_the_replay_lines_know_every_stream_transform_place() -> None:
    assert set(TRANSFORM_PLACES.values()) == set(PLACES)
