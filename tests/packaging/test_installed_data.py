"""The data the code reads is found in a checkout through the packages' links, and never silently
missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nats_conformance.fixtures.engine import SOURCE, source_digest
from nats_conformance.fixtures.errors import ProvisionError
from nats_conformance.records.expectations import DEFAULT_PATH, ExpectationsError, load_expectations

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_reads_the_files_at_the_repository_root() -> None:
    assert DEFAULT_PATH == ROOT / "expectations.toml"
    assert SOURCE == ROOT / "engine"
    assert load_expectations().entries


def test_a_missing_expectations_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExpectationsError, match="no expectations file"):
        load_expectations(tmp_path / "expectations.toml")


def test_missing_engine_sources_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(ProvisionError, match="no Go sources of the engine adapter"):
        source_digest(tmp_path)
