"""A campaign scaled out on Spark (`campaign --master URL`): one task per (target, family, shard).

A task is `run_one` of its family on its target with its shard's seed (`shard_seed`) and share of the
family's budget, on a server its executor provisions (the cache, else the Go module proxy), writing
to the run directory through a shard writer (`records.writer`: parts `part-tNNNN-*.parquet`, journal
`tasks/tNNNN.json`, its output in `tasks/tNNNN.log`, case ids from `NNNN * TASK_IDS` on). The run
directory is a path every executor must see (a shared file system, or one machine). The driver plans
the tasks, counts their journals in `manifest.json` every second and once more when they end, and
writes the run's case files.

A task that fails (a server that cannot be provisioned) is reported in one line and ends the run
`crashed` once the others are done; what it recorded stays counted. A task Spark runs again (a lost
executor) first removes what an earlier attempt wrote, so nothing is counted twice. On Ctrl-C or
SIGTERM the driver asks the tasks to stop (`tasks/.stop`), waits for their journals to close
`interrupted`, and ends the run `interrupted` with their counts.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, suppress
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from nats_conformance.fixtures.options import OptionError, RunConfig, Target
from nats_conformance.records.errors import ReportError
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.owners import PREFIX, is_process_alive, kill_process, make_workdir
from nats_conformance.records.schema import Case, case_of
from nats_conformance.records.spark import check_master, is_local, spark_errors, spark_session
from nats_conformance.records.writer import CASES, TASKS, RecordsError, RecordWriter, tallied, untallied
from nats_conformance.reference.errors import (
    ConformanceError,
    Terminated,
    forget_interrupts,
    interrupt_later,
    interruption,
)
from nats_conformance.suites.engine.campaign import CampaignPlan, run_one
from nats_conformance.suites.engine.progress import Progress
from nats_conformance.suites.engine.run import KEPT_DIVERGENCES
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.junit import FamilyOutcome

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TASK_IDS = 2**40
"""Case ids per task: task n numbers its cases from n * TASK_IDS, so ids are unique in the run."""
STOP = ".stop"
"""The file in `tasks/` by which the driver asks every task to stop (it holds the signal's name)."""
POLL_SECONDS = 1.0
STOP_GRACE_SECONDS = 60.0
"""How long an interrupted driver waits for its tasks to close their journals before cancelling them."""
APP = "nats-conformance-campaign"
TASK_ENTRY_BYTES = 1024
"""Room held per task for the run's final journal (an entry of `note_tasks` and the task's counts and
restarts, with room to spare)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One shard of one family on one target, with the plan it runs (its seed and budget)."""

    number: int
    target: Target
    family: str
    shard: int
    shards: int
    plan: CampaignPlan

    @property
    def name(self) -> str:
        return f"t{self.number:04d}"

    def describe(self) -> str:
        return f"{self.name} ({self.target.id} {self.family} shard {self.shard + 1}/{self.shards})"


@dataclass(slots=True)
class TaskResult:
    """What a task hands back to the driver besides its records and journal."""

    task: Task
    status: str = "completed"
    error: str = ""
    host: str = field(default_factory=socket.gethostname)
    seconds: float = 0.0
    outcomes: list[FamilyOutcome] = field(default_factory=list)
    smallest: list[Case] = field(default_factory=list)
    diverged: list[Case] = field(default_factory=list)
    expectations: Expectations = field(default_factory=Expectations)


def shard_seed(seed: int, shard: int) -> int:
    """Shard 0 draws with the plan's seed (so one shard draws what a local run draws), shard n with a
    seed derived from both."""
    return seed if shard == 0 else random.Random(f"{seed}/{shard}").randrange(2**63)


def plan_tasks(run: RunConfig, plan: CampaignPlan, shards: int) -> list[Task]:
    """Every (target, family, shard) with cases to run: shard k of a family's budget b gets b // shards
    cases, plus one for k < b % shards; shard 0 alone runs the known cases."""
    tasks: list[Task] = []
    for target in run.targets:
        for family in FAMILIES.values():
            budget = plan.budget(family)
            for shard in range(shards):
                share = budget // shards + (shard < budget % shards)
                if share:
                    shard_plan = replace(
                        plan,
                        budgets={**plan.budgets, family.name: share},
                        seed=shard_seed(plan.seed, shard),
                        known_cases=plan.known_cases and shard == 0,
                    )
                    tasks.append(Task(len(tasks), target, family.name, shard, shards, shard_plan))
    return tasks


def run_task(task: Task, *, run: RunConfig, run_dir: str, expectations: Expectations) -> TaskResult:
    """Run one task where Spark put it (the output goes to `tasks/NAME.log`); never raises, so that a
    failing task leaves the others running: its result says how it ended."""
    directory = Path(run_dir)
    with suppress(OSError):  # the driver asked every task to stop before Spark launched this one
        return TaskResult(task, status="interrupted", error=(directory / TASKS / STOP).read_text().strip())
    earlier = [
        *(directory / CASES).glob(f"part-{task.name}-*.parquet"),
        *(directory / CASES).glob(f".part-{task.name}-*.parquet.tmp"),  # a killed attempt's, half written
        *(directory / TASKS).glob(f"{task.name}.json.tmp"),
    ]
    for path in earlier:
        path.unlink(missing_ok=True)  # an earlier attempt's: this attempt records the shard again
    result = TaskResult(task)
    started = time.monotonic()
    try:
        writer = RecordWriter(
            directory, run_id=directory.name, shard=task.name, first_case_id=task.number * TASK_IDS
        )
    except RecordsError as error:  # a full disk: retried at once, the attempts would fail the job
        result.status, result.error = "crashed", str(error)
        return result
    done = threading.Event()
    watcher = threading.Thread(target=_watch_stop, args=(directory / TASKS / STOP, done), daemon=True)
    with _output_to(directory / TASKS / f"{task.name}.log"):
        watcher.start()
        try:
            result.outcomes = run_one(
                task.target,
                run,
                FAMILIES[task.family],
                plan=task.plan,
                writer=writer,
                expectations=expectations,
                diverged=result.diverged,
                draw_apart=False,  # the cluster's workers already fill the cores
            )
        except BaseException as error:  # every ending is in the result
            cause = interruption(error)
            result.status = "interrupted" if cause else "crashed"
            result.error = cause or _one_line(error)
            print(f"{task.describe()}: {result.status}: {result.error}", file=sys.stderr)
        finally:
            done.set()
            watcher.join()
            forget_interrupts()
            writer.settings["evidence"] = expectations.evidence()
            try:
                writer.close(result.status, signal=result.error if result.status == "interrupted" else "")
            except ConformanceError as error:
                result.status, result.error = "crashed", str(error)
                print(f"{task.describe()}: crashed: {error}", file=sys.stderr)
    result.seconds = time.monotonic() - started
    result.smallest = list(writer.smallest.values())
    result.expectations = expectations
    return result


def _watch_stop(stop: Path, done: threading.Event) -> None:
    """Until `done`: once the driver writes `stop`, interrupt the task at its next unit."""
    while not done.wait(0.2):
        if stop.exists():
            interrupt_later(Terminated if stop.read_text().strip() == "SIGTERM" else KeyboardInterrupt)
            return


@contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Standard error into `log`: `sys.stderr` and file descriptor 2 (what writes to the process's
    own, such as the progress line, and child processes)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with log.open("a", buffering=1) as file, redirect_stderr(file):
        os.dup2(file.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def check_reachable(master: str) -> None:
    """A `spark://HOST:PORT[,HOST:PORT]` master that answers on one of its addresses, before a JVM waits
    a minute for it.

    Raises:
        OptionError: none answers, or an address has no port.
    """
    if not master.startswith("spark://"):
        return
    why = ""
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise OptionError(f"--master: {master} must name HOST:PORT (got {address!r})")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            return
        except OSError as error:
            why = error.strerror or str(error)
    raise OptionError(f"--master: cannot reach the Spark master at {master}: {why}")


@dataclass(slots=True)
class ScaleOut:
    """A started Spark session and the shards per family to cut a campaign into."""

    spark: SparkSession
    master: str
    shards: int

    def describe(self) -> dict[str, object]:
        return {"master": self.master, "shards": self.shards}

    def run(
        self,
        run: RunConfig,
        plan: CampaignPlan,
        writer: RecordWriter,
        expectations: Expectations,
        *,
        diverged: list[Case],
        outcomes: list[FamilyOutcome],
        resume: bool = False,
    ) -> None:
        """Run every task of the plan on the cluster into `writer`'s run directory, journaling them in
        its manifest; then merge what they found into `diverged`, `outcomes` and `expectations`. With
        `resume` (the directory holds an interrupted run of the same plan), a task whose journal says it
        completed is not run again: its records, evidence and divergences count as they are.

        Raises:
            ConformanceError: a task failed (after the others ended), or the Spark job did.
        """
        tasks = plan_tasks(run, plan, self.shards)
        writer.hold_room(TASK_ENTRY_BYTES * len(tasks))  # the final journal lists every task
        finished = completed_tasks(writer, expectations) if resume else set()
        pending = [task for task in tasks if task.name not in finished]
        print(
            f"{self.master}: {len(tasks)} tasks ({self.shards} shard{'s' * (self.shards > 1)} per family)"
            + (f", {len(tasks) - len(pending)} completed before the resume" if resume else ""),
            file=sys.stderr,
            flush=True,
        )
        job = Job(self.spark, pending, run, writer.run_dir, expectations, total=len(tasks))
        planned = sum(task.plan.budget(FAMILIES[task.family]) for task in tasks)
        progress = Progress(total=planned)
        progress.begin(f"{self.master}:", planned)
        results: list[TaskResult] = []
        try:
            results = job.wait(writer, progress)
        except BaseException as error:
            cause = interruption(error)
            if cause:
                job.stop(cause, writer)
            raise
        finally:
            try:
                with suppress(RecordsError):  # closing the writer journals the run from its reserved room
                    job.show(writer, progress, final=True)
            finally:
                progress.end()  # the line ends, so that an error's line is its own
            note_tasks(writer, tasks, results)
        failed = [result for result in results if result.status != "completed"]
        shares: list[FamilyOutcome] = []
        for result in results:
            writer.keep_smallest(result.smallest)
            expectations.absorb(result.expectations)
            diverged.extend(result.diverged[: max(0, KEPT_DIVERGENCES - len(diverged))])
            shares += result.outcomes
        for result in failed:
            print(f"{result.task.describe()}: {result.status}: {result.error}", file=sys.stderr)
        merge_profiles(writer)
        outcomes += merged(shares)
        if failed:
            raise ConformanceError(
                f"{len(failed)} of {len(tasks)} tasks failed, first {failed[0].task.describe()}: "
                f"{failed[0].error} (its output: {writer.run_dir / TASKS / failed[0].task.name}.log)"
            )


def completed_tasks(writer: RecordWriter, expectations: Expectations) -> set[str]:
    """The tasks of an interrupted run whose journal says they completed and whose parts hold the rows
    it says they wrote; what they found (their evidence for `expectations`, their smallest divergences
    for the case files) counts for the resumed run. A task whose parts were deleted, cut short or
    garbled since runs again. The others' parts are removed when they run again (`run_task`), and the
    interrupted driver's request to stop is withdrawn."""
    (writer.run_dir / TASKS / STOP).unlink(missing_ok=True)
    finished = set()
    for path in sorted((writer.run_dir / TASKS).glob("t*.json")):
        journal = json.loads(path.read_text())
        if journal.get("status") != "completed" or journal.get("unwritten"):
            continue  # run again
        parts = sorted((writer.run_dir / CASES).glob(f"part-{path.stem}-*.parquet"))
        try:
            rows = sum(pq.ParquetFile(part).metadata.num_rows for part in parts)
            kept = divergences_in(parts) if rows == journal.get("written") else None
            fault = f"its journal says {journal.get('written')} rows, its parts hold {rows}"
        except (OSError, ValueError) as error:  # pyarrow's errors of a cut or garbled part
            kept, fault = None, f"a part cannot be read ({_one_line(error)})"
        if kept is None:
            print(f"{path.stem}: {fault}: it runs again", file=sys.stderr)
            continue
        finished.add(path.stem)
        expectations.absorb_evidence(journal.get("settings", {}).get("evidence", {}))
        writer.keep_smallest(kept)
    with suppress(RecordsError):  # a full disk: the journal is written again at the job's next poll
        sweep(writer)
    return finished


def divergences_in(parts: list[Path]) -> list[Case]:
    """The diverging and expected cases recorded in these part files."""
    cases = []
    for part in parts:
        table = pq.read_table(part, filters=pc.field("verdict").isin(["diverge", "expected"]))
        cases += [case_of(row) for row in table.to_pylist()]
    return cases


def note_tasks(writer: RecordWriter, tasks: list[Task], results: list[TaskResult]) -> None:
    """Journal how every task ended: its result, or (a job interrupted or failed) its journal's status,
    `not started` without one."""
    by_number = {result.task.number: result for result in results}
    for task in tasks:
        result = by_number.get(task.number)
        if result is None:
            journal = writer.run_dir / TASKS / f"{task.name}.json"
            status = json.loads(journal.read_text())["status"] if journal.exists() else "not started"
            result = TaskResult(task, status=status, host="")
        writer.note_task(
            {
                "task": task.name,
                "target": task.target.id,
                "family": task.family,
                "shard": task.shard,
                "shards": task.shards,
                "status": result.status,
                "error": result.error,
                "host": result.host,
                "seconds": round(result.seconds, 3),
            }
        )


class Job:
    """The tasks as one Spark job, collected in a thread of the driver while the main thread (which
    receives the signals) journals their progress. It waits on an event, not by joining the thread:
    a signal that interrupts `Thread.join` can leave the thread marked ended while it runs."""

    def __init__(
        self,
        spark: SparkSession,
        tasks: list[Task],
        run: RunConfig,
        run_dir: Path,
        expectations: Expectations,
        *,
        total: int,
    ) -> None:
        self.spark = spark
        self.run_dir = run_dir
        self.count = total
        self.results: list[TaskResult] = []
        self.error: BaseException | None = None
        self.ended = threading.Event()
        work = partial(run_task, run=run, run_dir=str(run_dir.resolve()), expectations=expectations)
        rdd = spark.sparkContext.parallelize(tasks, max(1, len(tasks))).map(work)
        self.thread = threading.Thread(target=self._collect, args=(rdd,), daemon=True)
        self.thread.start()

    def _collect(self, rdd: Any) -> None:
        try:
            with spark_errors("running the campaign's tasks"):
                self.results = rdd.collect()
        except BaseException as error:  # handed to the main thread
            self.error = error
        finally:
            self.ended.set()

    def wait(self, writer: RecordWriter, progress: Progress) -> list[TaskResult]:
        """The tasks' results once all ended, journaling their counts every `POLL_SECONDS` meanwhile."""
        while not self.ended.wait(POLL_SECONDS):
            with suppress(RecordsError):  # a full disk: journaled again at the next poll, and at the end
                self.show(writer, progress)  # from the room the writer holds for its final manifest
        if self.error is not None:
            raise self.error
        return self.results

    def show(self, writer: RecordWriter, progress: Progress, *, final: bool = False) -> None:
        """Journal the tasks' counts (`sweep`, `final` once the job is over) and show them on the
        progress display."""
        ended = sweep(writer, final=final)
        progress.label = f"{self.run_dir.name}: {ended}/{self.count} tasks ended,"
        progress.set(writer.manifest()["verdicts"])

    def stop(self, cause: str, writer: RecordWriter) -> None:
        """Ask every task to stop at its next unit and wait (at most `STOP_GRACE_SECONDS`) for them to
        end; then cancel what is left."""
        print(f"\nstopping {self.count} tasks ({cause})", file=sys.stderr, flush=True)
        asked = False
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while True:
            if not asked:
                try:
                    (self.run_dir / TASKS / STOP).write_text(cause)
                    asked = True
                except OSError:  # a full disk: asked again at the next poll
                    (self.run_dir / TASKS / STOP).unlink(missing_ok=True)
            if self.ended.wait(POLL_SECONDS) or time.monotonic() >= deadline:
                break
            with suppress(RecordsError):  # a full disk: the run's final journal has room of its own
                sweep(writer)
        if not self.ended.is_set():
            self.spark.sparkContext.cancelAllJobs()
            self.ended.wait(STOP_GRACE_SECONDS)


def merged(shares: list[FamilyOutcome]) -> list[FamilyOutcome]:
    """One outcome per family and target from its shards': cases and divergences added up, the time
    of the slowest, skipped when a shard was (each skips for the same reason)."""
    families: dict[tuple[str, str], FamilyOutcome] = {}
    for share in shares:
        key = (share.target, share.family)
        so_far = families.get(key, FamilyOutcome(share.target, share.family))
        families[key] = FamilyOutcome(
            share.target,
            share.family,
            cases=so_far.cases + share.cases,
            diverged=so_far.diverged + share.diverged,
            seconds=max(so_far.seconds, share.seconds),
            skipped=so_far.skipped or share.skipped,
        )
    return list(families.values())


def sweep(writer: RecordWriter, *, final: bool = False) -> int:
    """Count every task journal of the run in `writer`'s manifest; returns how many tasks have ended.
    `final`: the job is over, so a task whose journal still says `running` was cancelled by Spark
    (`Job.stop`) between two of its journals, and its cases are the rows of its parts on disk
    (`cancelled`). A final sweep looks again, `LATE_SECONDS` later, for journals that appeared meanwhile
    (a task Spark launched as it cancelled the job, seen in the soak: 35 rows the manifest missed), until
    a look finds none."""
    journals: dict[str, dict[str, Any]] = {}
    seen: set[Path] = set()
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        found = sorted(set((writer.run_dir / TASKS).glob("t*.json")) - seen)
        seen.update(found)
        for path in found:
            try:
                journals[path.stem] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # replaced in one step: only a task starting again removes it
            if final and journals[path.stem].get("status") == "running":
                journals[path.stem] = settled(path, journals[path.stem], deadline)
            if final and journals[path.stem].get("status") == "running":
                journals[path.stem] = cancelled(journals[path.stem], writer.run_dir, path)
        if not (final and found):
            break
        time.sleep(LATE_SECONDS)
    writer.note_shards(journals)
    return sum(journal.get("status") != "running" for journal in journals.values())


SETTLE_SECONDS = 10.0
"""How long the final sweep waits in all for cancelled tasks' processes, still alive on this host, to
end before it kills them."""
LATE_SECONDS = 0.5
"""How long the final sweep waits before it looks again for journals that appeared while it counted."""


def settled(path: Path, journal: dict[str, Any], deadline: float) -> dict[str, Any]:
    """The journal at `path` once its task has stopped writing: a job cancelled by Spark ends before
    the Python workers of its tasks do, and one still running here could write a part and its journal
    after the sweep counted its rows (more rows on disk than the manifest said, seen in the soak). Waits
    until `deadline` (`time.monotonic`) for the journal to end or its process to die, then kills the
    process (a worker of the ended job); a task of another host is taken as it is."""
    owner = str(journal.get("owner", ""))
    while (
        journal.get("status") == "running"
        and journal.get("host") == socket.gethostname()
        and is_process_alive(owner)
        and time.monotonic() < deadline + SETTLE_SECONDS  # a process no SIGKILL ends (state D)
    ):
        if time.monotonic() >= deadline:
            kill_process(owner)
        time.sleep(0.1)
        try:
            journal = json.loads(path.read_text())
        except (OSError, ValueError):  # unreadable now: its last reading is counted as cancelled
            break
    return journal


def cancelled(journal: dict[str, Any], run_dir: Path, path: Path) -> dict[str, Any]:
    """The journal of a task killed while it ran, counting the rows its parts hold (a part is renamed
    into place whole; a half-written one keeps its `.tmp` name) and the cases its last journal counted
    as lost, written over `path` (not on a full disk: the driver's manifest, which has room of its own,
    counts them all the same)."""
    counts: Counter[tuple[str, str]] = Counter()
    for part in sorted((run_dir / CASES).glob(f"part-{path.stem}-*.parquet")):
        table = pq.read_table(part, columns=["feature", "verdict"])
        counts.update(zip(table["feature"].to_pylist(), table["verdict"].to_pylist(), strict=True))
    rows = sum(counts.values())
    lost = untallied(journal.get("lost", {}))
    features, verdicts = tallied(counts + lost)
    recount = {**journal, "status": "interrupted", "signal": "cancelled", "features": features}
    recount.update(verdicts=verdicts, cases=rows + lost.total(), written=rows, unwritten=lost.total())
    staged = path.with_suffix(".json.tmp")
    try:
        staged.write_text(json.dumps(recount, indent=2, sort_keys=True) + "\n")
        os.replace(staged, path)
    except OSError:
        staged.unlink(missing_ok=True)
    return recount


def merge_profiles(writer: RecordWriter) -> None:
    """The rules each target was judged by, as the tasks' journals recorded them, in the run's settings."""
    profiles = writer.settings.setdefault("profiles", {})
    for path in sorted((writer.run_dir / TASKS).glob("t*.json")):
        profiles.update(json.loads(path.read_text()).get("settings", {}).get("profiles", {}))


@contextmanager
def scale_out(master: str | None, shards: int | None) -> Iterator[ScaleOut | None]:
    """A Spark session for `--master` (None without it), started before the run directory exists.

    Raises:
        OptionError: a master URL Spark does not take, one that does not answer, or --shards alone.
    """
    if master is None:
        if shards is not None:
            raise OptionError("--shards needs --master")
        yield None
        return
    if shards == 0:
        raise OptionError("--shards takes a number of tasks per family, at least 1")
    try:
        check_master(master)
    except ReportError as error:
        raise OptionError(str(error)) from error
    check_reachable(master)
    # On a local master the tasks' temporary files (their servers' work directories) go under one
    # directory of the run's, removed once Spark has stopped: a worker Spark kills (a task cancelled
    # after the grace of an interrupt, a lost attempt) cannot remove its own. The directory is owned, so
    # that the next run removes it when this one was SIGKILLed before its `finally`.
    scratch = make_workdir(f"{PREFIX}tasks-") if is_local(master) else None
    environment = {"TMPDIR": str(scratch)} if scratch is not None else {}
    try:
        with spark_session(master, app=APP, executor_env=environment) as spark:  # Ctrl-C stays ours
            yield ScaleOut(spark, master, shards or max(1, spark.sparkContext.defaultParallelism))
    finally:
        if scratch is not None:
            remove_scratch(scratch)


def remove_scratch(scratch: Path, *, attempts: int = 20) -> None:
    """Remove `scratch`, again while workers that are still ending write in it (for up to 10 s)."""
    for _ in range(attempts):
        shutil.rmtree(scratch, ignore_errors=True)
        if not scratch.exists():
            return
        time.sleep(0.5)
