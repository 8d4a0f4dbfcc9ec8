"""`nats-conformance mutants --combine`: the documents of a run's parts (`--part K/N`, each on a machine
of its own, as the nightly runs them) scored as one run, without running anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nats_conformance.fixtures.options import OptionError
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.mutants import combined
from tests.records.mutants_sample import MUTANTS, mutants_document, mutants_folder, outcomes

SCORED = ("mutants", "equivalent", "killed", "score", "unreached", "score_reached", "by_file", "by_function")


def parts(tmp_path: Path) -> list[Path]:
    """The sample run cut in two parts, every other mutant, as `--part 1/2` and `--part 2/2` give them."""
    found = outcomes()
    halves = (MUTANTS[0::2], MUTANTS[1::2])
    return [
        mutants_folder(tmp_path / f"part{number}", mutants_document(half, {m.id: found[m.id] for m in half}))
        for number, half in enumerate(halves, 1)
    ]


def test_the_parts_score_as_the_whole_run(tmp_path: Path) -> None:
    whole = mutants_document()
    document = combined(parts(tmp_path), "2.14.10")
    for name in (*SCORED, "anchor", "survivors", "unreached_mutants", "equivalent_killed"):
        assert document[name] == whole[name], name
    assert [entry["id"] for entry in document["outcomes"]] == [m.id for m in MUTANTS]
    assert document["settings"]["part"] == "2/4, 2/4"
    assert document["settings"]["combined"] == [str(path) for path in parts(tmp_path)]


def test_a_mutant_judged_in_two_parts_or_another_release_is_refused(tmp_path: Path) -> None:
    first, _ = parts(tmp_path)
    with pytest.raises(OptionError, match="mutant 3 is judged twice"):
        combined([first, first / "mutants.json"], "2.14.10")
    with pytest.raises(OptionError, match=r"judges 2\.14\.10, not --target 2\.15\.3"):
        combined([first], "2.15.3")
    with pytest.raises(OptionError, match="no mutants document"):
        combined([tmp_path / "nowhere"], "2.14.10")
    other = mutants_document(MUTANTS[1::2])
    other["settings"] = {**other["settings"], "seed": 22}
    with pytest.raises(OptionError, match="ran another seed"):
        combined([first, mutants_folder(tmp_path / "other", other)], "2.14.10")
    damaged = mutants_document(MUTANTS[1::2])
    del damaged["outcomes"][0]["operator"]
    with pytest.raises(OptionError, match="has no field 'operator'"):
        combined([first, mutants_folder(tmp_path / "damaged", damaged)], "2.14.10")
    del damaged["settings"]["plan"]
    with pytest.raises(OptionError, match="plan"):
        combined([mutants_folder(tmp_path / "worse", damaged)], "2.14.10")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(OptionError, match="corrupt mutants file"):
        combined([tmp_path / "bad.json"], "2.14.10")


def test_the_command_writes_the_combined_document_and_its_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = parts(tmp_path)
    out = tmp_path / "all.json"
    command = ["mutants", "--target", "2.14.10", "--combine", str(first), "--combine", str(second)]
    assert main([*command, "--json", str(out), "--out", str(tmp_path / "runs")]) == 0
    written = json.loads(out.read_text())
    assert written["killed"] == mutants_document()["killed"]
    folders = list((tmp_path / "runs").glob("mutants-*/mutants.json"))
    assert [json.loads(folder.read_text()) for folder in folders] == [written]
    assert "campaign 2 of 5 killed" in capsys.readouterr().out
    assert main([*command[:3], "--combine", str(tmp_path / "nowhere")]) == 2
