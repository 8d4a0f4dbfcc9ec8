"""Signals to a command in each phase (importing, building a server, running a campaign), faults of the
server a campaign runs (killed, hung, unable to restart), a full disk, and what a killed run may still be
used for (baseline, gate). Every campaign runs the mapping family on the probes' release."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from nats_conformance.fixtures.provision import CACHE_ENV, cache_root
from nats_conformance.fixtures.session import RESTART_FAILED, RESTARTED
from nats_conformance.records.counts import run_tally
from nats_conformance.records.writer import run_status
from nats_conformance.reference.cli import DEFAULT_MAX_UNKNOWN, exit_status, too_many_unknown
from tests.probes.harness import RELEASE, Context, Failed, check, probe
from tests.probes.tools import (
    ENDLESS,
    Done,
    Launched,
    accounted,
    campaign,
    command,
    launch,
    manifest,
    one_line_error,
    one_run,
    recorded,
    run,
    run_dirs,
    session_pids,
    signal_ending,
    wait_for,
)

DEADLINE = "2.0"
"""NATS_CONFORMANCE_DEADLINE of the fault probes: a hung server is given up on after 2 s, not 30."""
PROGRESS = re.compile(r"mapping: (\d+) cases")


def _progress(launched: Launched) -> int:
    """The cases the campaign's last progress line counts (judged cases)."""
    counts = [int(n) for n in PROGRESS.findall(launched.stderr)]
    return max(counts, default=0)


def recording(launched: Launched, out: Path, cases: int = 1, timeout: float = 240.0) -> int:
    """Wait until the campaign's journal counts at least `cases` cases and it runs a server."""

    def ready() -> int:
        launched.alive()
        return recorded(out) if recorded(out) >= cases and launched.servers() else 0

    return wait_for(ready, f"a campaign recording {cases} cases", timeout=timeout)


def nothing_left(launched: Launched, line: str) -> str:
    left = launched.left()
    check(not left, f"{line}; but its processes are left: {', '.join(left[:4])}")
    return line


def agrees_with_records(status: int, run_dir: Path) -> None:
    """A completed campaign's exit status is the one its records say (README, Exit statuses)."""
    tally = run_tally(run_dir)
    wanted = exit_status(
        diverged=bool(tally["diverge"]), unknown=too_many_unknown(tally, DEFAULT_MAX_UNKNOWN)
    )
    check(status == wanted, f"exit {status} where its records say {wanted}")


# -- signals while the command loads --------------------------------------------------------------------

IMPORT_OFFSETS = (0.0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.4)
"""Seconds after `nats-conformance` calls its `main` at which the signal is sent: the command's modules
load in its first half second or so from bytecode (`./dev setup` compiles it; about two seconds when
every module is compiled as it loads); at 1.0 s a campaign had begun its first family. Before `main`
the interpreter starts (site-packages and their .pth files, tens of milliseconds on a busy machine) and
the console script imports `nats_conformance` (the standard library only): a signal there meets
Python's own default handling, a traceback for SIGINT and death by the signal for SIGTERM, which `main`
cannot change (the first run of this harness met it at 0.05 s after the start under load)."""
STARTED = "import sys; from nats_conformance import main; open({marker!r}, 'w').close(); sys.exit(main())"
"""The console script (`tools.MAIN`), which says that it calls `main` by creating a file."""


def _started(launched: Launched, marker: Path) -> bool:
    return launched.alive() and marker.exists()


def _during_import(context: Context, sent: signal.Signals) -> str:
    endings = []
    for number, offset in enumerate(IMPORT_OFFSETS):
        out = context.work(f"out-{number}")
        marker = context.work() / f"started-{number}"
        argv = campaign(out, *ENDLESS)
        argv[2] = STARTED.format(marker=str(marker))
        launched = launch(context, argv, f"command-{number}")
        wait_for(partial(_started, launched, marker), "the console script calling main", every=0.001)
        time.sleep(offset)
        launched.send(sent)
        status = launched.wait()
        line = signal_ending(status, launched.stderr, sent)
        if not run_dirs(out):  # still loading: a run that began may say how its first family ended
            lines = launched.stderr.splitlines()
            check(len(lines) == 1, f"at {offset} s: {len(lines)} lines on stderr: {lines[:3]}")
        nothing_left(launched, line)
        endings.append(status)
    moments = ", ".join(map(str, IMPORT_OFFSETS))
    return f"{sent.name} at {moments} s into main: exits {sorted(set(endings))}, one line each"


@probe(
    "sigint-during-import",
    "signals",
    "Ctrl-C in the first 0.4 s of nats-conformance campaign, from the call of its main, while its "
    "modules load (8 moments)",
    "exit 130 and only 'nats-conformance: interrupted' on stderr (before a run began; after, its first "
    "family's line too), no traceback, nothing left running",
)
def sigint_during_import(context: Context) -> str:
    return _during_import(context, signal.SIGINT)


@probe(
    "sigterm-during-import",
    "signals",
    "SIGTERM in the first 0.4 s of nats-conformance campaign, from the call of its main (8 moments)",
    "exit 143 and only 'nats-conformance: terminated' on stderr (before a run began; after, its first "
    "family's line too), no traceback, nothing left running",
)
def sigterm_during_import(context: Context) -> str:
    return _during_import(context, signal.SIGTERM)


# -- signals while a server is built ---------------------------------------------------------------------


def _builds(launched: Launched) -> bool:
    """Whether the Go toolchain runs in the command's session (the build has begun)."""
    launched.alive()
    return any(
        Path(f"/proc/{pid}/exe").resolve().name in ("go", "compile", "link") for pid in _pids(launched)
    )


def _pids(launched: Launched) -> list[int]:
    pids = []
    for pid in session_pids(launched.pid):
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/exe").resolve()
            pids.append(pid)
    return pids


def _cache_left(cache: Path) -> list[str]:
    """What a build left in a server cache: lock files, and folders without a binary."""
    found = [str(path.relative_to(cache)) for path in cache.rglob(".lock")]
    found += [
        str(path.relative_to(cache))
        for path in cache.glob("nats-server/*")
        if path.is_dir() and not (path / "nats-server").exists()
    ]
    return found


def _build_interrupted(context: Context, sent: signal.Signals) -> str:
    cache = context.work("cache")
    launched = launch(context, command("provision", RELEASE), **{CACHE_ENV: str(cache)})
    wait_for(lambda: _builds(launched), "a go build", timeout=120, every=0.05)
    time.sleep(0.5)
    launched.alive()
    launched.send(sent)
    status = launched.wait()
    line = signal_ending(status, launched.stderr, sent, allowed="nats-conformance: building")
    left = _cache_left(cache)
    check(not left, f"{line}; but the cache holds {', '.join(left)}")
    return nothing_left(launched, f"{line}; no go process, no .lock, no partial build left")


@probe(
    "sigint-during-provision",
    "build",
    "Ctrl-C while nats-conformance provision builds a release (a fresh server cache)",
    "exit 130 and one line, the go build stopped, no .lock or half-built folder in the cache",
)
def sigint_during_provision(context: Context) -> str:
    return _build_interrupted(context, signal.SIGINT)


@probe(
    "sigterm-during-provision",
    "build",
    "SIGTERM while nats-conformance provision builds a release (a fresh server cache)",
    "exit 143 and one line, the go build stopped, no .lock or half-built folder in the cache",
)
def sigterm_during_provision(context: Context) -> str:
    return _build_interrupted(context, signal.SIGTERM)


@probe(
    "failed-build-no-lock",
    "build",
    "nats-conformance provision 2.14.99 (a release the Go module proxy does not serve)",
    "one error line, exit 2, and no .lock or empty folder left in the server cache",
)
def failed_build_no_lock(context: Context) -> str:
    cache = context.work("cache")
    line = one_line_error(run(command("provision", "2.14.99"), extra={CACHE_ENV: str(cache)}), says="2.14.99")
    left = _cache_left(cache)
    check(not left, f"{line}; but the cache holds {', '.join(left)}")
    return f"{line}; cache clean"


# -- signals during a campaign ----------------------------------------------------------------------------


def _campaign_signalled(context: Context, sent: signal.Signals) -> str:
    out = context.work("out")
    launched = launch(context, campaign(out, *ENDLESS))
    recording(launched, out)
    launched.send(sent)
    status = launched.wait()
    line = signal_ending(status, launched.stderr, sent)
    run_dir = one_run(out)
    counts, _ = accounted(run_dir, status="interrupted")
    check(
        manifest(run_dir).get("signal") == sent.name, f"the journal names {manifest(run_dir).get('signal')}"
    )
    return nothing_left(launched, f"{line}; {counts}, signal {sent.name} journaled; no server left")


@probe(
    "sigint-during-campaign",
    "signals",
    "Ctrl-C during a campaign, once it has recorded cases",
    "exit 130, one line; journal interrupted (SIGINT), cases = rows, no duplicate; no server left",
)
def sigint_during_campaign(context: Context) -> str:
    return _campaign_signalled(context, signal.SIGINT)


@probe(
    "sigterm-during-campaign",
    "signals",
    "SIGTERM during a campaign, once it has recorded cases",
    "exit 143, one line; journal interrupted (SIGTERM), cases = rows, no duplicate; no server left",
)
def sigterm_during_campaign(context: Context) -> str:
    return _campaign_signalled(context, signal.SIGTERM)


@probe(
    "sighup-during-campaign",
    "signals",
    "SIGHUP during a campaign (its terminal closed), once it has recorded cases",
    "exit 129, 'nats-conformance: hung up'; journal interrupted (SIGHUP), cases = rows; no server left",
)
def sighup_during_campaign(context: Context) -> str:
    return _campaign_signalled(context, signal.SIGHUP)


def _server_workdir(launched: Launched) -> Path:
    (server,) = launched.servers()
    argv = Path(f"/proc/{server}/cmdline").read_bytes().split(b"\0")
    return Path(argv[argv.index(b"-c") + 1].decode()).parent


def _killed_run(context: Context, directory: Path) -> dict[str, Any]:
    out = directory / "out"
    launched = Launched(campaign(out, *ENDLESS), directory / "command")
    context.cleanup.callback(launched.kill_session)
    recording(launched, out, cases=2_000)
    workdir = _server_workdir(launched)
    launched.send(signal.SIGKILL)
    launched.wait()
    return {"run_dir": one_run(out), "workdir": workdir, "left": launched.left()}


def killed_run(context: Context) -> dict[str, Any]:
    """A campaign killed with SIGKILL once it recorded 2,000 cases: its run directory, the work directory
    its server had, and what of its session was left."""
    return dict(context.once("killed-run", lambda directory: _killed_run(context, directory)))


@probe(
    "sigkill-during-campaign",
    "signals",
    "SIGKILL of a campaign, then another campaign into another --out",
    "the journal reads killed, cases = rows, no duplicate, its server died with it; the next run "
    "removes the work directory it left",
)
def sigkill_during_campaign(context: Context) -> str:
    killed = killed_run(context)
    run_dir, workdir = killed["run_dir"], killed["workdir"]
    check(not killed["left"], f"processes left after SIGKILL: {killed['left']}")
    state = run_status(manifest(run_dir))
    check(state == "killed", f"the killed run reads {state}")
    counts, _ = accounted(run_dir)
    check(workdir.is_dir(), f"{counts}; the server's work directory {workdir} is already gone")
    done = run(campaign(context.work("next"), "--family", "mapping", "--cases", "200"))
    check(done.status in (0, 1), f"the next campaign: exit {done.status}: {done.last[:200]}")
    check(not workdir.exists(), f"{counts}; the next run left {workdir}")
    return f"{counts}; server gone; the next run removed {workdir.name}"


@probe(
    "baseline-killed-run-refused",
    "signals",
    "baseline RUN --out FILE of the run SIGKILL ended",
    "one error line saying the run is incomplete (killed), exit 2, no file written",
)
def baseline_killed_run_refused(context: Context) -> str:
    run_dir = killed_run(context)["run_dir"]
    written = context.work() / "baseline.json"
    line = one_line_error(run(command("baseline", str(run_dir), "--out", str(written))), says="incomplete")
    check(not written.exists(), f"{line}; but {written} was written")
    return line


def _allowed_baseline(context: Context, run_dir: Path) -> tuple[Path, Any]:
    import json

    written = context.work() / "baseline.json"
    done = run(command("baseline", str(run_dir), "--out", str(written), "--allow-incomplete"))
    check(done.status == 0, f"baseline --allow-incomplete: exit {done.status}: {done.last[:200]}")
    return written, json.loads(written.read_text())


@probe(
    "baseline-allow-incomplete-marks",
    "signals",
    "baseline RUN --out FILE --allow-incomplete of the run SIGKILL ended",
    "exit 0 and the file names the run in 'incomplete'",
)
def baseline_allow_incomplete_marks(context: Context) -> str:
    run_dir = killed_run(context)["run_dir"]
    written, document = _allowed_baseline(context, run_dir)
    check(document.get("incomplete") == [run_dir.name], f"incomplete: {document.get('incomplete')}")
    return f"exit 0; {written.name} says incomplete: [{run_dir.name}]"


@probe(
    "gate-killed-run-refused",
    "signals",
    "gate RUN --baseline FILE of the run SIGKILL ended",
    "one error line saying the run is incomplete (killed), exit 2, no verdict line",
)
def gate_killed_run_refused(context: Context) -> str:
    run_dir = killed_run(context)["run_dir"]
    written, _ = _allowed_baseline(context, run_dir)
    done = run(command("gate", str(run_dir), "--baseline", str(written)))
    return one_line_error(done, says="incomplete")


# -- faults of the server ---------------------------------------------------------------------------------


@probe(
    "sigkill-while-server-stopped",
    "server",
    "SIGSTOP the campaign's nats-server, then SIGKILL the campaign 6 s later",
    "every case a progress line counted before the stop is on disk; cases = rows, no duplicate; the "
    "stopped server is gone",
)
def sigkill_while_server_stopped(context: Context) -> str:
    out = context.work("out")
    launched = launch(context, campaign(out, *ENDLESS))
    recording(launched, out, cases=2_000)
    (server,) = launched.servers()
    os.kill(server, signal.SIGSTOP)
    judged = _progress(launched)
    time.sleep(6.0)
    launched.send(signal.SIGKILL)
    launched.wait()
    counts, checked = accounted(one_run(out))
    check(checked["rows"] >= judged, f"{counts}; but {judged:,} cases were judged before the stop")
    return nothing_left(launched, f"{judged:,} judged before the stop; {counts}; server gone")


def faulted_campaign(context: Context, directory: Path, fault: signal.Signals) -> dict[str, Any]:
    out = directory / "out"
    launched = Launched(
        campaign(out, "--family", "mapping", "--cases", "48000"),
        directory / "command",
        {"NATS_CONFORMANCE_DEADLINE": DEADLINE},
    )
    context.cleanup.callback(launched.kill_session)
    recording(launched, out, cases=1_000)
    (server,) = launched.servers()
    os.kill(server, fault)
    status = launched.wait(timeout=300)
    return {"status": status, "run_dir": one_run(out), "stderr": launched.stderr, "left": launched.left()}


def _restarted(context: Context, fault: signal.Signals) -> str:
    faulted = context.once(f"server-{fault.name}", lambda d: faulted_campaign(context, d, fault))
    status, run_dir = faulted["status"], faulted["run_dir"]
    check("Traceback" not in faulted["stderr"], "a traceback on stderr")
    counts, _ = accounted(run_dir, status="completed")
    agrees_with_records(status, run_dir)
    restarts = manifest(run_dir).get("restarts", [])
    check(
        restarts and all(r["reason"].startswith(RESTARTED) for r in restarts),
        f"{counts}; restarts listed: {restarts}",
    )
    check(not faulted["left"], f"processes left: {faulted['left']}")
    return f"exit {status}; {counts}; {len(restarts)} restart listed: {restarts[0]['reason'][:80]}"


@probe(
    "server-sigkill-restarted",
    "server",
    "SIGKILL the nats-server of a 48,000-case campaign in its middle",
    "the campaign restarts it and completes; the restart is in the manifest; cases = rows; its exit "
    "status is the one its records say",
)
def server_sigkill_restarted(context: Context) -> str:
    return _restarted(context, signal.SIGKILL)


@probe(
    "server-sigstop-restarted",
    "server",
    "SIGSTOP (hang) the nats-server of a 48,000-case campaign in its middle, never SIGCONT",
    "the campaign gives up on it, starts another and completes; the restart is listed; cases = rows; the "
    "stopped server is not left",
)
def server_sigstop_restarted(context: Context) -> str:
    return _restarted(context, signal.SIGSTOP)


SILENT_ADAPTER = """import json, sys
from nats_conformance.reference.adapter import handle_line
print(json.dumps(handle_line(sys.stdin.buffer.readline())), flush=True)
"""
"""An adapter that answers its hello and then no question (every question it is asked is unknown)."""


@probe(
    "gate-exit-3-no-passed-line",
    "reports",
    "gate RUN --baseline FILE of a run whose cases are mostly unknown (an adapter that stopped answering)",
    "exit 3 with the over-unknown line, and no 'gate passed' line",
)
def gate_exit_3_no_passed_line(context: Context) -> str:
    silent = context.work() / "silent.py"
    silent.write_text(SILENT_ADAPTER)
    out = context.work("out")
    target = f"adapter:{sys.executable} {silent}"
    made = run(
        command("campaign", "--target", target, "--cases", "50", "--max-unknown", "100%", "--out", str(out))
    )
    check(made.status == 0, f"the campaign: exit {made.status}: {made.last[:200]}")
    run_dir = one_run(out)
    unknown = run_tally(run_dir)["unknown"]
    baseline = context.work() / "baseline.json"
    made = run(command("baseline", str(run_dir), "--out", str(baseline)))
    check(made.status == 0, f"baseline: exit {made.status}: {made.last[:200]}")
    done = run(command("gate", str(run_dir), "--baseline", str(baseline)))
    printed = done.stdout + done.stderr
    check("Traceback" not in printed, "a traceback")
    check(done.status == 3, f"exit {done.status}: {printed.strip().splitlines()[-1:]}")
    check("gate passed" not in printed, f"exit 3 but it printed: {printed.strip().splitlines()[:2]}")
    said = [line for line in printed.splitlines() if "unknown" in line]
    check(said, f"exit 3 with no line about unknown cases: {printed[:200]!r}")
    return f"exit 3 ({unknown} unknown cases): {said[0][:140]}"


def _wrapper(directory: Path) -> Path:
    """A `nats-server` that runs the real binary the first time, and fails every later start."""
    real = cache_root() / "nats-server" / RELEASE / "nats-server"
    marker = directory / "started"
    wrapper = directory / "nats-server"
    wrapper.write_text(
        f'#!/bin/sh\nif [ -e "{marker}" ]; then\n'
        '  echo "nats-server: config broken by the operator" >&2; exit 1\nfi\n'
        f': > "{marker}"\nexec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


@probe(
    "failed-restart-listed",
    "server",
    "SIGKILL the server of a campaign whose binary can no longer start (every restart fails)",
    "the run ends with one error line (exit 2), the failed restart is in the manifest's restarts, "
    "cases = rows",
)
def failed_restart_listed(context: Context) -> str:
    out = context.work("out")
    wrapper = _wrapper(context.work("bin"))
    argv = command("campaign", "--server-version", str(wrapper), "--backend", "process", "--out", str(out))
    launched = launch(context, [*argv, *ENDLESS], NATS_CONFORMANCE_DEADLINE=DEADLINE)
    recording(launched, out, cases=1_000)
    (server,) = launched.servers()
    os.kill(server, signal.SIGKILL)
    status = launched.wait(timeout=240)
    line = one_line_error(Done(status, "", launched.stderr, 0.0))
    run_dir = one_run(out)
    counts, _ = accounted(run_dir)
    failed = [r for r in manifest(run_dir).get("restarts", []) if r["reason"].startswith(RESTART_FAILED)]
    check(failed, f"{line}; {counts}; no failed restart listed: {manifest(run_dir).get('restarts')}")
    return nothing_left(launched, f"{line[:90]}; {counts}; listed: {failed[0]['reason'][:70]}")


@probe(
    "servers-bind-loopback",
    "server",
    "look at the listening sockets of a running campaign (ss -tlnp), then SIGTERM it",
    "every socket its session listens on is bound to 127.0.0.1; exit 143",
)
def servers_bind_loopback(context: Context) -> str:
    out = context.work("out")
    launched = launch(context, campaign(out, *ENDLESS))
    recording(launched, out)
    pids = set(session_pids(launched.pid))
    listening = subprocess.run(["ss", "-Htlnp"], capture_output=True, text=True, check=True).stdout
    mine = [line.split()[3] for line in listening.splitlines() if any(f"pid={pid}," in line for pid in pids)]
    check(mine, "the campaign's session listens on no socket")
    wide = [address for address in mine if not address.startswith("127.0.0.1:")]
    check(not wide, f"bound beyond loopback: {', '.join(wide)}")
    launched.send(signal.SIGTERM)
    line = signal_ending(launched.wait(), launched.stderr, signal.SIGTERM)
    return nothing_left(launched, f"{len(mine)} sockets, all 127.0.0.1 ({', '.join(mine[:3])}); {line}")


# -- a full disk --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(directory: Path, megabytes: int) -> Any:
    directory.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(directory)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode:
        raise Failed(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True, check=False)


FULL_DISK_SECONDS = 60.0
"""How long a campaign may run on once its disk is full (parts the timer hands over fail within 2 s; it
ran on for 150 s, judging and losing 96,912 cases, when only a full buffer settled their failures)."""


def _fill(disk: Path) -> int:
    """Fill the disk up (as another process writing there would); the bytes written."""
    written = 0
    with contextlib.suppress(OSError), (disk / "filler").open("wb", buffering=0) as filler:
        while True:
            written += filler.write(bytes(65536))
    return written


@probe(
    "disk-full-campaign",
    "disk",
    "a campaign whose --out is a 16 MB tmpfs, filled up by another writer once the campaign records cases",
    "one error line (exit 2) within a minute; the manifest reads crashed and cases = rows + lost (lost > 0), "
    "no duplicate",
)
def disk_full_campaign(context: Context) -> str:
    with _tmpfs(context.work("disk"), 16) as disk:
        out = disk / "runs"
        launched = launch(context, campaign(out, *ENDLESS))
        recording(launched, out, cases=2_000)
        _fill(disk)
        filled = time.monotonic()
        status = launched.wait(timeout=300)
        took = time.monotonic() - filled
        line = one_line_error(Done(status, "", launched.stderr, 0.0), says="No space left on device")
        counts, checked = accounted(one_run(out), status="crashed")
        check(checked["lost"] > 0, f"{line}; {counts}: nothing counted as lost")
        check(took < FULL_DISK_SECONDS, f"{counts}; but it ran on {took:.0f} s after the disk was full")
        return nothing_left(launched, f"ended {took:.1f} s after the disk filled: {line[:90]}; {counts}")


@probe(
    "strict-single-family",
    "server",
    "campaign --family mapping --cases 2000 --strict (expectations other families show are not stale)",
    "exit 0, nothing called stale",
)
def strict_single_family(context: Context) -> str:
    out = context.work("out")
    done = run(campaign(out, "--family", "mapping", "--cases", "2000", "--strict"))
    printed = done.stdout + done.stderr
    stale = [line for line in printed.splitlines() if "stale" in line.lower()]
    check(done.status == 0 and not stale, f"exit {done.status}; {stale[:2] or done.last[:200]}")
    counts, _ = accounted(one_run(out), status="completed")
    return f"exit 0, no stale entry; {counts}"
