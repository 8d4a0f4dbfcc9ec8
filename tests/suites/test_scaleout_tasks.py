"""`campaign --master` refuses what it cannot run in one line with status 2, before any Spark or run
directory: a URL Spark does not take, a master that does not answer, `--shards` alone or 0, and
targets a scaled-out campaign does not run (adapters, servers at a URL). A task that fails says so
in its result and journal, which count exactly what it recorded."""

from __future__ import annotations

import io
import json
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.fixtures.children import Forked, fork_child
from nats_conformance.fixtures.errors import ProvisionError
from nats_conformance.fixtures.options import RunConfig, Target
from nats_conformance.fixtures.provision import parse_version_spec
from nats_conformance.records.expectations import Expectations, load_expectations
from nats_conformance.records.writer import CASES, TASKS, RecordsError, RecordWriter
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.engine import scaleout
from nats_conformance.suites.engine.campaign import CampaignPlan, known_units
from nats_conformance.suites.engine.run import Progress
from nats_conformance.suites.engine.scaleout import TASK_IDS, Task
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.junit import FamilyOutcome
from tests.reports.handmade import case, write_run

GONE = "0:0"
"""The owner of a journal whose process has ended (no process has pid 0)."""


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--master", "nowhere"], "'--master' must be local[*], local[N], spark://HOST:PORT"),
        (["--master", f"spark://127.0.0.1:{closed_port()}"], "cannot reach the Spark master at spark://"),
        (["--master", "spark://127.0.0.1"], "must name HOST:PORT"),
        (["--shards", "2"], "--shards needs --master"),
        (["--master", "local[2]", "--shards", "0"], "--shards takes a number of tasks per family"),
        (["--master", "local[2]", "--target", "adapter:true"], "--master runs the nats-server targets"),
    ],
)
def test_bad_scale_out_options_are_one_line_and_leave_no_run(
    options: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = [] if "--target" in options else ["--target", "2.14.5"]
    assert main(["campaign", *target, *options, "--family", "matching", "--out", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("nats-conformance: error: ")
    assert says in line
    assert list(tmp_path.iterdir()) == []


def test_a_failing_task_ends_crashed_counting_what_it_recorded_and_nothing_of_an_earlier_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task never raises: its result says it crashed and why, and its journal counts exactly its
    parts; the parts an earlier attempt of it left are removed first, so none is counted twice."""
    run_dir = tmp_path / "run"
    stale = run_dir / CASES / "part-t0003-00000.parquet"
    write_run(tmp_path / "earlier", [case(case_id=1)])
    stale.parent.mkdir(parents=True)
    (tmp_path / "earlier" / CASES / "part-00000.parquet").rename(stale)
    half_written = run_dir / CASES / ".part-t0003-00001.parquet.tmp"  # a killed attempt's staged part
    half_written.write_bytes(b"PAR1")

    def failing(*_: object, writer: RecordWriter, **__: object) -> list[FamilyOutcome]:
        for _ in range(3):
            writer.add(case(case_id=writer.next_case_id()))
        writer.flush()
        raise ProvisionError("no build of nats-server 9.9.9")

    monkeypatch.setattr(scaleout, "run_one", failing)
    plan = CampaignPlan(budgets={"matching": 3})
    task = Task(3, Target("process", parse_version_spec("2.14.5")), "matching", 1, 2, plan)
    run = RunConfig((parse_version_spec("2.14.5"),), ("process",))
    result = scaleout.run_task(task, run=run, run_dir=str(run_dir), expectations=Expectations())
    assert (result.status, result.error) == ("crashed", "ProvisionError: no build of nats-server 9.9.9")
    journal = json.loads((run_dir / TASKS / "t0003.json").read_text())
    assert (journal["status"], journal["cases"]) == ("crashed", 3)
    (part,) = (run_dir / CASES).glob("*.parquet")
    assert part.name == "part-t0003-00000.parquet"
    ids = pq.read_table(part, columns=["case_id"])["case_id"].to_pylist()
    assert ids == [3 * TASK_IDS, 3 * TASK_IDS + 1, 3 * TASK_IDS + 2]
    assert "crashed: ProvisionError" in (run_dir / TASKS / "t0003.log").read_text()
    assert not half_written.exists()


def test_a_full_disk_while_the_driver_journals_does_not_end_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver's journal is rewritten every second while the tasks run; one that cannot be written
    (the disk is full for a while) is written at the next poll, and the job goes on to its results
    (a task's own part that cannot be written ends that task, counted as lost)."""
    writer = RecordWriter(tmp_path / "run", run_id="run")
    polls: list[int] = []

    def full_disk(_: RecordWriter, **__: object) -> int:
        polls.append(1)
        if len(polls) <= 2:
            raise RecordsError("cannot write run/manifest.json: No space left on device")
        return 0

    monkeypatch.setattr(scaleout, "sweep", full_disk)
    monkeypatch.setattr(scaleout, "POLL_SECONDS", 0.05)
    job = scaleout.Job.__new__(scaleout.Job)
    job.run_dir, job.count, job.results, job.error = writer.run_dir, 1, ["done"], None  # type: ignore[list-item]
    job.ended = threading.Event()
    threading.Timer(0.5, job.ended.set).start()
    stream = io.StringIO()
    assert job.wait(writer, Progress(stream=stream)) == ["done"]
    assert len(polls) > 2
    writer.close()
    assert json.loads((writer.run_dir / "manifest.json").read_text())["status"] == "completed"


def test_shard_zero_alone_runs_the_known_cases() -> None:
    run = RunConfig((parse_version_spec("2.14.5"),), ("process",))
    tasks = scaleout.plan_tasks(run, CampaignPlan(budgets={"import": 10}), 3)
    imports = [task for task in tasks if task.family == "import"]
    assert [(task.shard, task.plan.known_cases) for task in imports] == [(0, True), (1, False), (2, False)]
    quiet = scaleout.plan_tasks(run, CampaignPlan(known_cases=False), 2)
    assert not any(task.plan.known_cases for task in quiet)


def test_a_known_case_that_crashed_its_server_is_not_run_on_a_server_at_a_url() -> None:
    """A server at a URL is the user's: the suite cannot start it again after a crash."""
    known = load_expectations()
    crash = {
        (case.source, case.destination)
        for case in known.known_cases
        if case.case_class.endswith(":server-crash")
    }
    family = FAMILIES["validation"]
    everything = set(known_units(family, known, restartable=True))
    assert crash & everything
    assert set(known_units(family, known, restartable=False)) == everything - crash


def test_a_task_spark_cancelled_between_two_journals_counts_the_rows_its_parts_hold(tmp_path: Path) -> None:
    """The job is over and a task's journal still says `running`: Spark killed it after it wrote a part
    its journal does not count yet. The driver's final sweep counts the rows of its parts, in the run's
    manifest and in the task's journal, which says how it ended."""
    run_dir = tmp_path / "run"
    task = RecordWriter(run_dir, run_id="run", shard="t0001", first_case_id=TASK_IDS)
    for verdict in ("agree", "agree", "diverge"):
        task.add(case(case_id=task.next_case_id(), verdict=verdict))
        task.flush()
    task.close("interrupted")
    journal = run_dir / TASKS / "t0001.json"
    earlier = json.loads(journal.read_text())  # as the task's last journal before its third part
    earlier.update(status="running", cases=2, written=2, owner=GONE)
    earlier["features"]["mapping"].update(agree=2, diverge=0)
    journal.write_text(json.dumps(earlier))
    driver = RecordWriter(run_dir, run_id="run")
    assert scaleout.sweep(driver) == 0
    assert driver.manifest()["cases"] == 2
    assert scaleout.sweep(driver, final=True) == 1
    driver.close("interrupted")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    rows = sum(pq.read_metadata(part).num_rows for part in (run_dir / CASES).glob("part-t0001-*.parquet"))
    assert manifest["cases"] == manifest["written"] == rows == 3
    assert manifest["features"]["mapping"] == {"agree": 2, "diverge": 1, "expected": 0, "unknown": 0}
    now = json.loads(journal.read_text())
    assert (now["status"], now["signal"], now["cases"]) == ("interrupted", "cancelled", 3)
    assert now["features"] == manifest["features"]


def test_a_task_launched_after_the_driver_asked_to_stop_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark may launch a task while the driver cancels the job, after it asked every task to stop: the
    task ends at once, leaving an earlier attempt's part and journal for the final sweep to count. It
    ran one unit before its stop-watcher looked, and wrote 35 rows the soak's manifest missed."""
    run_dir = tmp_path / "run"
    (run_dir / TASKS).mkdir(parents=True)
    (run_dir / TASKS / scaleout.STOP).write_text("SIGTERM")
    earlier = RecordWriter(run_dir, run_id="run", shard="t0003", first_case_id=3 * TASK_IDS)
    earlier.add(case(case_id=earlier.next_case_id()))
    earlier.flush()
    earlier.settle()
    ran: list[str] = []
    monkeypatch.setattr(scaleout, "run_one", lambda *_, **__: ran.append("run_one") or [])
    plan = CampaignPlan(budgets={"matching": 3})
    task = Task(3, Target("process", parse_version_spec("2.14.5")), "matching", 1, 2, plan)
    run = RunConfig((parse_version_spec("2.14.5"),), ("process",))
    result = scaleout.run_task(task, run=run, run_dir=str(run_dir), expectations=Expectations())
    assert (result.status, result.error, ran) == ("interrupted", "SIGTERM", [])
    assert [part.name for part in (run_dir / CASES).glob("*.parquet")] == ["part-t0003-00000.parquet"]
    assert json.loads((run_dir / TASKS / "t0003.json").read_text())["written"] == 1
    assert not (run_dir / TASKS / "t0003.log").exists()


def test_a_task_that_cannot_journal_ends_crashed_without_failing_its_attempt(tmp_path: Path) -> None:
    """A task whose journal cannot be written (a full disk as it starts) returns a crashed result, and
    the other tasks run on (`campaign --resume` runs it again). An attempt that raised instead was
    retried by Spark at once, while the disk was still full, and its last allowed failure failed the job
    with every task running in it."""
    run_dir = tmp_path / "run"
    (run_dir / TASKS / "t0003.json" / "x").mkdir(parents=True)  # the journal's place, taken by a folder
    plan = CampaignPlan(budgets={"matching": 3})
    task = Task(3, Target("process", parse_version_spec("2.14.5")), "matching", 1, 2, plan)
    run = RunConfig((parse_version_spec("2.14.5"),), ("process",))
    result = scaleout.run_task(task, run=run, run_dir=str(run_dir), expectations=Expectations())
    assert result.status == "crashed"
    assert result.error.startswith(f"cannot write {run_dir / TASKS / 't0003.json'}: ")
    assert list((run_dir / CASES).iterdir()) == []


def _shard(run_dir: Path, name: str, verdicts: tuple[str, ...], *, before: float, after: float) -> Forked:
    """A task's process, forked: `before` seconds, then its journal and a part of these verdicts, then
    `after` seconds with its journal `running`, then its journal closed `interrupted`."""

    def work(_: object) -> None:
        time.sleep(before)
        number = int(name[1:])
        writer = RecordWriter(run_dir, run_id="run", shard=name, first_case_id=number * TASK_IDS)
        for verdict in verdicts:
            writer.add(case(case_id=writer.next_case_id(), verdict=verdict))
        writer.flush()
        writer.settle()
        time.sleep(after)
        writer.close("interrupted")

    return fork_child(work)


def _rows(run_dir: Path) -> int:
    return sum(pq.read_metadata(part).num_rows for part in (run_dir / CASES).glob("part-*.parquet"))


def test_the_final_sweep_counts_a_journal_that_appeared_while_it_waited(tmp_path: Path) -> None:
    """The final sweep waits for a running task's journal to close; a task that journals meanwhile
    (Spark launched it as it cancelled the job) is counted too, by a second look."""
    run_dir = tmp_path / "run"
    driver = RecordWriter(run_dir, run_id="run")
    slow = _shard(run_dir, "t0001", ("agree",), before=0.0, after=1.5)
    deadline = time.monotonic() + 30
    while not (run_dir / TASKS / "t0001.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    late = _shard(run_dir, "t0002", ("agree", "diverge"), before=0.5, after=0.0)
    try:
        assert scaleout.sweep(driver, final=True) == 2
    finally:
        assert (slow.wait(), late.wait()) == (0, 0)
    driver.close("interrupted")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["cases"] == manifest["written"] == _rows(run_dir) == 3
    assert manifest["features"]["mapping"] == {"agree": 2, "diverge": 1, "expected": 0, "unknown": 0}


def test_the_final_sweep_kills_a_cancelled_task_that_outlives_its_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancelled task's process still alive when the sweep's wait ends could write after the run's
    journal counted it: the sweep kills it, then counts the rows of its parts."""
    monkeypatch.setattr(scaleout, "SETTLE_SECONDS", 0.5)
    run_dir = tmp_path / "run"
    driver = RecordWriter(run_dir, run_id="run")
    stuck = _shard(run_dir, "t0001", ("agree", "expected"), before=0.0, after=3600.0)
    try:
        deadline = time.monotonic() + 30
        while not (run_dir / TASKS / "t0001.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        while _rows(run_dir) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert scaleout.sweep(driver, final=True) == 1
        while stuck.exit_status() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stuck.exit_status() == -signal.SIGKILL
    finally:
        stuck.kill()
    driver.close("interrupted")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["cases"] == _rows(run_dir) == 2
    assert json.loads((run_dir / TASKS / "t0001.json").read_text())["signal"] == "cancelled"


def test_a_cancelled_task_that_had_lost_records_still_counts_them(tmp_path: Path) -> None:
    """A task lost a part's records, then was killed before it could close its journal (on a full disk
    it had no room to): the final sweep counts its parts' rows and the cases its last journal counted
    as lost, so that the run's cases are its written and lost ones. The recount kept the journal's lost
    count but took its cases from the rows alone: a nemesis soak's manifest counted 44,957 cases as
    41,995 written and 5,970 lost."""
    run_dir = tmp_path / "run"
    task = RecordWriter(run_dir, run_id="run", shard="t0001", first_case_id=TASK_IDS)
    task.add(case(case_id=task.next_case_id(), verdict="agree"))
    task.flush()
    blocked = run_dir / CASES / "part-t0001-00001.parquet"  # the next part's place, taken by a folder
    (blocked / "x").mkdir(parents=True)
    task.add(case(case_id=task.next_case_id(), verdict="diverge"))
    task.flush()
    with pytest.raises(RecordsError):
        task.settle()  # the part could not take its place
    shutil.rmtree(blocked)
    task.add(case(case_id=task.next_case_id(), verdict="expected"))
    task.flush()
    task.settle()
    journal = run_dir / TASKS / "t0001.json"
    left = json.loads(journal.read_text())  # the journal of a task that never closed it
    journal.write_text(json.dumps({**left, "owner": GONE}))  # killed by Spark
    assert (left["status"], left["cases"], left["written"], left["unwritten"]) == ("running", 3, 2, 1)
    driver = RecordWriter(run_dir, run_id="run")
    assert scaleout.sweep(driver, final=True) == 1
    driver.close("interrupted")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["cases"], manifest["written"], manifest["unwritten"]) == (3, 2, 1)
    assert manifest["features"]["mapping"] == {"agree": 1, "diverge": 1, "expected": 1, "unknown": 0}
    assert manifest["lost"] == {"mapping": {"agree": 0, "diverge": 1, "expected": 0, "unknown": 0}}
    now = json.loads(journal.read_text())
    assert (now["signal"], now["cases"], now["written"], now["unwritten"]) == ("cancelled", 3, 2, 1)


def test_a_resume_runs_again_a_task_journaled_completed_with_lost_records(tmp_path: Path) -> None:
    """Only a task whose journal says completed with nothing lost is kept by `--resume`."""
    writer = RecordWriter(tmp_path / "run", run_id="run")
    tasks = tmp_path / "run" / TASKS
    tasks.mkdir()
    for name, unwritten in (("t0000", 0), ("t0001", 3)):
        journal = {
            "status": "completed",
            "unwritten": unwritten,
            "written": 0,
            "restarts": [],
            "settings": {},
        }
        (tasks / f"{name}.json").write_text(json.dumps(journal))
    assert scaleout.completed_tasks(writer, Expectations()) == {"t0000"}
    writer.close()
