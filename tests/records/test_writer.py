"""Case records: blocks and single cases land in Parquet with their ids, and the counts always add up,
also when the disk is full."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.records.counts import case_counts, run_tally, tally_of
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import (
    NOT_SUPPORTED,
    REFUSED,
    SCHEMA,
    Case,
    CaseBlock,
    case_of,
    text_array,
    texts_of,
)
from nats_conformance.records.writer import RecordsError, RecordWriter, run_status
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.engine.campaign import CampaignPlan, run_campaign


def shared_case(**changes: object) -> Case:
    fields: dict[str, object] = {
        "run_id": "r1",
        "case_id": -1,
        "implementation": "nats-server",
        "server_version": "2.14.5",
        "backend": "process",
        "feature": "partition",
        "functions": "wildcard+partition",
        "source": "m.*",
        "destination": "o.{{partition(3,1)}}",
        "subject": "",
        "expected": "",
        "observed": "",
        "verdict": "agree",
        "partitions": 3,
    }
    fields.update(changes)
    return Case(**fields)  # type: ignore[arg-type]


def read_rows(run_dir: Path) -> list[dict[str, object]]:
    table = pq.read_table(sorted((run_dir / "cases").glob("*.parquet")))
    return sorted(table.to_pylist(), key=lambda row: int(row["case_id"]))  # type: ignore[call-overload]


def test_blocks_and_single_cases_are_written_with_their_ids(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with RecordWriter(run_dir, run_id="r1", part_rows=3) as writer:
        ids = [writer.next_case_id() for _ in range(4)]
        writer.add_block(
            CaseBlock(
                shared_case(),
                ids,
                ["m.a", "m.b", "m.\udcff", "m.d"],
                ["o.1", "o.0", "o.2", "o.1"],
                ["o.1", "o.0", "o.2", "o.1"],
                [1, 0, 2, 1],
            )
        )
        writer.add(
            shared_case(case_id=writer.next_case_id(), subject="m.e", verdict="diverge", expected="o.2")
        )
    rows = read_rows(run_dir)
    assert [row["case_id"] for row in rows] == [0, 1, 2, 3, 4]
    assert [row["subject"] for row in rows] == ["m.a", "m.b", "m.\\xff", "m.d", "m.e"]
    assert [row["bucket"] for row in rows] == [1, 0, 2, 1, None]
    assert {row["destination"] for row in rows} == {"o.{{partition(3,1)}}"}
    assert [row["verdict"] for row in rows] == ["agree"] * 4 + ["diverge"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["cases"] == manifest["written"] == 5
    assert manifest["verdicts"] == {"agree": 4, "diverge": 1, "expected": 0, "unknown": 0}
    assert manifest["features"]["partition"]["agree"] == 4
    parts = sorted((run_dir / "cases").glob("*.parquet"))
    assert len(parts) == 2
    assert pq.read_schema(parts[0]).metadata == SCHEMA.metadata


def test_a_run_directory_given_relative_stays_where_it_was_when_the_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pytest session's writer (`--nats-records-dir runs`) runs on while a test changes directory."""
    monkeypatch.chdir(tmp_path)
    writer = RecordWriter(Path("runs") / "run", run_id="run")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    writer.add(shared_case(case_id=writer.next_case_id()))
    writer.flush()
    writer.close()
    assert [row["case_id"] for row in read_rows(tmp_path / "runs" / "run")] == [0]
    assert not (tmp_path / "elsewhere" / "runs").exists()


def test_a_block_expands_to_the_cases_it_stands_for() -> None:
    block = CaseBlock(shared_case(), [7, 8], ["m.a", "m.b"], ["o.1", "o.0"], ["o.1", "o.0"], [1, 0])
    cases = block.cases()
    assert [(case.case_id, case.subject, case.observed, case.bucket) for case in cases] == [
        (7, "m.a", "o.1", 1),
        (8, "m.b", "o.0", 0),
    ]
    assert all(case.source == "m.*" and case.verdict == "agree" for case in cases)


def test_a_block_of_arrow_columns_keeps_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """Texts with surrogate escapes become a binary column of their exact bytes: they expand back to the
    same text, and land as `printable` writes them."""
    subjects = ["m.a", "m.\udcff"]
    column = text_array(subjects)
    assert column.type == "binary"
    assert texts_of(column) == subjects
    assert text_array(["m.a", None]).type == "string"
    block = CaseBlock(shared_case(), [0, 1], column, text_array(["o.1", "o.2"]), column, [1, 2])
    assert [case.subject for case in block.cases()] == subjects
    with RecordWriter(tmp_path / "run", run_id="r1") as writer:
        writer.add_block(CaseBlock(shared_case(), [0, 1], column, column, column))
    assert [row["subject"] for row in read_rows(tmp_path / "run")] == ["m.a", "m.\\xff"]


@pytest.mark.parametrize(
    ("column", "value", "allowed"),
    [
        ("verdict", "maybe", "agree, diverge, expected, unknown"),
        ("kind", "total", "case, summary"),
        ("outcome", "bounced", "\\(empty\\), delivered, lost, unchanged"),
    ],
)
def test_an_unknown_verdict_kind_or_outcome_is_refused(
    tmp_path: Path, column: str, value: str, allowed: str
) -> None:
    with (
        RecordWriter(tmp_path / "run") as writer,
        pytest.raises(ValueError, match=f"^'{column}' must be one of {allowed} \\(got '{value}'\\)$"),
    ):
        writer.add(shared_case(**{column: value}))


def test_a_full_disk_gives_one_line_and_the_counts_still_add_up(tiny_disk: Path) -> None:
    writer = RecordWriter(tiny_disk / "run", part_rows=50_000)
    subjects = [f"m.{index:07d}-{index * 7919 % 1000003}" for index in range(60_000)]
    ids = [writer.next_case_id() for _ in subjects]
    writer.add_block(CaseBlock(shared_case(), ids, subjects, subjects, subjects))
    with pytest.raises(RecordsError) as raised:
        writer.close()
    message = str(raised.value)
    assert "\n" not in message
    assert "No space left on device" in message
    assert writer.total == 60_000
    assert writer.written + writer.unwritten == writer.total
    assert writer.unwritten > 0


def test_a_part_the_timer_could_not_write_ends_the_next_add(tiny_disk: Path) -> None:
    """A part the timer hands over fails to land (a full disk): the next case added raises, as the
    campaign's own flushes did. The timer's failures were settled only when the buffer filled a part
    (250,000 rows): a campaign on a full disk went on for minutes, 96,912 cases judged and lost (a probe,
    disk-full-campaign)."""
    filler = tiny_disk / "filler"
    writer = RecordWriter(tiny_disk / "run", flush_seconds=0.2)
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as fill:
        while True:  # the disk full but for the room the writer holds for its journal
            fill.write(b"x" * 1024)
    subject = "m." + "x" * 3000  # a part of one row fills more than the few bytes left
    writer.add(shared_case(case_id=writer.next_case_id(), subject=subject))
    deadline = time.monotonic() + 10
    while writer.unwritten == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # the timer hands the case over; its part fails to land
    assert writer.unwritten == 1
    with pytest.raises(RecordsError, match="No space left on device"):
        writer.add(shared_case(case_id=writer.next_case_id()))
    with pytest.raises(RecordsError):
        writer.close("crashed")
    assert writer.written + writer.unwritten == writer.total == 2


def test_partition_counts_past_32_bits_are_recorded(tmp_path: Path) -> None:
    """A drawn count of 2**32 + 3 (the 64-bit columns of schema 3; the 32-bit ones crashed the writer)."""
    with RecordWriter(tmp_path / "run") as writer:
        writer.add(shared_case(case_id=writer.next_case_id(), partitions=2**32 + 3, bucket=2**32 - 1))
    (row,) = read_rows(tmp_path / "run")
    assert (row["partitions"], row["bucket"]) == (2**32 + 3, 2**32 - 1)


def test_an_integer_past_64_bits_is_recorded_at_the_bound_with_its_part(tmp_path: Path) -> None:
    """A drawn count of 2**63 and a bucket past 64 bits (the server's answer) cost the whole task's
    cases before (issue 56: 5,125 cases of a 2.8.3 partition task); the column keeps its nearest bound,
    out of every partition's range as the value was, and the case's text the exact value."""
    with RecordWriter(tmp_path / "run") as writer:
        writer.add(shared_case(case_id=writer.next_case_id()))
        writer.add(
            shared_case(
                case_id=writer.next_case_id(),
                partitions=2**63,
                bucket=-(2**70),
                destination="p.{{partition(9223372036854775808,1)}}",
            )
        )
    assert (writer.total, writer.written, writer.unwritten) == (2, 2, 0)
    first, second = read_rows(tmp_path / "run")
    assert (first["partitions"], second["partitions"], second["bucket"]) == (
        shared_case(case_id=0).partitions,
        2**63 - 1,
        -(2**63),
    )
    assert "9223372036854775808" in second["destination"]


def test_a_value_no_column_can_hold_is_recorded_exactly_with_its_part(tmp_path: Path) -> None:
    """A weight past 32 bits failed its whole part before (issue 56: a case that cannot be recorded
    must not take the others with it); it is stored at the bound, and exactly in `exact`."""
    heavy = shared_case(case_id=1, weights=(WeightedDestination("x", 2**40),), subject="s.\udcff")
    with RecordWriter(tmp_path / "run") as writer:
        writer.add(shared_case(case_id=0))
        writer.add(heavy)
    assert (writer.total, writer.written, writer.unwritten) == (2, 2, 0)
    first, second = read_rows(tmp_path / "run")
    assert first["exact"] == ""
    assert second["weights"][0]["weight"] == 2**31 - 1
    assert second["subject"] == "s.\\xff"
    assert json.loads(second["exact"]) == {
        "subject": "s.\udcff",
        "weights": [{"destination": "x", "weight": 2**40, "cluster": None}],
    }
    assert case_of(second) == heavy


def test_the_manifest_is_a_journal_whose_counts_are_the_rows_on_disk(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    writer = RecordWriter(run_dir, run_id="r1", flush_seconds=0.0)
    started = json.loads((run_dir / "manifest.json").read_text())
    assert (started["status"], started["cases"], run_status(started)) == ("running", 0, "running")
    writer.add(shared_case(case_id=writer.next_case_id(), subject="m.a"))
    writer.add(shared_case(case_id=writer.next_case_id(), subject="m.b", verdict="diverge"))
    writer.settle()
    journal = json.loads((run_dir / "manifest.json").read_text())
    assert journal["cases"] == len(read_rows(run_dir)) == 2
    assert journal["verdicts"]["diverge"] == 1
    killed = {**journal, "owner": f"{2**22 + 1}:1"}
    assert run_status(killed) == "killed"
    writer.close("interrupted", signal="SIGTERM")
    closed = json.loads((run_dir / "manifest.json").read_text())
    assert (closed["status"], closed["signal"], closed["cases"]) == ("interrupted", "SIGTERM", 2)
    assert run_status({}) == "killed"
    assert run_status({"run_id": "before-the-journal"}) == "completed"


def test_cases_reach_disk_and_the_journal_when_no_further_case_arrives(tmp_path: Path) -> None:
    """A SIGKILL while a unit stalled (its server stopped) lost ~1,500 judged cases: the writer flushed
    only when a new case arrived. Now its timer hands them over on its own."""
    run_dir = tmp_path / "run"
    writer = RecordWriter(run_dir, run_id="r1", flush_seconds=0.2)
    writer.add(shared_case(case_id=writer.next_case_id(), subject="m.a"))
    writer.add_block(CaseBlock(shared_case(), [writer.next_case_id()], ["m.b"], ["o.1"], ["o.1"]))
    deadline = time.monotonic() + 30  # generous: the timer hands over after 0.1 s
    journal: dict[str, object] = {}
    while time.monotonic() < deadline:
        journal = json.loads((run_dir / "manifest.json").read_text())
        if journal["cases"] == 2:
            break
        time.sleep(0.05)
    assert (journal["status"], journal["cases"], journal["written"]) == ("running", 2, 2)
    assert [row["subject"] for row in read_rows(run_dir)] == ["m.a", "m.b"]
    writer.close()
    assert json.loads((run_dir / "manifest.json").read_text())["cases"] == len(read_rows(run_dir)) == 2


def test_a_run_the_full_disk_ended_leaves_its_final_manifest_with_every_count(tiny_disk: Path) -> None:
    """The disk fills up with the parts, then the manifest: the final one, `crashed` with the counts
    of every part (the lost ones included), still lands (space held in reserve since the start)."""
    run_dir = tiny_disk / "run"
    writer = RecordWriter(run_dir, part_rows=50_000)
    subjects = [f"m.{index:07d}-{index * 7919 % 1000003}" for index in range(60_000)]
    ids = [writer.next_case_id() for _ in subjects]
    writer.add_block(CaseBlock(shared_case(), ids, subjects, subjects, subjects))
    with pytest.raises(RecordsError):
        writer.flush(in_flight=0)
    filler = tiny_disk / "filler"
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as fill:
        while True:  # whatever room the failed part left
            fill.write(b"x" * 1024)
    writer.add(shared_case(case_id=writer.next_case_id()))
    with pytest.raises(RecordsError):
        writer.close("crashed")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["status"], run_status(manifest)) == ("crashed", "crashed")
    assert manifest["cases"] == manifest["written"] + manifest["unwritten"] == 60_001
    assert manifest["unwritten"] > 0
    assert [path.name for path in run_dir.iterdir() if path.name.startswith(".")] == []


def test_a_campaign_whose_first_journal_cannot_be_written_leaves_no_run_directory(tiny_disk: Path) -> None:
    """A disk already full when a campaign starts: one line (exit 2 from the command) and no empty run
    directory left under --out, as for any campaign that ends before its first case."""
    filler = tiny_disk / "filler"
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as file:
        while True:
            file.write(bytes(4096))
    run_dir = tiny_disk / "run"
    with pytest.raises(RecordsError, match="No space left on device"):
        run_campaign(None, CampaignPlan(), run_dir, Expectations())
    assert not run_dir.exists()


def test_a_writer_that_lost_records_is_never_journaled_completed(tiny_disk: Path) -> None:
    """Closed as `completed` after a part could not be written, the journal says `crashed` (a resumed
    sweep keeps a completed task's records as they are, and would keep the loss with them)."""
    writer = RecordWriter(tiny_disk / "run", part_rows=50_000)
    subjects = [f"m.{index:07d}-{index * 7919 % 1000003}" for index in range(60_000)]
    writer.add_block(
        CaseBlock(shared_case(), [writer.next_case_id() for _ in subjects], subjects, subjects, subjects)
    )
    with pytest.raises(RecordsError):
        writer.close()
    manifest = json.loads((tiny_disk / "run" / "manifest.json").read_text())
    assert manifest["status"] == "crashed"
    assert manifest["unwritten"] > 0


def test_a_final_journal_larger_than_the_first_lands_on_a_full_disk_from_the_room_held(
    tiny_disk: Path,
) -> None:
    """A scaled-out run's final journal lists every task, several times the size of its first: the room
    held for it grows (`hold_room`), and the final journal lands on a disk filled up meanwhile."""
    run_dir = tiny_disk / "run"
    writer = RecordWriter(run_dir)
    writer.hold_room(40_000)
    filler = tiny_disk / "filler"
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as fill:
        while True:
            fill.write(bytes(1024))
    for number in range(100):
        writer.note_task({"task": f"t{number:04d}", "status": "interrupted", "error": "SIGTERM" * 20})
    writer.close("interrupted", signal="SIGTERM")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["status"], len(manifest["tasks"])) == ("interrupted", 100)
    assert len((run_dir / "manifest.json").read_bytes()) > 16 * 1024


def test_cases_in_memory_and_on_disk_are_tallied_alike(tmp_path: Path) -> None:
    """A replay's tally (cases in memory) and a run's (its part files) count the same cases under the
    same keys: refused subjects and unsupported questions apart from the unknown ones."""
    cases = [
        shared_case(case_id=number, verdict=verdict, difference=difference)
        for number, (verdict, difference) in enumerate(
            [
                ("agree", ""),
                ("diverge", "wrong-subject"),
                ("unknown", "unknown"),
                ("unknown", REFUSED),
                ("unknown", NOT_SUPPORTED),
                ("unknown", NOT_SUPPORTED),
            ]
        )
    ]
    with RecordWriter(tmp_path / "run") as writer:
        for case in cases:
            writer.add(case)
    on_disk = run_tally(tmp_path / "run")
    assert tally_of(case_counts(cases)) == on_disk
    assert on_disk == {"agree": 1, "diverge": 1, "unknown": 1, REFUSED: 1, NOT_SUPPORTED: 2}
