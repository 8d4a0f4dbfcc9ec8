"""The soak's accounting check (`tests.soak.soak.check_run`) tells the part a killed task attempt was
writing, which that task's next attempt removes, from any other stray file in a run's `cases/`."""

from __future__ import annotations

from pathlib import Path

from nats_conformance.records.writer import RecordWriter
from tests.records.test_writer import shared_case
from tests.soak.soak import HALF_WRITTEN, check_run


def test_a_half_written_part_and_a_stray_file_are_told_apart(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with RecordWriter(run_dir) as writer:
        writer.add(shared_case(case_id=0))
    assert check_run(run_dir)["problems"] == []
    (run_dir / "cases" / ".part-t0003-00007.parquet.tmp").write_bytes(b"PAR1")
    (run_dir / "cases" / "notes.txt").write_text("not a part")
    assert check_run(run_dir)["problems"] == [
        f"{HALF_WRITTEN}.part-t0003-00007.parquet.tmp",
        "stray files in cases/: notes.txt",
    ]
