"""`nats-conformance expectations export DIR` writes a copy that a campaign uses, known cases and all,
from outside the repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance import main
from nats_conformance.records.expectations import DEFAULT_PATH, load_expectations
from nats_conformance.reference.protocol import TransformQuestion

ROOT = Path(__file__).resolve().parents[2]
CORRECT = f"adapter:{sys.executable} {ROOT / 'examples/adapters/correct.py'}"
CASES = 40


def test_an_exported_copy_runs_a_campaign_with_its_known_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "ci" / "expectations"
    assert main(["expectations", "export", str(copy)]) == 0
    exported = copy / "expectations.toml"
    assert exported.read_text() == DEFAULT_PATH.read_text()
    shipped = load_expectations()
    assert sorted(p.name for p in (copy / "known-cases").iterdir()) == sorted(
        {Path(entry.case).name for entry in shipped.entries if entry.case}  # two entries may share one
    )
    runs = {
        name: campaign_mappings(tmp_path / name, ["--expectations", str(path)], capsys)
        for name, path in (("copy", exported), ("shipped", DEFAULT_PATH))
    }
    known = {
        (case.source, case.destination)
        for case in shipped.known_cases
        if isinstance(case.question(), TransformQuestion)
    }
    assert runs["copy"] == runs["shipped"] >= known
    assert not campaign_mappings(tmp_path / "none", ["--no-known-cases"], capsys) >= known


def campaign_mappings(
    out: Path, arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> set[tuple[str, str]]:
    """The (source, destination) pairs a campaign of the correct adapter asked (its known cases first,
    within its budget)."""
    status = main(
        [
            *("campaign", *arguments, "--target", CORRECT),
            *("--family", "mapping", "--cases", str(CASES), "--out", str(out)),
        ]
    )
    assert status == 0, capsys.readouterr().err
    (run_dir,) = out.iterdir()
    assert json.loads((run_dir / "manifest.json").read_text())["cases"] == CASES
    records = pq.read_table(run_dir / "cases", columns=["source", "destination"]).to_pylist()
    return {(row["source"], row["destination"]) for row in records}


def test_export_refuses_to_overwrite_an_expectations_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "expectations.toml").write_text("# mine\n")
    assert main(["expectations", "export", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"nats-conformance: error: {tmp_path / 'expectations.toml'} exists: export into a directory without "
        "an expectations.toml\n"
    )
    assert (tmp_path / "expectations.toml").read_text() == "# mine\n"
