"""Which process owns a run, a container or a directory: an identity that survives pid reuse (Linux).

Work directories (`make_workdir`: the servers', a Spark session's scratch) each name their owner, and the
first one a process makes removes those whose owner is gone (a process killed with SIGKILL cannot remove
its own), as `fixtures.servers.container.remove_leftover_containers` does for containers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nats_conformance.reference.errors import ConformanceError


def stat_fields(path: str) -> list[str]:
    """The fields of a /proc `stat` file after the command name (which may hold spaces): the state first.

    Raises:
        OSError: the process (or thread) is gone.
    """
    return Path(path).read_text().rsplit(")", 1)[-1].split()


def _process_start_time(pid: int, *, running: bool = False) -> str | None:
    """The kernel's start time of `pid` (field 22 of /proc/PID/stat), None if it does not exist (with
    `running`, also when it has ended and waits to be reaped: a zombie, state Z, or dead, X)."""
    try:
        fields = stat_fields(f"/proc/{pid}/stat")
    except OSError:
        return None
    if running and fields[0] in ("Z", "X"):
        return None
    return fields[19]


def children(pid: int | None = None) -> set[int]:
    """The pids whose parent is `pid` (this process by default), read from /proc (Linux)."""
    pid = os.getpid() if pid is None else pid
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_fields(str(stat))
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def process_identity(pid: int | None = None) -> str:
    """`PID:START`: names one process for good, even after its pid is reused (Linux)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_process_start_time(pid) or '?'}"


def is_process_alive(identity: str) -> bool:
    """True while the process named by `process_identity()` output still runs. One that has ended is not
    running while its parent has yet to reap it (an orphan whose new parent never reaps, as a container's
    first process may not, stays a zombie for good)."""
    pid_text, _, start = identity.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    current = _process_start_time(pid, running=True)
    return current is not None and (start in ("", "?") or current == start)


def kill_process(identity: str) -> None:
    """SIGKILL the process named by `process_identity()` output, if it still runs: the signal goes
    through a pidfd opened before the identity is checked, so a reused pid is never hit. Never this
    process."""
    pid_text, _, start = identity.partition(":")
    try:
        descriptor = os.pidfd_open(int(pid_text))
    except (ValueError, OSError):
        return
    try:
        if _process_start_time(int(pid_text)) == start and int(pid_text) != os.getpid():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(descriptor, signal.SIGKILL)
    finally:
        os.close(descriptor)


WRITER_LOCK = ".writer.lock"


class RunLockedError(ConformanceError):
    """Another live process writes the run directory."""


@contextmanager
def sole_writer(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's writer lock (an exclusive `flock` of the directory itself, which the
    kernel releases when the process ends, however it ends) while a campaign writes the run, so two
    campaigns never write one run (two `--resume` of one run at once wrote its tasks twice). The holder's
    identity goes in `WRITER_LOCK` for the message of the next one, when the disk has room for it. A
    directory made here that holds nothing else at the end is removed.

    Raises:
        RunLockedError: a live process holds it.
    """
    made = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = (run_dir / WRITER_LOCK).read_text().partition(":")[0].strip() or "?"
            except OSError:
                holder = "?"
            raise RunLockedError(
                f"{run_dir} is being written by another campaign (process {holder}); wait for it to end"
            ) from None
        with contextlib.suppress(OSError):  # a full disk leaves the lock held and its holder unnamed
            (run_dir / WRITER_LOCK).write_text(process_identity())
        yield
    finally:
        os.close(descriptor)
        if made and {path.name for path in run_dir.glob("*")} <= {WRITER_LOCK}:
            shutil.rmtree(run_dir, ignore_errors=True)


PREFIX = "nats-conformance-"
OWNER = ".owner"
_SWEPT: set[bool] = set()
"""Holds True once this process has removed the leftovers of dead owners."""


def make_workdir(prefix: str = PREFIX) -> Path:
    """A new directory under the system's temporary directory, owned by this process."""
    if not _SWEPT:
        _SWEPT.add(True)
        remove_leftover_workdirs()
    path = Path(tempfile.mkdtemp(prefix=prefix))
    (path / OWNER).write_text(process_identity())
    return path


def remove_leftover_workdirs(root: Path | None = None) -> list[Path]:
    """Remove the work directories under `root` (the temporary directory) whose owner process is gone;
    the removed paths. A directory naming no owner is left alone."""
    removed = []
    for path in sorted((root or Path(tempfile.gettempdir())).glob(f"{PREFIX}*")):
        try:
            owner = (path / OWNER).read_text().strip()
        except OSError:
            continue
        if owner and not is_process_alive(owner):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
