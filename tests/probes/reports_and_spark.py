"""Signals during a report (DuckDB in the process, Spark local), faults in a sweep and in a campaign
scheduled on Spark followed by `--resume`, and the container backend under SIGTERM and SIGKILL (the
dockerd a campaign starts itself)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path

from nats_conformance.fixtures.provision import CACHE_ENV, cache_root
from nats_conformance.records.owners import is_process_alive, process_identity
from tests.probes.campaigns import agrees_with_records, faulted_campaign, nothing_left, recording
from tests.probes.harness import OLD_RELEASE, RELEASE, Context, check, probe
from tests.probes.tools import (
    ENDLESS,
    Launched,
    accounted,
    campaign,
    command,
    launch,
    manifest,
    module,
    one_run,
    recorded,
    run,
    session_pids,
    signal_ending,
    wait_for,
)
from tests.soak.nemesis import running_tasks

STOP_SECONDS = 8.0
"""How long a report may take to end once signalled (a Spark report once took 10.8 s)."""


def _report_run(context: Context) -> Path:
    """A completed 48,000-case run (the one whose server was killed), for the reports to read."""
    faulted = context.once("server-SIGKILL", lambda d: faulted_campaign(context, d, signal.SIGKILL))
    return Path(faulted["run_dir"])


def _report_signalled(context: Context, engine: str, sent: signal.Signals) -> str:
    run_dir = _report_run(context)
    out = context.work("report")
    argv = module("reports", "build", str(run_dir), "--out", str(out), "--engine", engine)
    launched = launch(context, [*argv, *(["--master", "local[2]"] if engine == "spark" else [])])
    if engine == "spark":
        # once Spark aggregates: its JVM and jobs run
        wait_for(
            lambda: launched.alive() and "aggregating with Spark" in launched.stderr, "Spark aggregating"
        )
        moment = "while Spark aggregates"
    else:
        # DuckDB's whole report takes a fraction of a second: the command is paused at its first progress
        # line, signalled, and continued, so that the signal lands inside the report
        wait_for(
            lambda: launched.alive() and "reports: [" in launched.stderr,
            "the report's first line",
            every=0.002,
        )
        launched.send(signal.SIGSTOP)
        check("wrote " not in launched.stderr, "the report was written before the signal could land")
        moment = f"at '{launched.stderr.splitlines()[-1][:60]}'"
    signalled = time.monotonic()
    launched.send(sent)
    launched.send(signal.SIGCONT)
    status = launched.wait(timeout=120)
    took = time.monotonic() - signalled
    line = signal_ending(status, launched.stderr, sent, allowed="reports: ")
    check(took < STOP_SECONDS, f"{line}; but it took {took:.1f} s to end")
    check(not (out / "report.html").exists(), f"{line}; but report.html was written")
    left = "no JVM left" if engine == "spark" else "nothing left"
    return nothing_left(launched, f"{moment}: {line}, after {took:.2f} s; {left}")


@probe(
    "sigint-during-report-duckdb",
    "reports",
    "Ctrl-C while nats-conformance report --engine duckdb computes the report",
    "exit 130 and its one line (besides 'reports:' progress lines), within 8 s, no report.html",
)
def sigint_during_report_duckdb(context: Context) -> str:
    return _report_signalled(context, "duckdb", signal.SIGINT)


@probe(
    "sigterm-during-report-duckdb",
    "reports",
    "SIGTERM while nats-conformance report --engine duckdb computes the report",
    "exit 143 and its one line (besides 'reports:' progress lines), within 8 s, no report.html",
)
def sigterm_during_report_duckdb(context: Context) -> str:
    return _report_signalled(context, "duckdb", signal.SIGTERM)


@probe(
    "sigint-during-report-spark",
    "spark",
    "Ctrl-C while a report on Spark (--master local[2]) aggregates",
    "exit 130 and its one line, no py4j/pyspark output, within 8 s, no JVM left",
)
def sigint_during_report_spark(context: Context) -> str:
    return _report_signalled(context, "spark", signal.SIGINT)


@probe(
    "sigterm-during-report-spark",
    "spark",
    "SIGTERM while a report on Spark (--master local[2]) aggregates",
    "exit 143 and its one line, no py4j/pyspark output, within 8 s, no JVM left",
)
def sigterm_during_report_spark(context: Context) -> str:
    return _report_signalled(context, "spark", signal.SIGTERM)


SITE_MOMENTS = 9
"""How many moments of a rewrite Ctrl-C is sent at: spread evenly from the command's start to the time
the first build of the site took, so that some land while the records are read and some while the
pages are written or just after."""
OLD_MARK = "<!-- the site before the rewrite -->"


def _pages(site: Path) -> dict[str, str]:
    return {str(path.relative_to(site)): path.read_text() for path in site.rglob("*") if path.is_file()}


@probe(
    "sigint-during-site-rewrite",
    "reports",
    "Ctrl-C at nine moments from the start of `site` rewriting an existing site to its end",
    "each time the folder holds the old site whole or the new one whole, never a mix nor an empty "
    "page, and nothing staged is left beside it",
)
def sigint_during_site_rewrite(context: Context) -> str:
    run_dir = _report_run(context)
    site = context.work("site-rewrite") / "site"
    argv = command("site", str(run_dir), "--out", str(site), "--engine", "duckdb")
    first = run(argv)
    check(first.status == 0, f"the first site was not built: {first.stderr[-300:]}")
    old = {name: text + OLD_MARK for name, text in _pages(site).items()}
    endings = Counter[str]()
    for moment in range(SITE_MOMENTS):
        offset = round(first.seconds * moment / (SITE_MOMENTS - 1), 2)
        for name, text in old.items():
            (site / name).write_text(text)
        launched = launch(context, argv, f"site-{moment}")
        time.sleep(offset)
        launched.send(signal.SIGINT)
        status = launched.wait(timeout=120)
        pages = _pages(site)
        marked = [name for name, text in pages.items() if OLD_MARK in text]
        if marked:
            check(pages == old, f"Ctrl-C at {offset} s (exit {status}): old pages mixed with new ones")
            endings["old"] += 1
        else:
            whole = set(pages) == set(old) and all(pages.values())  # the same runs: the same pages
            check(whole and status in (0, 130), f"Ctrl-C at {offset} s: new pages, not all, exit {status}")
            endings["new"] += 1
        staged = [path.name for path in site.parent.iterdir() if path.name != site.name]
        check(not staged, f"Ctrl-C at {offset} s left {', '.join(staged)} beside the site")
        nothing_left(launched, "site")
    spread = f"{SITE_MOMENTS} Ctrl-C from 0 to {first.seconds:.1f} s"
    return f"{spread}: {endings['old']} left the old site whole, {endings['new']} the new"


# -- sweeps and Spark-scheduled campaigns, faulted and resumed -------------------------------------------

SWEEP = ("campaign", "--since", "2.15.0", "--family", "mapping", "--cases", "36000")
"""A sweep of the releases from 2.15.0 on (three in the cache), one mapping task each."""


def _resumed(
    context: Context, launched: Launched, out: Path, what: str, *, killed: bool = False, temp: str = ""
) -> str:
    """Resume the run under `out` until it completes; its accounting (`killed`: its driver was). `temp`:
    the TMPDIR the killed run had, where the resume must remove the tasks' directory it left."""
    run_dir = one_run(out)
    nothing_left(launched, what)  # first: the tasks of a killed driver end with its JVM
    interrupted, _ = accounted(run_dir, driver_killed=killed)
    left = sorted(Path(temp).glob("nats-conformance-tasks-*")) if temp else []
    check(not temp or bool(left), "the SIGKILLed run left no tasks' directory to check the resume on")
    extra = {"TMPDIR": temp} if temp else {}
    resumed = launch(context, command("campaign", "--resume", str(run_dir)), "resume", **extra)
    status = resumed.wait(timeout=600)
    check("Traceback" not in resumed.stderr, "the resume printed a traceback")
    counts, _ = accounted(run_dir, status="completed")
    agrees_with_records(status, run_dir)
    restarts = len(manifest(run_dir).get("restarts", []))
    kept = [path.name for path in left if path.exists()]
    check(not kept, f"the killed run's tasks' directories are left after the resume: {', '.join(kept)}")
    swept = f", its {len(left)} tasks' directory removed" if left else ""
    return nothing_left(
        resumed, f"{what} ({interrupted}); resumed: exit {status}, {counts}, {restarts} restarts{swept}"
    )


@probe(
    "sweep-sigterm-resume",
    "spark",
    "SIGTERM a sweep (campaign --since 2.15.0, three releases, on Spark) in its middle, then --resume it",
    "exit 143 and one line; the resume completes; cases = rows over every task, no duplicate, nothing left",
)
def sweep_sigterm_resume(context: Context) -> str:
    out = context.work("out")
    launched = launch(context, command(*SWEEP, "--out", str(out)))
    recording(launched, out, 8_000, timeout=300)
    launched.send(signal.SIGTERM)
    line = signal_ending(launched.wait(timeout=180), launched.stderr, signal.SIGTERM)
    return _resumed(context, launched, out, line)


@probe(
    "sweep-server-kill-sigkill-resume",
    "spark",
    "SIGKILL a server of a sweep's task, then SIGKILL the sweep 3 s later, then --resume it",
    "each task journal of the killed run counts its parts, no duplicate; the resume completes; cases = "
    "rows, nothing left",
)
def sweep_server_kill_sigkill_resume(context: Context) -> str:
    out, temp = context.work("out"), str(context.work("tmp"))
    launched = launch(context, command(*SWEEP, "--out", str(out)), TMPDIR=temp)
    recording(launched, out, 8_000, timeout=300)
    os.kill(launched.servers()[0], signal.SIGKILL)
    time.sleep(3.0)
    launched.send(signal.SIGKILL)
    launched.wait()
    return _resumed(context, launched, out, "server and sweep SIGKILLed", killed=True, temp=temp)


SPARK_CAMPAIGN = (
    *("--server-version", RELEASE, "--server-version", OLD_RELEASE, "--family", "mapping"),
    *("--family", "matching", "--budget", "mapping=8000", "--budget", "matching=8000", "--shards", "2"),
)


@probe(
    "spark-campaign-sigkill-resume",
    "spark",
    "SIGKILL a campaign scheduled on Spark (--master local[2], two releases, two families) in its middle, "
    "then --resume it",
    "each task journal of the killed run counts its parts; the resume completes; cases = rows over every "
    "task, no duplicate; nothing left",
)
def spark_campaign_sigkill_resume(context: Context) -> str:
    out, temp = context.work("out"), str(context.work("tmp"))
    launched = launch(context, campaign(out, "--master", "local[2]", *SPARK_CAMPAIGN), TMPDIR=temp)
    recording(launched, out, 6_000, timeout=300)
    launched.send(signal.SIGKILL)
    launched.wait()
    return _resumed(context, launched, out, "SIGKILLed", killed=True, temp=temp)


def _killed_after_a_task_completed(context: Context) -> tuple[Path, Path]:
    """The Spark-scheduled campaign SIGKILLed once one task's journal says it completed; its run
    directory and that task's first part."""
    out, temp = context.work("out"), str(context.work("tmp"))
    launched = launch(context, campaign(out, "--master", "local[2]", *SPARK_CAMPAIGN), TMPDIR=temp)

    def completed() -> Path | None:
        launched.alive()
        for journal in sorted(out.glob("*/tasks/t*.json")):
            with contextlib.suppress(OSError, ValueError):
                if json.loads(journal.read_text()).get("status") == "completed":
                    parts = sorted(journal.parent.parent.glob(f"cases/part-{journal.stem}-*.parquet"))
                    return parts[0] if parts else None
        return None

    part = wait_for(completed, "a completed task", timeout=300)
    launched.send(signal.SIGKILL)
    launched.wait()
    nothing_left(launched, "SIGKILLed")
    return one_run(out), part


def _resume_after_damage(context: Context, damage: str) -> str:
    run_dir, part = _killed_after_a_task_completed(context)
    if damage == "deleted":
        part.unlink()
    else:
        part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    resumed = launch(context, command("campaign", "--resume", str(run_dir)), "resume")
    status = resumed.wait(timeout=600)
    check("Traceback" not in resumed.stderr, "the resume printed a traceback")
    task = part.name.split("-")[1]
    check(f"{task}: " in resumed.stderr and "it runs again" in resumed.stderr, f"{task} was not run again")
    counts, _ = accounted(run_dir, status="completed")
    agrees_with_records(status, run_dir)
    return nothing_left(resumed, f"SIGKILLed, {task}'s part {damage}; resumed: exit {status}, {counts}")


@probe(
    "resume-part-deleted",
    "spark",
    "SIGKILL a Spark-scheduled campaign after a task completed, delete that task's part, then --resume",
    "the task runs again (one line says why); the resume completes; cases = rows, no duplicate",
)
def resume_part_deleted(context: Context) -> str:
    return _resume_after_damage(context, "deleted")


@probe(
    "resume-part-truncated",
    "spark",
    "SIGKILL a Spark-scheduled campaign after a task completed, cut that task's part in half, then --resume",
    "no traceback; the task runs again (one line says why); the resume completes; cases = rows",
)
def resume_part_truncated(context: Context) -> str:
    return _resume_after_damage(context, "cut in half")


@probe(
    "resume-twice-at-once",
    "spark",
    "SIGKILL a Spark-scheduled campaign, then start two --resume of its run at once",
    "one is refused with one line (exit 2), the other completes; cases = rows, no duplicate",
)
def resume_twice_at_once(context: Context) -> str:
    run_dir, _ = _killed_after_a_task_completed(context)
    argv = command("campaign", "--resume", str(run_dir))
    resumes = [launch(context, argv, "resume-1"), launch(context, argv, "resume-2")]
    statuses = [resumed.wait(timeout=600) for resumed in resumes]
    check(statuses.count(2) == 1, f"exits {statuses}: one resume should be refused")
    refused, completed = (resumes[0], resumes[1]) if statuses[0] == 2 else (resumes[1], resumes[0])
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    check(
        len(lines) == 1 and "being written by another campaign" in lines[0],
        f"the refused resume said: {refused.stderr[-300:]}",
    )
    counts, _ = accounted(run_dir, status="completed")
    agrees_with_records(statuses[resumes.index(completed)], run_dir)
    return nothing_left(completed, f"{lines[0][:90]}...; the other: {counts}")


@probe(
    "spark-task-worker-killed",
    "spark",
    "SIGKILL the Python worker of a running task of a campaign on --master local[2,4]",
    "Spark runs the task again and the campaign completes; the task's parts are counted once (cases = "
    "rows, no duplicate)",
)
def spark_task_worker_killed(context: Context) -> str:
    out = context.work("out")
    launched = launch(context, campaign(out, "--master", "local[2,4]", *SPARK_CAMPAIGN))
    recording(launched, out, 3_000, timeout=300)
    tasks = wait_for(lambda: running_tasks(one_run(out)), "a running task")
    worker = min(tasks)
    os.kill(worker, signal.SIGKILL)
    status = launched.wait(timeout=600)
    check("Traceback" not in launched.stderr, "a traceback on stderr")
    run_dir = one_run(out)
    counts, _ = accounted(run_dir, status="completed")
    agrees_with_records(status, run_dir)
    return nothing_left(launched, f"killed the worker of {tasks[worker][0]}; exit {status}, {counts}")


# -- the container backend ----------------------------------------------------------------------------------


def _docker_home(context: Context) -> Path:
    """A home for a dockerd the campaigns start themselves (short: dockerd's sockets live under it),
    removed when the harness ends; its image data is kept between the container probes."""

    def make(directory: Path) -> Path:
        home = Path(tempfile.mkdtemp(prefix="ncp-", dir="/tmp"))
        context.cleanup.callback(_stop_left_dockerd, home)
        return home

    return Path(context.once("docker-home", make))


def _state(home: Path) -> Path:
    return home / "nats-conformance" / "docker"


def _stop_left_dockerd(home: Path) -> None:
    import shutil

    from nats_conformance.fixtures.docker import DockerDaemon

    state = _state(home)
    with contextlib.suppress(OSError, ValueError):
        pid = int((state / "docker.pid").read_text())
        DockerDaemon(f"unix://{state / 'docker.sock'}", owned=True, pid=pid, state_dir=state).stop()
    shutil.rmtree(home, ignore_errors=True)


def _container_environment(home: Path) -> dict[str, str]:
    return {
        "XDG_CACHE_HOME": str(home),
        CACHE_ENV: str(cache_root()),
        "DOCKER_HOST": "unix:///nonexistent/nats-conformance/docker.sock",
    }


def _labelled(home: Path) -> int:
    """The containers with the product's label on a daemon started again on the state directory."""
    from nats_conformance.fixtures.docker import docker_client, ensure_docker
    from nats_conformance.fixtures.servers.container import LABEL

    state = _state(home)
    host = f"unix://{state / 'docker.sock'}"
    with ensure_docker(docker_host=host, state_dir=state) as again:
        client = docker_client(host)
        try:
            found = len(client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True))
        finally:
            client.close()
        check(again.owned, "a dockerd of the probes' state directory answers after the campaign ended")
    return found


def _container_campaign(
    context: Context, home: Path, name: str = "command", *options: str
) -> tuple[Launched, Path]:
    """A container campaign of the current probe (`options`, else endless), and its --out."""
    out = home / "runs" / context.current / name
    argv = command("campaign", "--server-version", RELEASE, "--backend", "container", "--out", str(out))
    return launch(context, [*argv, *(options or ENDLESS)], name, **_container_environment(home)), out


def _dockerd(home: Path) -> str:
    return process_identity(int((_state(home) / "docker.pid").read_text()))


@probe(
    "container-sigterm",
    "container",
    "SIGTERM a --backend container campaign that started its own dockerd, once it records cases",
    "exit 143, one line; cases = rows; no container left and the dockerd it started is stopped",
)
def container_sigterm(context: Context) -> str:
    home = _docker_home(context)
    launched, out = _container_campaign(context, home)
    wait_for(lambda: launched.alive() and recorded(out), "a container campaign recording cases", timeout=300)
    dockerd = _dockerd(home)
    launched.send(signal.SIGTERM)
    line = signal_ending(launched.wait(timeout=180), launched.stderr, signal.SIGTERM)
    counts, _ = accounted(one_run(out), status="interrupted")
    check(not is_process_alive(dockerd), f"{line}; {counts}; but its dockerd still runs")
    netns = _state(home) / "exec" / "netns" / "default"
    check(not os.path.ismount(netns), f"{line}; dockerd's network namespace is still mounted")
    nothing_left(launched, line)
    containers = _labelled(home)
    check(containers == 0, f"{line}; {containers} containers left")
    return f"{line}; {counts}; dockerd stopped, 0 containers left"


@probe(
    "container-sigkill",
    "container",
    "SIGKILL a --backend container campaign that started its own dockerd (then, should that dockerd "
    "still run a minute on, run the next container campaign)",
    "no container left; the dockerd is stopped by its reaper, or adopted and stopped by the next run",
)
def container_sigkill(context: Context) -> str:
    home = _docker_home(context)
    launched, out = _container_campaign(context, home)
    wait_for(lambda: launched.alive() and recorded(out), "a container campaign recording cases", timeout=300)
    dockerd = _dockerd(home)
    launched.send(signal.SIGKILL)
    launched.wait()
    counts, _ = accounted(one_run(out))
    try:
        wait_for(lambda: not is_process_alive(dockerd), "the reaper stopping dockerd", timeout=60)
        how = "its reaper stopped dockerd"
    except Exception:
        following, _ = _container_campaign(context, home, "next", "--family", "mapping", "--cases", "200")
        status = following.wait(timeout=300)
        check(status in (0, 1), f"the next run: exit {status}: {following.stderr[-200:]!r}")
        check(not is_process_alive(dockerd), f"{counts}; the dockerd outlived the next run too")
        how = "the next run adopted and stopped dockerd"
    pids = session_pids(launched.pid)
    check(not pids, f"{counts}; processes of the killed campaign left: {pids}")
    containers = _labelled(home)
    check(containers == 0, f"{counts}; {how}; {containers} containers left")
    return f"{counts}; {how}; 0 containers left"
