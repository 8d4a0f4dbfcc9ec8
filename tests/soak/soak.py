"""The nemesis soak: a campaign over every family on two releases, scheduled on Spark (`--master`, so
that it can be resumed), run in a network namespace of its own with its records on a small tmpfs, while
the nemesis (`tests.soak.nemesis`) kills and stops its servers and tasks, fills the disk and delays
loopback traffic; every `cycle` seconds the campaign is sent SIGTERM and resumed (`campaign --resume`).
Then the faults are healed, the campaign is resumed until it completes (or sent SIGTERM at the
deadline), and the run is checked:

- every case on disk has one verdict and a case id no other row has (across parts, tasks and resumes);
  the manifest counts exactly the rows on disk, and each task's journal exactly its own parts; cases
  whose records could not be written are counted as lost, with the reason their task logged;
- every server restart a task journaled is in the manifest, and a task with a case that says a restart
  of its server cut it short journaled that restart;
- every invocation ended as the exit-status contract says (README, Exit statuses): 143 and one line
  after SIGTERM, 2 and one `error:` line, or 0/1/3 as the records' verdicts say, never a traceback;
- nothing is left: no process in the namespace, no file in the campaign's temporary directory, no stray
  part file; the soak then removes its tmpfs and namespace and checks that they are gone.

`python -m tests.soak --out DIR --duration 1800` (`--help`); the run directory, `nemesis.log`,
`summary.json` and `summary.txt` land in DIR, and the exit status is 0 when every check held, 1 when
one did not, 2 when the machine cannot run the soak (not root, no network namespaces, no tmpfs).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from nats_conformance.fixtures.session import RESTARTED
from nats_conformance.records.counts import run_tally
from nats_conformance.records.owners import is_process_alive
from nats_conformance.records.schema import VERDICTS
from nats_conformance.records.unknowns import unstated
from nats_conformance.reference.cli import DEFAULT_MAX_UNKNOWN, exit_status, too_many_unknown
from nats_conformance.suites.engine.plans import FLOOR
from nats_conformance.suites.engine.scaleout import TASK_IDS
from nats_conformance.suites.families import FAMILIES
from tests.soak.nemesis import Nemesis, Watched, shaping_available

ROOT = Path(__file__).resolve().parents[2]
RELEASES = ("2.10.27", "2.14.5")
MASTER = "local[2,4]"
"""Two task slots, and a task that fails (its worker killed) is tried up to four times."""
STOP_SECONDS = 120.0
"""How long a campaign may take to end after SIGTERM before it counts as hung (and is killed)."""
LEFT_GRACE = 15.0
"""Seconds the campaign's last processes (a JVM deleting its scratch files) may take to end after it."""
PART = re.compile(r"part-(?:(t\d{4})-)?\d{5}\.parquet")
"""A part file: a task's (`part-tNNNN-NNNNN`) in a scaled-out run, else the run's own (`part-NNNNN`)."""
STAGED = re.compile(r"\.part-t\d{4}-\d{5}\.parquet\.tmp")
"""A part a task's attempt was writing when it was killed; the next attempt of that task removes it."""
HALF_WRITTEN = "half-written parts of a killed attempt in cases/: "


class SoakUnavailable(Exception):
    """This machine cannot run the soak (a capability is missing); the message says which."""


@dataclass(frozen=True, slots=True)
class SoakConfig:
    out: Path
    duration: float = 180.0
    seed: int = 1
    releases: tuple[str, ...] = RELEASES
    share: float = 0.0
    """Each family's budget as a share of its default; 0: from the duration (`budget_share`), so that
    the campaign lasts until the deadline."""
    cycle: float = 0.0
    """Seconds between SIGTERM-and-resume of the campaign; 0: a quarter of the duration, at most 300."""
    disk_mb: int = 64

    @property
    def budget_share(self) -> float:
        # Enough work to outlast the duration on 2 shared cores: share 5.0 completed after 1,746 s of a
        # 1,860-second soak (seed 8, 2026-11-26), so one unit of share per 300 s of duration.
        return self.share or round(self.duration / 300, 2)

    @property
    def shards(self) -> int:
        return max(1, round(self.budget_share / 0.25))

    @property
    def period(self) -> float:
        return self.cycle or min(300.0, self.duration / 4)

    def budgets(self) -> dict[str, int]:
        return {
            name: max(FLOOR, round(f.description.budget * self.budget_share)) for name, f in FAMILIES.items()
        }


@dataclass(slots=True)
class Invocation:
    number: int
    kind: str
    started: float
    ended: float = 0.0
    status: int | None = None
    sent: str = ""
    sent_at: float = 0.0
    """When the signal was sent (wall clock, as the manifest's `finished`)."""
    last_line: str = ""
    problem: str = ""


def last_line(text: str) -> str:
    lines = [line.rsplit("\r", 1)[-1].strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    return lines[-1] if lines else ""


def run_command(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False)


def remove_stale_namespaces() -> list[str]:
    """Remove the namespaces of soaks that were killed (`ncsoak-PID-*` whose PID is gone), with what
    still runs in them (only a soak's campaign runs there); their names."""
    removed = []
    for line in run_command("ip", "netns", "list").stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        owner = name.split("-")[1] if name.startswith("ncsoak-") and name.count("-") == 2 else ""
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            for pid in run_command("ip", "netns", "pids", name).stdout.split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
            run_command("ip", "netns", "del", name)
            removed.append(name)
    return removed


@dataclass
class Sandbox:
    """The namespace, the tmpfs and the temporary directory of one soak, removed on exit."""

    out: Path
    disk_mb: int
    netns: str = field(default_factory=lambda: f"ncsoak-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    disk: Path = field(init=False)
    tmp: Path = field(init=False)
    inode: int = 0
    shaping: str = ""
    removed: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.disk = self.out / "disk"
        self.tmp = self.out / "tmp"

    @contextlib.contextmanager
    def opened(self) -> Iterator[Sandbox]:
        if os.geteuid() != 0:
            raise SoakUnavailable("the soak needs root (network namespaces, tc, a tmpfs mount)")
        for program in ("ip", "tc", "mount", "umount"):
            if shutil.which(program) is None:
                raise SoakUnavailable(f"the soak needs {program}, which is not installed")
        remove_stale_namespaces()
        with contextlib.ExitStack() as stack:
            added = run_command("ip", "netns", "add", self.netns)
            if added.returncode:
                raise SoakUnavailable(f"cannot create a network namespace: {added.stderr.strip()}")
            stack.callback(self._remove_netns)
            run_command("ip", "-n", self.netns, "link", "set", "lo", "up")
            self.shaping = shaping_available(self.netns)
            if not self.shaping:
                raise SoakUnavailable("tc can add neither a netem nor a tbf qdisc in a network namespace")
            self.inode = os.stat(f"/run/netns/{self.netns}").st_ino
            self.disk.mkdir(parents=True)
            mounted = run_command(
                "mount", "-t", "tmpfs", "-o", f"size={self.disk_mb}m", "tmpfs", str(self.disk)
            )
            if mounted.returncode:
                raise SoakUnavailable(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
            stack.callback(self._unmount)
            self.tmp.mkdir()
            stack.callback(shutil.rmtree, self.tmp, True)
            yield self

    def _remove_netns(self) -> None:
        self.kill_left()
        run_command("ip", "netns", "del", self.netns)
        self.removed["netns"] = self.netns not in run_command("ip", "netns", "list").stdout.split()

    def _unmount(self) -> None:
        if run_command("umount", str(self.disk)).returncode:
            run_command("umount", "-l", str(self.disk))
        self.removed["tmpfs"] = str(self.disk) not in Path("/proc/mounts").read_text()
        with contextlib.suppress(OSError):
            self.disk.rmdir()

    def left_processes(self, grace: float = 0.0) -> list[str]:
        """The processes still in the namespace `grace` seconds on, as `PID COMM`."""
        deadline = time.monotonic() + grace
        while (pids := run_command("ip", "netns", "pids", self.netns).stdout.split()) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.5)
        return [
            f"{pid} {Path(f'/proc/{pid}/comm').read_text().strip()}"
            for pid in pids
            if Path(f"/proc/{pid}").exists()
        ]

    def kill_left(self) -> None:
        """SIGKILL what is left in the namespace (all started by the soak: nothing else runs there)."""
        for pid in run_command("ip", "netns", "pids", self.netns).stdout.split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


@dataclass
class Soak:
    config: SoakConfig
    sandbox: Sandbox
    nemesis: Nemesis
    watched: Watched
    invocations: list[Invocation] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    run_dir: Path | None = None
    completed: bool = False
    watched_pid: int = 0
    """The pid of the invocation that ended last (a manifest it wrote names it as owner)."""

    def command(self, kind: str) -> list[str]:
        campaign = [sys.executable, "-m", "nats_conformance.suites", "campaign"]
        if kind == "resume":
            assert self.run_dir is not None
            campaign += ["--resume", str(self.run_dir)]
        else:
            campaign += [
                "--master",
                MASTER,
                "--shards",
                str(self.config.shards),
                "--seed",
                str(self.config.seed),
            ]
            campaign += [
                option for release in self.config.releases for option in ("--server-version", release)
            ]
            budgets = self.config.budgets()
            campaign += [option for name in FAMILIES for option in ("--budget", f"{name}={budgets[name]}")]
            campaign += ["--out", str(self.sandbox.disk)]
        return ["ip", "netns", "exec", self.sandbox.netns, *campaign]

    def launch(self) -> None:
        kind = "resume" if self.run_dir is not None and (self.run_dir / "manifest.json").exists() else "start"
        if kind == "start":
            self.run_dir = None
        number = len(self.invocations)
        logs = self.config.out / "logs"
        logs.mkdir(exist_ok=True)
        environment = {
            **os.environ,
            "TMPDIR": str(self.sandbox.tmp),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
        with (
            (logs / f"campaign-{number:02d}.out").open("wb") as out,
            (logs / f"campaign-{number:02d}.err").open("wb") as err,
        ):
            self.process = subprocess.Popen(
                self.command(kind),
                cwd=ROOT,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self.watched.session = self.process.pid
        self.invocations.append(Invocation(number, kind, time.monotonic()))
        self.nemesis.note("campaign", kind=kind, pid=self.process.pid, number=number)

    def find_run_dir(self) -> Path | None:
        if self.run_dir is None:
            found = [path.parent for path in self.sandbox.disk.glob("*/manifest.json")]
            if found:
                self.run_dir = self.watched.run_dir = found[0]
        return self.run_dir

    def recorded(self) -> int:
        run_dir = self.find_run_dir()
        if run_dir is None:
            return 0
        with contextlib.suppress(OSError, ValueError):
            return int(json.loads((run_dir / "manifest.json").read_text()).get("cases", 0))
        return 0

    def terminate(self) -> None:
        """SIGTERM the campaign and wait for it to end (SIGKILL its session after `STOP_SECONDS`)."""
        assert self.process is not None
        invocation = self.invocations[-1]
        invocation.sent = "SIGTERM"
        invocation.sent_at = time.time()
        self.nemesis.note("terminate-campaign", pid=self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            invocation.problem = f"still running {STOP_SECONDS:.0f} s after SIGTERM"
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.finished()

    def finished(self) -> None:
        """Judge the ended invocation by the exit-status contract."""
        assert self.process is not None
        invocation = self.invocations[-1]
        invocation.ended = time.monotonic()
        invocation.status = self.process.returncode
        self.watched_pid = self.process.pid
        self.watched.session = 0
        self.process = None
        stderr = (self.config.out / "logs" / f"campaign-{invocation.number:02d}.err").read_text(
            errors="replace"
        )
        invocation.last_line = last_line(stderr)
        self.find_run_dir()
        manifest = self.manifest()
        problems = [invocation.problem] if invocation.problem else []
        if "Traceback" in stderr:
            problems.append("a traceback on stderr")
        status, line = invocation.status, invocation.last_line
        if status == 143:
            if not invocation.sent:
                problems.append("exit 143 with no SIGTERM sent")
            if line != "nats-conformance: terminated":
                problems.append(f"exit 143 but its last line is {line!r}")
            journaled = str(manifest.get("owner", "")).partition(":")[0] == str(self.watched_pid)
            # A SIGTERM that lands once the run is journaled completed (its last lines still printing)
            # ends the command as the signal says, and the journal is right that every case is in.
            done_before = (
                manifest.get("status") == "completed" and manifest.get("finished", 0) <= invocation.sent_at
            )
            signalled = (manifest.get("status"), manifest.get("signal")) == ("interrupted", "SIGTERM")
            if journaled and not (signalled or done_before):
                problems.append(f"exit 143 but the run is journaled {manifest.get('status')}")
        elif status == 2:
            if not line.startswith("nats-conformance: error: "):
                problems.append(f"exit 2 but its last line is {line!r}")
        elif status in (0, 1, 3):
            if manifest.get("status") != "completed":
                problems.append(f"exit {status} but the run is journaled {manifest.get('status')}")
            elif self.run_dir is not None:
                tally = run_tally(self.run_dir)
                unknown = too_many_unknown(tally, DEFAULT_MAX_UNKNOWN)
                wanted = exit_status(diverged=bool(tally["diverge"]), unknown=unknown)
                if status != wanted:
                    problems.append(f"exit {status} where its records say {wanted}")
                self.completed = True
        else:
            problems.append(f"exit {status} is not in the contract")
        invocation.problem = "; ".join(problems)
        self.nemesis.note(
            "campaign-ended", number=invocation.number, status=status, problem=invocation.problem
        )

    def manifest(self) -> dict[str, Any]:
        if self.run_dir is None:
            return {}
        try:
            return dict(json.loads((self.run_dir / "manifest.json").read_text()))
        except (OSError, ValueError):
            return {}

    def run(self) -> None:
        config = self.config
        started = time.monotonic()
        faults_end = started + 0.55 * config.duration
        deadline = started + config.duration - 30
        next_cycle = started + config.period
        self.launch()
        self.nemesis.start()
        try:
            while time.monotonic() < faults_end and not self.completed:
                self.step()
                if self.process is not None and time.monotonic() >= next_cycle and self.recorded() > 0:
                    self.terminate()
                    next_cycle = time.monotonic() + config.period
                    if time.monotonic() < faults_end:
                        self.launch()
                time.sleep(0.25)
        finally:
            self.nemesis.heal()
        while not self.completed and time.monotonic() < deadline:
            self.step()
            time.sleep(0.25)
        if self.process is not None:
            self.terminate()

    def step(self) -> None:
        """Relaunch the campaign if it ended without completing (resumed once it has a run directory)."""
        if self.process is not None and self.process.poll() is not None:
            self.finished()
            if self.completed:
                return
            time.sleep(1.0)
        if self.process is None and not self.completed:
            self.launch()


def count_parts(run_dir: Path) -> tuple[Counter[tuple[str, str, str]], list[int], list[str], set[str]]:
    """Rows on disk by (task, feature, verdict), every case id, the stray files in `cases/`, and the tasks
    with a case its server's restart cut short; the task of a run that was not scaled out is ""."""
    rows: Counter[tuple[str, str, str]] = Counter()
    ids: list[int] = []
    stray = []
    cut: set[str] = set()
    for path in sorted((run_dir / "cases").iterdir()):
        matched = PART.fullmatch(path.name)
        if matched is None:
            stray.append(path.name)
            continue
        table = pq.read_table(path, columns=["case_id", "feature", "verdict", "detail"]).to_pydict()
        ids += table["case_id"]
        rows.update((matched[1] or "", f, v) for f, v in zip(table["feature"], table["verdict"], strict=True))
        if any(unstated(detail or "").startswith(RESTARTED) for detail in table["detail"]):
            cut.add(matched[1] or "")
    return rows, ids, stray, cut


def features(journal: dict[str, Any]) -> Counter[tuple[str, str]]:
    return Counter(
        {(f, v): n for f, verdicts in journal.get("features", {}).items() for v, n in verdicts.items() if n}
    )


def check_run(run_dir: Path) -> dict[str, Any]:
    """The run's accounting (see the module's docstring): its counts, and a list of problems. A run that
    was not scaled out (no task journals) is checked on its manifest and parts alone."""
    problems: list[str] = []
    manifest = json.loads((run_dir / "manifest.json").read_text())
    rows, ids, stray, cut = count_parts(run_dir)
    staged = [name for name in stray if STAGED.fullmatch(name)]
    others = [name for name in stray if name not in staged]
    if staged:
        problems.append(HALF_WRITTEN + ", ".join(staged[:5]))
    if others:
        problems.append(f"stray files in cases/: {', '.join(others[:5])}")
    duplicated = sum(n - 1 for n in Counter(ids).values() if n > 1)
    if duplicated:
        problems.append(f"{duplicated} duplicated case ids")
    on_disk: Counter[tuple[str, str]] = Counter()
    for (_, feature, verdict), n in rows.items():
        on_disk[(feature, verdict)] += n
    if any(verdict not in VERDICTS for _, verdict in on_disk):
        problems.append("a row with no verdict of the four")
    # the journal counts every case run: those on disk (`written`) and those whose write failed
    lost = manifest["unwritten"]
    if manifest["cases"] != manifest["written"] + lost or manifest["written"] != len(ids):
        problems.append(
            f"the manifest counts {manifest['cases']} cases ({manifest['written']} written, {lost} lost), "
            f"the disk holds {len(ids)} rows"
        )
    if (features(manifest) != on_disk) if not lost else (features(manifest) - on_disk).total() != lost:
        problems.append("the manifest's counts by feature and verdict are not those of the rows on disk")
    if lost and manifest["status"] == "completed":
        problems.append(f"a run journaled completed with {lost} cases lost")
    journals = {
        path.stem: json.loads(path.read_text()) for path in sorted((run_dir / "tasks").glob("t*.json"))
    }
    restarts = 0
    for task, journal in journals.items():
        mine = Counter({(f, v): n for (t, f, v), n in rows.items() if t == task})
        wrong = journal["written"] != mine.total() or (not journal["unwritten"] and features(journal) != mine)
        if wrong:
            problems.append(
                f"{task}'s journal ({journal['status']}) counts {journal['cases']}, "
                f"its parts hold {mine.total()}"
            )
        restarts += len(journal.get("restarts", []))
        if journal.get("status") == "running" and is_process_alive(str(journal.get("owner", ""))):
            problems.append(f"{task}'s journal says running and its process still runs")
    numbers = {int(task[1:]) for task, _, _ in rows if task}
    if journals and not all(int(i) // TASK_IDS in numbers for i in ids):
        problems.append("a case id outside every task's range")
    if journals and len(manifest["restarts"]) != restarts:
        problems.append(f"the manifest lists {len(manifest['restarts'])} restarts, the journals {restarts}")
    # A case cut short by a restart says so in its detail (`Session.recover`); its task lists the restart.
    # (A killed server whose family had ended, or whose run did, is never restarted: it decides nothing.)
    for task in sorted(cut):
        if task in journals and not journals[task].get("restarts"):
            problems.append(f"{task}: a case says its server was restarted, 0 restarts listed")
    lost_reasons = sorted(
        {
            line.split(": ", 1)[-1][:200]
            for log in (run_dir / "tasks").glob("t*.log")
            for line in log.read_text(errors="replace").splitlines()
            if "cannot write" in line or "cannot record" in line
        }
    )
    if manifest["unwritten"] and journals and not lost_reasons:  # a run not scaled out says it on stderr
        problems.append(f"{manifest['unwritten']} cases lost with no reason logged")
    tasks = manifest.get("tasks", [])
    if manifest["status"] == "completed" and tasks and {t["status"] for t in tasks} != {"completed"}:
        problems.append("a completed run with a task that did not complete")
    return {
        "run_id": run_dir.name,
        "status": manifest["status"],
        "cases": manifest["cases"],
        "rows": len(ids),
        "verdicts": manifest["verdicts"],
        "lost": manifest["unwritten"],
        "lost_reasons": lost_reasons,
        "duplicated_case_ids": duplicated,
        # a journal still `running` whose process is gone: an attempt that could not close it (killed,
        # or the disk was full); it counts its parts all the same, and a resume runs the task again
        "tasks": Counter(
            "killed" if t["status"] == "running" else t["status"]
            for t in (journals.get(task["task"], task) for task in tasks)
        ),
        "server_restarts": len(manifest["restarts"]),
        "tasks_cut_short_by_a_restart": len(cut),
        "problems": problems,
    }


def run_soak(config: SoakConfig) -> dict[str, Any]:
    """Run the soak into `config.out`; returns the summary (also written as summary.json and .txt)."""
    config.out.mkdir(parents=True, exist_ok=True)
    provisioned = run_command(
        sys.executable, "-m", "nats_conformance.fixtures", "provision", *config.releases
    )
    if provisioned.returncode:
        raise SoakUnavailable(
            f"cannot provision {', '.join(config.releases)}: {last_line(provisioned.stderr)}"
        )
    started = time.monotonic()
    sandbox = Sandbox(config.out, config.disk_mb)
    summary: dict[str, Any] = {
        "seed": config.seed,
        "duration": config.duration,
        "releases": list(config.releases),
    }
    problems: list[str] = []
    with (config.out / "nemesis.log").open("w") as log, sandbox.opened():
        watched = Watched(sandbox.inode, sandbox.disk)
        nemesis = Nemesis(watched, config.seed, log, sandbox.netns, shaping=sandbox.shaping)
        soak = Soak(config, sandbox, nemesis, watched)
        try:
            soak.run()
        finally:
            if soak.process is not None:  # an error of the soak itself: stop the campaign first
                soak.terminate()
        left = sandbox.left_processes(grace=LEFT_GRACE)
        if left:
            problems.append(f"processes left in the namespace: {', '.join(left[:5])}")
        kept = soak.run_dir.name if soak.run_dir is not None else ""
        extra = sorted(path.name for path in sandbox.disk.iterdir() if path.name != kept)
        if extra:
            problems.append(f"left under the campaign's --out: {', '.join(extra[:5])}")
        stray = sorted(path.name for path in sandbox.tmp.iterdir())
        if stray:
            problems.append(f"left in the campaign's temporary directory: {', '.join(stray[:5])}")
        if soak.run_dir is None:
            problems.append("the campaign recorded nothing")
        else:
            checked = check_run(soak.run_dir)
            problems += checked.pop("problems")
            summary["run"] = checked
            shutil.copytree(soak.run_dir, config.out / soak.run_dir.name)
            summary["run_dir"] = str(config.out / soak.run_dir.name)
        problems += [f"invocation {i.number}: {i.problem}" for i in soak.invocations if i.problem]
        summary["invocations"] = [
            asdict(i) | {"seconds": round(i.ended - i.started, 1)} for i in soak.invocations
        ]
        for invocation in summary["invocations"]:
            del invocation["started"], invocation["ended"]
        summary["resumes"] = sum(i.kind == "resume" for i in soak.invocations)
        summary["terminations"] = sum(bool(i.sent) for i in soak.invocations)
        summary["faults"] = dict(sorted(nemesis.injected.items()))
        summary["shaping"] = sandbox.shaping
    for what, gone in sandbox.removed.items():
        if not gone:
            problems.append(f"the soak's {what} is still there")
    summary["seconds"] = round(time.monotonic() - started, 1)
    summary["problems"] = problems
    summary["ok"] = not problems
    (config.out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (config.out / "summary.txt").write_text(describe(summary))
    return summary


def describe(summary: dict[str, Any]) -> str:
    run = summary.get("run", {})
    lines = [
        f"soak seed {summary['seed']}, {summary['seconds']} s, releases {', '.join(summary['releases'])}: "
        + ("every check held" if summary["ok"] else f"{len(summary['problems'])} problems"),
        f"run {run.get('run_id')}: {run.get('status')}, {run.get('cases')} cases = {run.get('rows')} rows, "
        f"{run.get('lost')} lost, {run.get('duplicated_case_ids')} duplicated; "
        f"verdicts {run.get('verdicts')}",
        f"{len(summary['invocations'])} invocations ({summary['terminations']} sent SIGTERM, "
        f"{summary['resumes']} resumed), exits {[i['status'] for i in summary['invocations']]}; "
        f"{run.get('server_restarts')} server restarts listed",
        "faults: " + ", ".join(f"{name} {n}" for name, n in summary["faults"].items()),
        *(f"problem: {problem}" for problem in summary["problems"]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="where the run, its log and summary land")
    parser.add_argument("--duration", type=float, default=180.0, help="seconds (default 180)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--release", action="append", default=[], help=f"default {', '.join(RELEASES)}")
    parser.add_argument("--share", type=float, default=0.0, help="budgets as a share of the defaults")
    parser.add_argument("--cycle", type=float, default=0.0, help="seconds between SIGTERM and resume")
    parser.add_argument("--disk-mb", type=int, default=64, help="size of the tmpfs the run is written to")
    arguments = parser.parse_args(argv)
    config = SoakConfig(
        arguments.out.resolve(),
        duration=arguments.duration,
        seed=arguments.seed,
        releases=tuple(arguments.release) or RELEASES,
        share=arguments.share,
        cycle=arguments.cycle,
        disk_mb=arguments.disk_mb,
    )

    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)  # clean up as after Ctrl-C: campaign, tmpfs, namespace
    try:
        summary = run_soak(config)
    except SoakUnavailable as error:
        print(f"soak: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("soak: interrupted", file=sys.stderr)
        return 130
    sys.stdout.write(describe(summary))
    return 0 if summary["ok"] else 1
