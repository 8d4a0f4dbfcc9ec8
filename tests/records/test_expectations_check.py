"""`expectations check`: each entry's release range against the records of hand-made runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import nats_conformance
import nats_conformance.suites.__main__
from nats_conformance.records.expectations import Expectation, load_expectations, write_expectations
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.expectations_check import releases_text
from tests.records.samples import CRASHING

CRASH = Expectation(
    id="crash",
    feature="partition",
    difference="server-crash",
    min_version="2.9.0",
    max_version="2.12.15",
    functions=("partition",),
)
NOW_AND_THEN = Expectation(id="now-and-then", feature="mapping", difference="value", intermittent=True)
CASE = replace(CRASHING, verdict="expected", expectation="crash")
AGREES = replace(CASE, verdict="agree", expectation="", difference="", observed="0")


def run(tmp_path: Path, name: str, cases: list[Case]) -> str:
    """A completed run directory holding `cases`."""
    with RecordWriter(tmp_path / name, run_id=name) as writer:
        for number, case in enumerate(cases):
            writer.add(replace(case, run_id=name, case_id=number))
    return str(tmp_path / name)


@pytest.fixture
def listed(tmp_path: Path) -> str:
    path = tmp_path / "expectations.toml"
    write_expectations(path, [CRASH, NOW_AND_THEN])
    return str(path)


def test_runs_that_agree_with_every_range_exit_0(
    tmp_path: Path, listed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run(
        tmp_path,
        "r1",
        [CASE, replace(CASE, server_version="2.12.15"), replace(AGREES, server_version="2.14.5")],
    )
    mapping = replace(AGREES, feature="mapping", functions="wildcard")  # the intermittent entry not seen
    second = run(tmp_path, "r2", [replace(CASE, server_version="2.9.25"), mapping])
    status = nats_conformance.main(["expectations", "check", first, second, "--expectations", listed])
    assert (status, capsys.readouterr().out) == (
        0,
        f"0 of 2 entries of {listed} contradicted by 2 run(s) on 4 release(s)\n",
    )


def test_an_entry_not_seen_in_its_range_or_seen_outside_it_exits_1(
    tmp_path: Path, listed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        replace(CASE, server_version="2.9.25"),
        replace(AGREES, server_version="2.10.27"),
        replace(AGREES, server_version="2.11.17"),
        replace(AGREES, server_version="2.12.15"),
        replace(CASE, server_version="2.14.5", verdict="diverge", expectation=""),
        replace(AGREES, server_version="2.8.4", verdict="unknown", difference="unknown"),  # judges nothing
    ]
    status = nats_conformance.suites.__main__.main(
        ["expectations", "check", run(tmp_path, "r1", cases), "--expectations", listed]
    )
    assert (status, capsys.readouterr().out.splitlines()) == (
        1,
        [
            "crash: listed but not seen on 2.10.27 to 2.12.15",
            "crash: seen outside its range on 2.14.5",
            f"1 of 2 entries of {listed} contradicted by 1 run(s) on 6 release(s)",
        ],
    )


def test_a_list_of_releases_is_short_where_they_run_on() -> None:
    tested = ["2.2.6", "2.8.4", "2.9.25", "2.10.27", "2.11.17", "2.12.15", "2.14.5"]
    assert releases_text({"2.8.4", "2.9.25", "2.10.27", "2.14.5"}, tested) == "2.8.4 to 2.10.27, 2.14.5"
    assert releases_text({"2.2.6", "2.8.4", "2.11.17"}, tested) == "2.2.6, 2.8.4, 2.11.17"


def test_an_incomplete_run_is_refused_unless_allowed(
    tmp_path: Path, listed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = RecordWriter(tmp_path / "r1", run_id="r1")
    writer.add(CASE)
    writer.close("interrupted", signal="SIGINT")
    command = ["expectations", "check", str(tmp_path / "r1"), "--expectations", listed]
    assert nats_conformance.main(command) == 2
    assert "is incomplete (interrupted by SIGINT)" in capsys.readouterr().err
    assert nats_conformance.main([*command, "--allow-incomplete"]) == 0


def test_update_closes_what_the_records_show_ended_and_the_check_then_agrees(
    tmp_path: Path, listed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep's records date an end as a campaign's --update-expectations would: shown up to 2.10.27,
    not on the newer releases that ran its feature, each the first of its line that did."""
    cases = [CASE, replace(CASE, server_version="2.9.25"), replace(AGREES, server_version="2.11.17")]
    cases.append(replace(AGREES, server_version="2.12.15"))
    runs = run(tmp_path, "r1", cases)
    assert nats_conformance.main(["expectations", "check", runs, "--expectations", listed, "--update"]) == 0
    printed = capsys.readouterr().out.splitlines()
    for line, release in (("2.11", "2.11.17"), ("2.12", "2.12.15")):
        assert (
            f"expectation range closed: crash: Ends on the {line} line at {release}: shown on 2.10.27, "
            f"not on {release} (run r1)."
        ) in printed
    (closed, intermittent) = load_expectations(Path(listed)).entries
    assert (closed.ended_in, intermittent) == (("2.11.17", "2.12.15"), NOW_AND_THEN)
    assert nats_conformance.main(["expectations", "check", runs, "--expectations", listed]) == 0


def test_update_lists_a_divergence_no_entry_explains_with_its_range_and_known_case(
    tmp_path: Path, listed: str
) -> None:
    mapping = replace(AGREES, feature="mapping", functions="", source="m.a", destination="n", subject="m.a")
    wrong = replace(mapping, verdict="diverge", difference="wrong-subject", observed="m.a", expected="n")
    cases = [
        wrong,
        replace(wrong, server_version="2.9.25", subject="m.a.b"),
        replace(mapping, server_version="2.12.15"),
    ]
    assert (
        nats_conformance.main(
            ["expectations", "check", run(tmp_path, "r1", cases), "--expectations", listed, "--update"]
        )
        == 0
    )
    *_, new = load_expectations(Path(listed)).entries
    assert (new.feature, new.difference, new.min_version, new.max_version) == (
        "mapping",
        "wrong-subject",
        "2.9.25",
        "2.10.27",
    )
    assert (Path(listed).parent / new.case).is_file()


def test_a_corrected_file_is_checked_against_records_judged_before_the_correction(
    tmp_path: Path, listed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The records of 2.8.4 say `diverge` (the file's range started at 2.9.0 when they were judged);
    once the range starts at 2.8.4 the same records agree with it."""
    older = replace(CASE, server_version="2.8.4", verdict="diverge", expectation="")
    runs = run(tmp_path, "r1", [older, replace(CASE, server_version="2.9.25")])
    assert nats_conformance.main(["expectations", "check", runs, "--expectations", listed]) == 1
    assert "crash: seen outside its range on 2.8.4" in capsys.readouterr().out
    write_expectations(Path(listed), [replace(CRASH, min_version="2.8.4"), NOW_AND_THEN])
    assert nats_conformance.main(["expectations", "check", runs, "--expectations", listed]) == 0
