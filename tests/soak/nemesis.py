"""The nemesis of the soak (Jepsen's word for the process that injects faults): a seeded thread that, at
random moments, SIGKILLs or SIGSTOPs (then SIGCONTs) the nats-server processes of the campaign it
watches, SIGKILLs a Spark task's Python worker, fills and frees the small file system the run is written
to, and delays loopback traffic in the soak's network namespace with `tc netem`. Every fault is one JSON
line in its log.

It touches only processes the soak started: a process is a target when it is in the campaign's session
(the campaign is started with a session of its own) and in the soak's network namespace, and it is
signalled through a pidfd opened before those checks, so a pid reused meanwhile is never hit.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

FAULTS: dict[str, int] = {
    "kill-server": 4,
    "stop-server": 3,
    "fill-disk": 1,
    "netem": 2,
    "kill-task": 1,
}
"""Each fault's weight in the nemesis's draw."""
MISS_SECONDS = 0.3
"""How soon the nemesis draws again when the fault it drew found nothing to hit."""
FILLER = ".nemesis-fill"
CHUNK = 1 << 20


@dataclass(slots=True)
class Watched:
    """What the nemesis acts on: the campaign's current session (0 between invocations), the network
    namespace's inode, the file system to fill and the run directory (once it exists)."""

    netns_inode: int
    disk: Path
    session: int = 0
    run_dir: Path | None = None


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def is_ours(pid: int, watched: Watched) -> bool:
    """True iff `pid` is in the watched campaign's session and in the soak's network namespace."""
    if not watched.session:
        return False
    try:
        return (
            os.getsid(pid) == watched.session and os.stat(f"/proc/{pid}/ns/net").st_ino == watched.netns_inode
        )
    except OSError:
        return False


def processes(name: str, watched: Watched) -> list[int]:
    """The pids named `name` (their `comm`) that are ours, in order."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _comm(int(entry.name)) == name and is_ours(int(entry.name), watched):
            found.append(int(entry.name))
    return sorted(found)


@contextlib.contextmanager
def pinned(pid: int, watched: Watched) -> Iterator[int | None]:
    """A pidfd of `pid` if it is (still) ours, else None; closed on exit."""
    try:
        descriptor = os.pidfd_open(pid)
    except OSError:
        yield None
        return
    try:
        yield descriptor if is_ours(pid, watched) else None
    finally:
        os.close(descriptor)


def running_tasks(run_dir: Path | None) -> dict[int, tuple[str, int]]:
    """The tasks whose journal says running, by their writer's pid: (task name, cases so far)."""
    found: dict[int, tuple[str, int]] = {}
    if run_dir is None:
        return found
    for path in sorted((run_dir / "tasks").glob("t*.json")):
        with contextlib.suppress(OSError, ValueError, KeyError):
            journal = json.loads(path.read_text())
            if journal.get("status") == "running":
                found[int(str(journal["owner"]).partition(":")[0])] = (path.stem, int(journal["cases"]))
    return found


@dataclass
class Nemesis:
    """The fault thread: `start()`, then `heal()` stops it and undoes every fault still in force."""

    watched: Watched
    seed: int
    log: TextIO
    netns: str
    shaping: str = "netem"
    """`netem`, or `tbf` where the kernel has no netem (`shaping_available`)."""
    started: float = field(default_factory=time.monotonic)
    interval: tuple[float, float] = (0.5, 3.0)
    injected: dict[str, int] = field(default_factory=dict)
    _rng: random.Random = field(init=False)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _later: list[tuple[float, str, Callable[[], None]]] = field(default_factory=list)
    _stopped: dict[int, int] = field(default_factory=dict)
    """SIGSTOPped pid -> its pidfd, until SIGCONT."""
    _filled: bool = False
    _delayed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def note(self, fault: str, **detail: Any) -> None:
        """One line of the log; faults (not their undoing) are counted in `injected`."""
        with self._lock:
            line = {"t": round(time.monotonic() - self.started, 3), "fault": fault, **detail}
            self.log.write(json.dumps(line, sort_keys=True) + "\n")
            self.log.flush()
            if fault in FAULTS or fault == "terminate-campaign":
                self.injected[fault] = self.injected.get(fault, 0) + 1

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        names = list(FAULTS)
        weights = [FAULTS[name] for name in names]
        next_fault = time.monotonic() + self._rng.uniform(*self.interval)
        while not self._stop.wait(0.1):
            now = time.monotonic()
            for item in [item for item in self._later if item[0] <= now]:
                self._later.remove(item)
                item[2]()
            if now >= next_fault:
                fault = self._rng.choices(names, weights)[0]
                try:
                    made = getattr(self, "_" + fault.replace("-", "_"))() is not False
                except OSError as error:  # a fault that could not be made is logged, never fatal
                    self.note("nothing", wanted=fault, why=str(error))
                    made = True
                # nothing to hit yet (no server or task running): another draw soon
                next_fault = now + (self._rng.uniform(*self.interval) if made else MISS_SECONDS)

    def _later_by(self, seconds: float, what: str, action: Callable[[], None]) -> None:
        self._later.append((time.monotonic() + seconds, what, action))

    def _pick(self, pids: list[int]) -> int | None:
        return self._rng.choice(pids) if pids else None

    def _kill_server(self) -> bool:
        pid = self._pick(processes("nats-server", self.watched))
        if pid is None:
            return False
        worker = _parent(pid)
        with pinned(pid, self.watched) as descriptor:
            if descriptor is None:
                return False
            signal.pidfd_send_signal(descriptor, signal.SIGKILL)
        task = running_tasks(self.watched.run_dir).get(worker)
        kill: dict[str, Any] = {"pid": pid, "worker": worker, "task": task[0] if task else ""}
        self.note("kill-server", **kill)
        return True

    def _stop_server(self) -> bool:
        pid = self._pick(processes("nats-server", self.watched))
        if pid is None:
            return False
        descriptor = os.pidfd_open(pid)
        if not is_ours(pid, self.watched):
            os.close(descriptor)
            return False
        signal.pidfd_send_signal(descriptor, signal.SIGSTOP)
        self._stopped[pid] = descriptor
        seconds = round(self._rng.uniform(0.5, 8.0), 2)
        self.note("stop-server", pid=pid, seconds=seconds)
        self._later_by(seconds, "cont", lambda: self._cont(pid))
        return True

    def _cont(self, pid: int) -> None:
        descriptor = self._stopped.pop(pid, None)
        if descriptor is None:
            return
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(descriptor, signal.SIGCONT)
        os.close(descriptor)
        self.note("cont-server", pid=pid)

    def _kill_task(self) -> bool:
        tasks = running_tasks(self.watched.run_dir)
        pid = self._pick([pid for pid in sorted(tasks) if _comm(pid).startswith("python")])
        if pid is None:
            return False
        with pinned(pid, self.watched) as descriptor:
            if descriptor is None:
                return False
            signal.pidfd_send_signal(descriptor, signal.SIGKILL)
        self.note("kill-task", pid=pid, task=tasks[pid][0])
        return True

    def _fill_disk(self) -> None:
        if self._filled:
            return
        self._filled = True
        written = 0
        descriptor = os.open(self.watched.disk / FILLER, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (CHUNK, 4096, 512):  # unbuffered: nothing is left to write when it closes
                with contextlib.suppress(OSError):
                    while True:
                        written += os.write(descriptor, bytes(size))
        finally:
            os.close(descriptor)
        seconds = round(self._rng.uniform(1.0, 6.0), 2)
        self.note("fill-disk", bytes=written, seconds=seconds)
        self._later_by(seconds, "free", self._free_disk)

    def _free_disk(self) -> None:
        if self._filled:
            (self.watched.disk / FILLER).unlink(missing_ok=True)
            self._filled = False
            self.note("free-disk")

    def _netem(self) -> None:
        if self._delayed and self._rng.random() < 0.5:
            self._clear_netem()
            return
        if self.shaping == "netem":
            delay, jitter = self._rng.randint(1, 20), self._rng.randint(0, 5)
            shape = ["netem", "delay", f"{delay}ms", f"{jitter}ms"]
        else:  # a kernel without sch_netem: a token bucket that queues loopback traffic instead
            rate = self._rng.choice([2, 8, 32])
            shape = ["tbf", "rate", f"{rate}mbit", "burst", "256kb", "latency", "500ms"]
        tc(self.netns, "qdisc", "replace", "dev", "lo", "root", *shape)
        self._delayed = True
        self.note("netem", qdisc=" ".join(shape))

    def _clear_netem(self) -> None:
        if self._delayed:
            tc(self.netns, "qdisc", "del", "dev", "lo", "root")
            self._delayed = False
            self.note("clear-netem")

    def heal(self) -> None:
        """Stop injecting, then undo what is in force: SIGCONT every stopped server, free the disk,
        remove the delay."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for pid in list(self._stopped):
            self._cont(pid)
        self._free_disk()
        with contextlib.suppress(OSError):
            self._clear_netem()
        self._later.clear()
        self.note("heal")


def tc(netns: str, *arguments: str) -> None:
    """`tc` inside the network namespace; a failure raises OSError with tc's message."""
    done = subprocess.run(
        ["ip", "netns", "exec", netns, "tc", *arguments], capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise OSError(f"tc {' '.join(arguments)}: {done.stderr.strip()}")


def shaping_available(netns: str) -> str:
    """`netem` when the kernel has it (delays), else `tbf` (a rate limit that queues), else ""."""
    for shape in (["netem", "delay", "1ms"], ["tbf", "rate", "8mbit", "burst", "256kb", "latency", "500ms"]):
        try:
            tc(netns, "qdisc", "replace", "dev", "lo", "root", *shape)
        except OSError:
            continue
        tc(netns, "qdisc", "del", "dev", "lo", "root")
        return shape[0]
    return ""
