"""One writer per run directory (`records.owners.sole_writer`): a second campaign writing the same run is
refused in one line while the first holds it, and may write it once the first is done."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance.records.owners import WRITER_LOCK, RunLockedError, process_identity, sole_writer

HOLD = "import sys, time; from pathlib import Path; from nats_conformance.records.owners import sole_writer\n"
HOLD += "with sole_writer(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n"


def test_a_second_writer_of_a_run_is_refused_naming_the_first(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(RunLockedError) as refused, sole_writer(run_dir):
            pass
        assert str(refused.value) == (
            f"{run_dir} is being written by another campaign (process {holder.pid}); wait for it to end"
        )
    finally:
        holder.kill()
        holder.wait()
    with sole_writer(run_dir):  # the kernel dropped the killed holder's lock
        assert (run_dir / WRITER_LOCK).read_text() == process_identity()


def test_a_run_directory_made_for_nothing_is_removed(tmp_path: Path) -> None:
    with sole_writer(tmp_path / "empty"):
        assert (tmp_path / "empty" / WRITER_LOCK).exists()
    assert not (tmp_path / "empty").exists()
    with sole_writer(tmp_path / "kept"):
        (tmp_path / "kept" / "manifest.json").write_text("{}")
    assert (tmp_path / "kept" / "manifest.json").exists()


TRY = "import sys; from pathlib import Path; from nats_conformance.records.owners import sole_writer\n"
TRY += "with sole_writer(Path(sys.argv[1])):\n    print('held', flush=True)\n"


def test_a_full_disk_leaves_the_lock_held_and_its_holder_unnamed(tiny_disk: Path) -> None:
    run_dir = tiny_disk / "run"
    run_dir.mkdir()
    with contextlib.suppress(OSError), (tiny_disk / "filler").open("wb") as filler:
        while True:
            filler.write(b"x" * 4096)
            filler.flush()
    with sole_writer(run_dir):  # it once ended the campaign with a traceback: No space left on device
        command = [sys.executable, "-c", TRY, str(run_dir)]
        second = subprocess.run(command, capture_output=True, text=True, check=False)
        assert second.returncode == 1
        assert "RunLockedError" in second.stderr
        assert "being written by another campaign (process ?)" in second.stderr
