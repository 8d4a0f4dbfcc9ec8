"""The mutants file: what `nats-conformance mutants` writes reads back as typed figures, survivors and
wrong equivalence entries; a folder holding it is a mutants run of a report, whose own campaign runs are
not case runs; anything else is a one-line error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.records.errors import ReportError
from nats_conformance.records.load import load_records
from nats_conformance.records.mutants import MUTANTS_FILE, Figures, Settings, read_mutants
from nats_conformance.records.writer import RecordWriter
from tests.records.mutants_sample import REPLAY, SUBLIST, TRANSFORM, mutants_document, mutants_folder
from tests.records.samples import CRASHING


def test_a_mutants_file_reads_back_as_the_suite_wrote_it(tmp_path: Path) -> None:
    run = read_mutants(mutants_folder(tmp_path / "mutants-1"))
    assert run is not None
    assert (run.folder, run.release, run.in_build) == ("mutants-1", "2.14.10", 6)
    assert run.settings == Settings("quick", (), 21, None, "2/4", 42, True)
    assert run.totals == Figures(mutants=6, equivalent=1, killed=2, unreached=1)
    assert (run.totals.survived, run.totals.percent) == (2, "40.0 %")
    assert run.anchor == Figures(mutants=6, equivalent=1, killed=2, unreached=0)
    assert [(f.file, f.function, f.campaign.percent) for f in run.by_file] == [
        (TRANSFORM, "", "33.3 %"),
        (SUBLIST, "", "50.0 %"),
    ]
    by_function = {(f.file, f.function): f for f in run.by_function}
    assert by_function[(TRANSFORM, "indexPlaceHolders")].campaign == Figures(2, 0, 1, 1)
    assert by_function[(TRANSFORM, "indexPlaceHolders")].anchor == Figures(2, 0, 1, 0)
    assert [(s.id, s.line, s.families) for s in run.survivors] == [
        (3, 100, ("mapping", "validation")),
        (20, 1300, ("matching",)),
    ]
    assert run.survivors[1].diff == f"{SUBLIST}:1300 (matchLevel)\n- plen = len(p)\n+ (dropped)"
    assert run.unreached == (9,)
    (wrong,) = run.equivalent_killed
    assert (wrong.mutant.id, wrong.mutant.line, wrong.mutant.original, wrong.mutant.mutated, wrong.how) == (
        15,
        1262,
        "0",
        "1",
        "at start",
    )
    assert wrong.case == "nats-server: invalid subject"


def test_a_run_without_the_anchor_has_no_figures_of_it(tmp_path: Path) -> None:
    document = mutants_document()
    document["anchor"] = None
    run = read_mutants(mutants_folder(tmp_path / "mutants-1", document))
    assert run is not None
    assert run.anchor is None
    assert all(f.anchor is None for f in (*run.by_file, *run.by_function))


def test_a_mutants_folder_is_one_input_and_its_campaign_runs_are_not_case_runs(tmp_path: Path) -> None:
    folder = mutants_folder(tmp_path / "mutants-1")
    with RecordWriter(folder / "runs" / "original" / "mapping", run_id="original") as writer:
        writer.add(CRASHING)
    records = load_records([folder, folder], mutants=True)
    assert (records.runs, [run.folder for run in records.mutants]) == ((), ["mutants-1"])
    with pytest.raises(ReportError, match="no case records in"):
        load_records([folder])  # a baseline or a gate reads case runs only


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "corrupt mutants file"),
        ('{"format": "nats-conformance-coverage"}', "is not a mutants file"),
        ('{"format": "nats-conformance-mutants", "version": 2}', "has mutants version 2; this reads 1"),
        ('{"format": "nats-conformance-mutants", "version": 1, "outcomes": []}', "field 'release' must be"),
    ],
)
def test_a_bad_mutants_file_is_refused_in_one_line(tmp_path: Path, text: str, says: str) -> None:
    folder = tmp_path / "mutants-1"
    folder.mkdir()
    (folder / MUTANTS_FILE).write_text(text)
    with pytest.raises(ReportError, match=says) as raised:
        load_records([folder], mutants=True)
    assert "\n" not in str(raised.value)
    assert str(folder / MUTANTS_FILE) in str(raised.value)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda d: d["by_file"].update({TRANSFORM: 3}), f"field '{TRANSFORM}' must be an object"),
        (lambda d: d["anchor"]["by_function"].clear(), "must be an object"),
        (lambda d: d["outcomes"].pop(0), "mutant 3 has no entry in 'outcomes'"),
        (lambda d: d["equivalent_killed"].append(20), "mutant 20 of 'equivalent_killed' was not killed"),
        (lambda d: d["settings"].update(families=3), "field 'families' of 'settings'"),
    ],
)
def test_a_damaged_mutants_file_names_what_is_wrong(
    tmp_path: Path, damage: Callable[[dict[str, Any]], object], says: str
) -> None:
    document = mutants_document()
    damage(document)
    (tmp_path / MUTANTS_FILE).write_text(json.dumps(document))
    with pytest.raises(ReportError, match=says) as raised:
        read_mutants(tmp_path)
    assert "\n" not in str(raised.value)


def test_the_replay_of_a_killing_pair_is_kept_for_a_wrong_entry(tmp_path: Path) -> None:
    document = mutants_document()
    document["equivalent_killed"].append(7)
    run = read_mutants(mutants_folder(tmp_path / "mutants-1", document))
    assert run is not None
    assert [(w.mutant.id, w.family, w.replay) for w in run.equivalent_killed] == [
        (15, "", ""),
        (7, "mapping", REPLAY),
    ]
