"""What the probes share: running `nats-conformance` as a user does (its exit status and the lines it
printed), a command left running in a session of its own (its processes, its signals), waiting on a
condition with a generous deadline, and the accounting of a run directory (`tests.soak.soak.check_run`:
one verdict per case id, the manifest's counts equal to the rows on disk)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from nats_conformance.records.writer import MANIFEST, run_status
from nats_conformance.reference.errors import ENDINGS
from nats_conformance.suites.engine.progress import SECONDS_ENV
from tests.probes.harness import ROOT, Failed, check
from tests.soak.soak import HALF_WRITTEN, check_run, last_line

MAIN = "import sys; from nats_conformance import main; sys.exit(main())"
"""`nats-conformance` as its console script runs it, on this checkout's code."""
ERROR = "nats-conformance: error: "
T = TypeVar("T")


def command(*argv: str) -> list[str]:
    """The argv of `nats-conformance ARGV...`."""
    return [sys.executable, "-c", MAIN, *argv]


def module(name: str, *argv: str) -> list[str]:
    """The argv of `python -m nats_conformance.NAME ARGV...`."""
    return [sys.executable, "-m", f"nats_conformance.{name}", *argv]


def environment(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "SPARK_LOCAL_IP": "127.0.0.1",
        SECONDS_ENV: "0.5",
        **extra,
    }


@dataclass(slots=True)
class Done:
    status: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def last(self) -> str:
        return last_line(self.stderr)


def run(argv: Sequence[str], timeout: float = 300.0, extra: dict[str, str] | None = None) -> Done:
    """Run a command to its end (with `extra` in its environment); its status, output and wall time."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            list(argv),
            cwd=ROOT,
            env=environment(**(extra or {})),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        raise Failed(f"still running after {timeout:.0f} s: {' '.join(argv[3:])}") from expired
    return Done(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def one_line_error(done: Done, *, status: int = 2, says: str = "") -> str:
    """Check the bad-input contract: exit `status`, one `nats-conformance: error: ...` line, the last
    on stderr (progress lines may come before it), no traceback, nothing on stdout; the line."""
    errors = [line for line in done.stderr.splitlines() if ERROR in line]
    check("Traceback" not in done.stderr, f"exit {done.status} with a traceback: {done.stderr[-300:]!r}")
    check(
        done.status == status and len(errors) == 1 and done.last.startswith(ERROR),
        f"exit {done.status}, {len(errors)} error lines, last line {done.last[:200]!r}",
    )
    check(not done.stdout.strip(), f"exit {status} but stdout holds {done.stdout[:200]!r}")
    check(says in done.last, f"the line does not say {says!r}: {done.last[:200]!r}")
    return f"exit {done.status}: {done.last[:160]}"


def signal_ending(status: int | None, stderr: str, sent: signal.Signals, *, allowed: str = "") -> str:
    """Check the interrupt contract: the exit status of `sent` (130, 143, 129) and its one line last on
    stderr, no traceback; other lines only progress lines (starting with `allowed`, if given)."""
    wanted, line = ENDINGS[sent.name]
    check("Traceback" not in stderr, f"{sent.name}: a traceback on stderr: {stderr[-300:]!r}")
    check(
        status == wanted and last_line(stderr) == f"nats-conformance: {line}",
        f"{sent.name}: exit {status}, last line {last_line(stderr)[:200]!r}",
    )
    if allowed:
        other = [x for x in stderr.splitlines()[:-1] if x.strip() and not x.startswith(allowed)]
        check(not other, f"{sent.name}: {len(other)} lines besides the one line: {other[:2]}")
    return f"{sent.name}: exit {status}, 'nats-conformance: {line}'"


def wait_for(condition: Callable[[], T], what: str, timeout: float = 120.0, every: float = 0.1) -> T:
    """`condition()` once it is true; `Failed` when it is not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failed(f"{what}: not within {timeout:.0f} s")
        time.sleep(every)


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return []


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def session_pids(session: int) -> list[int]:
    """The live (not zombie) processes of session `session`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if len(fields) > 4 and fields[0] != "Z" and fields[3] == str(session):
                found.append(int(entry.name))
    return found


def children(pid: int) -> list[int]:
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and fields[1] == str(pid)
    ]


@dataclass
class Launched:
    """A command started in a session of its own, its output in files (a JVM it leaves would hold a
    pipe open), killed with its whole session when the probe is over."""

    argv: list[str]
    directory: Path
    extra: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] = field(init=False)
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / "stdout").open("wb") as out, (self.directory / "stderr").open("wb") as err:
            self.process = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=environment(**self.extra),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def stderr(self) -> str:
        return (self.directory / "stderr").read_text(errors="replace")

    @property
    def stdout(self) -> str:
        return (self.directory / "stdout").read_text(errors="replace")

    def send(self, sent: signal.Signals) -> None:
        self.process.send_signal(sent)

    def wait(self, timeout: float = 180.0) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            raise Failed(f"still running {timeout:.0f} s after it was told to end") from expired

    def running(self) -> bool:
        return self.process.poll() is None

    def alive(self) -> bool:
        """True; `Failed` when the command has already ended (it was to run until the probe acted)."""
        if self.process.poll() is not None:
            raise Failed(f"ended early, exit {self.process.returncode}: {last_line(self.stderr)[:200]}")
        return True

    def servers(self) -> list[int]:
        """The nats-server processes of its session that run (not stopped)."""
        return [
            pid for pid in session_pids(self.pid) if comm(pid) == "nats-server" and _stat(pid)[:1] != ["T"]
        ]

    def left(self, grace: float = 30.0) -> list[str]:
        """What of its session still runs `grace` seconds after it ended (as `PID COMM`)."""
        deadline = time.monotonic() + grace
        while (pids := session_pids(self.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return [f"{pid} {comm(pid)}" for pid in pids]

    def kill_session(self) -> None:
        for pid in session_pids(self.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def launch(context: Any, argv: list[str], name: str = "command", **extra: str) -> Launched:
    """`argv` started in a session of its own, cleaned up when the harness ends at the latest."""
    launched = Launched(argv, context.work(name), extra)
    context.cleanup.callback(launched.kill_session)
    return launched


def manifest(run_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((run_dir / MANIFEST).read_text()))
    except (OSError, ValueError):
        return {}


def run_dirs(out: Path) -> list[Path]:
    return sorted(path.parent for path in out.glob(f"*/{MANIFEST}"))


def recorded(out: Path) -> int:
    """The cases the journal of the (first) run under `out` counts so far."""
    found = run_dirs(out)
    return int(manifest(found[0]).get("cases", 0)) if found else 0


LAGGING = ("the manifest counts ", "the manifest's counts by feature", HALF_WRITTEN)
"""The problems of `check_run` that a SIGKILLed driver leaves: its manifest does not count the rows its
tasks wrote after it, and a task killed with it may leave the part it was writing (its resumed attempt
removes it)."""


def accounted(
    run_dir: Path, *, status: str | None = None, driver_killed: bool = False
) -> tuple[str, dict[str, Any]]:
    """Check the run's accounting (`check_run`): every case id once on disk, the manifest's counts equal
    to the rows (cases = rows + lost), and its status `status` if given; a line of evidence and the
    counts. `driver_killed`: the driver of a scaled-out run was SIGKILLed, and its tasks may record
    until Spark ends them, after its last manifest: each task's journal must count its own parts, and the
    manifest at most the rows."""
    checked = check_run(run_dir)
    problems = checked["problems"]
    lag = ""
    if driver_killed and (run_dir / "tasks").is_dir():
        problems = [p for p in problems if not p.startswith(LAGGING)]
        check(checked["cases"] <= checked["rows"], f"{run_dir.name}: the manifest counts more than the rows")
        if checked["cases"] < checked["rows"]:
            lag = f" (the killed driver's manifest: {checked['cases']:,}; every task journal = its parts)"
            checked["cases"] = checked["rows"] + checked["lost"]
    check(not problems, f"{run_dir.name}: {'; '.join(problems)[:300]}")
    check(checked["cases"] > 0, f"{run_dir.name}: no case recorded")
    state = run_status(manifest(run_dir))  # `killed` for a run still `running` whose process is gone
    if status is not None:
        check(state == status, f"{run_dir.name} is journaled {state}, not {status}")
    lost = f" + {checked['lost']} lost" if checked["lost"] else ""
    line = (
        f"{state}, {checked['cases']:,} cases = {checked['rows']:,} rows{lost}, "
        f"{checked['duplicated_case_ids']} duplicated{lag}"
    )
    return line, checked


def one_run(out: Path) -> Path:
    found = run_dirs(out)
    check(len(found) == 1, f"{len(found)} run directories under {out}")
    return found[0]


CAMPAIGN = ("campaign", "--server-version")


def campaign(out: Path, *options: str, release: str = "") -> list[str]:
    """`nats-conformance campaign` of the probes' release (or `release`) into `out`, with `options`."""
    from tests.probes.harness import RELEASE

    return command(*CAMPAIGN, release or RELEASE, "--backend", "process", "--out", str(out), *options)


ENDLESS = ("--family", "mapping", "--cases", "100000000")
"""A mapping campaign far longer than any probe."""
