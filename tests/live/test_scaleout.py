"""`campaign --master` on a real Spark standalone cluster (a master and two one-core workers on
127.0.0.1): every (family, shard) task runs on an executor that starts its own server, the driver's
manifest counts exactly the rows on disk, case ids are unique, each shard draws what a local run with
its seed draws, the report's `--master` reads the run on the same cluster, and SIGTERM ends the run
`interrupted` with its counts and no server left running."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.records.writer import CASES, MANIFEST, TASKS
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.engine.scaleout import TASK_IDS, shard_seed
from tests.live.campaigns import arguments
from tests.live.spark_cluster import Cluster, running, standalone_cluster

pytestmark = [pytest.mark.live, pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2.14.5"
SEED = 3
SHARE = 750
"""Cases of each family per shard (two shards, two families)."""
FAMILIES = ("mapping", "matching")


def campaign_command(out: Path, master: str, *options: str) -> list[str]:
    return [
        *(
            sys.executable,
            "-m",
            "nats_conformance.suites",
            "campaign",
            "--target",
            RELEASE,
            "--out",
            str(out),
        ),
        *("--master", master, *options),
    ]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    with standalone_cluster() as started:
        yield started


@pytest.fixture(scope="module")
def scaled_run(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(run directory, stderr) of two families in two shards each on the cluster."""
    out = tmp_path_factory.mktemp("scaled")
    families = [option for family in FAMILIES for option in ("--family", family)]
    budgets = [option for family in FAMILIES for option in ("--budget", f"{family}={2 * SHARE}")]
    command = campaign_command(out, cluster.url, "--shards", "2", "--seed", str(SEED), *families, *budgets)
    stderr = on_cluster(cluster, command)
    (run_dir,) = out.iterdir()
    return run_dir, stderr


def on_cluster(cluster: Cluster, command: list[str]) -> str:
    """Run `command` with the cluster's environment; it must succeed. Returns its standard error."""
    done = subprocess.run(
        command, cwd=ROOT, env=cluster.environment, capture_output=True, check=False, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def verdicts_on_disk(parts: list[Path]) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for part in parts:
        table = pq.read_table(part, columns=["feature", "verdict"]).to_pydict()
        counts.update(zip(table["feature"], table["verdict"], strict=True))
    return counts


def counted(journal: dict[str, dict[str, int]]) -> Counter[tuple[str, str]]:
    """A manifest's `features` as counts by (feature, verdict)."""
    return Counter({(f, v): n for f, verdicts in journal.items() for v, n in verdicts.items() if n})


def test_every_shard_runs_on_the_cluster_and_the_manifest_counts_the_rows_on_disk(
    cluster: Cluster, scaled_run: tuple[Path, str]
) -> None:
    run_dir, stderr = scaled_run
    assert "Traceback" not in stderr
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["status"] == "completed"
    assert manifest["settings"]["scale_out"] == {"master": cluster.url, "shards": 2}
    parts = sorted((run_dir / CASES).glob("*.parquet"))
    assert counted(manifest["features"]) == verdicts_on_disk(parts)
    assert (
        manifest["cases"] == manifest["written"] == sum(pq.read_metadata(p).num_rows for p in parts) > 2_000
    )
    tasks = manifest["tasks"]
    assert {(task["family"], task["shard"]) for task in tasks} == {(f, s) for f in FAMILIES for s in (0, 1)}
    assert {task["status"] for task in tasks} == {"completed"}
    for task in tasks:
        journal = json.loads((run_dir / TASKS / f"{task['task']}.json").read_text())
        mine = [part for part in parts if part.name.startswith(f"part-{task['task']}-")]
        assert mine
        assert counted(journal["features"]) == verdicts_on_disk(mine)
        number = int(task["task"][1:])
        ids = [i for part in mine for i in pq.read_table(part, columns=["case_id"])["case_id"].to_pylist()]
        assert all(number * TASK_IDS <= i < (number + 1) * TASK_IDS for i in ids)
    ids = [i for part in parts for i in pq.read_table(part, columns=["case_id"])["case_id"].to_pylist()]
    assert len(ids) == len(set(ids)) == manifest["cases"]
    # Both workers ran an executor of the campaign (Spark's standalone work directories: app-*/N/).
    assert all(list(work.glob("app-*/*/stderr")) for work in cluster.worker_dirs())


def test_each_shard_draws_what_a_local_run_with_its_seed_draws(
    scaled_run: tuple[Path, str], tmp_path: Path
) -> None:
    """Shard 0 runs with the plan's seed and shard 1 with `shard_seed(seed, 1)`, each its share of the
    budget, and shard 0 alone the known cases: a local campaign with that seed and share (and for
    shard 1 without known cases) records the same verdicts per feature."""
    run_dir, _ = scaled_run
    tasks = json.loads((run_dir / MANIFEST).read_text())["tasks"]
    for shard in (0, 1):
        shards: Counter[tuple[str, str]] = Counter()
        for task in tasks:
            if task["shard"] == shard:
                shards += counted(
                    json.loads((run_dir / TASKS / f"{task['task']}.json").read_text())["features"]
                )
        out = tmp_path / f"local-{shard}"
        budgets = [option for family in FAMILIES for option in ("--budget", f"{family}={SHARE}")]
        families = [option for family in FAMILIES for option in ("--family", family)]
        seed = ["--seed", str(shard_seed(SEED, shard)), *(["--no-known-cases"] if shard else [])]
        assert main(["campaign", "--target", RELEASE, *families, *budgets, *seed, "--out", str(out)]) == 0
        (local,) = out.iterdir()
        assert counted(json.loads((local / MANIFEST).read_text())["features"]) == shards


def test_the_report_runs_on_the_same_cluster(
    cluster: Cluster, scaled_run: tuple[Path, str], tmp_path: Path
) -> None:
    run_dir, _ = scaled_run
    report = [sys.executable, "-m", "nats_conformance.reports", "build", str(run_dir), "--out", str(tmp_path)]
    on_cluster(cluster, [*report, "--master", cluster.url])
    summary = json.loads((tmp_path / "summary.json").read_text())
    manifest = json.loads((run_dir / MANIFEST).read_text())
    (run,) = summary["runs"]
    assert run["rows"] == manifest["cases"]
    assert run["status"] == "completed"


def servers_under(ancestors: set[int]) -> set[int]:
    """The nats-server processes descending from any of `ancestors`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if (stat.parent / "comm").read_text().strip() != "nats-server":
                continue
            pid = int(stat.parent.name)
            parent = pid
            while parent > 1:
                parent = int(Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent in ancestors:
                    found.add(pid)
                    break
        except (OSError, ValueError):
            continue
    return found


def test_sigterm_ends_the_run_interrupted_with_the_rows_on_disk_and_no_server_left(
    cluster: Cluster, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        campaign_command(tmp_path, cluster.url, "--family", "matching", "--budget", "matching=100000000"),
        cwd=ROOT,
        env=cluster.environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    servers: set[int] = set()
    while time.monotonic() < deadline and process.poll() is None:
        manifests = list(tmp_path.glob(f"*/{MANIFEST}"))
        servers |= servers_under(cluster.pids())
        if manifests and json.loads(manifests[0].read_text() or "{}").get("cases", 0) > 0:
            break
        time.sleep(0.5)
    else:
        process.kill()
        pytest.fail(f"the campaign recorded nothing in 180 s: {process.communicate()[1][-2000:]}")
    assert servers, "no executor started a server"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=180)
    assert process.returncode == 143, stderr[-3000:]
    assert stderr.rstrip().endswith("nats-conformance: terminated")
    assert "Traceback" not in stderr
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert (manifest["status"], manifest["signal"]) == ("interrupted", "SIGTERM")
    parts = list((run_dir / CASES).glob("*.parquet"))
    assert manifest["cases"] == sum(pq.read_metadata(part).num_rows for part in parts) > 0
    assert counted(manifest["features"]) == verdicts_on_disk(parts)
    journals = [json.loads(path.read_text()) for path in (run_dir / TASKS).glob("t*.json")]
    assert journals
    assert {journal["status"] for journal in journals} == {"interrupted"}
    deadline = time.monotonic() + 30
    while any(running(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in servers if running(pid)]


@pytest.mark.nightly  # every change's run resumes Spark campaigns under SIGTERM in the soak (tests/soak)
def test_a_sweep_resumed_after_sigterm_keeps_what_completed_and_counts_every_case_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Two releases, a quick family and a slow one each: SIGTERM once a quick task completed, then
    `--resume` runs only the tasks that did not complete; the completed tasks' parts are kept as they
    were, and the run counts exactly the rows on disk, each case id once."""
    command = [
        *(
            sys.executable,
            "-m",
            "nats_conformance.suites",
            "campaign",
            "--out",
            str(tmp_path),
            "--master",
            cluster.url,
        ),
        *("--server-version", "2.12.15", "--server-version", RELEASE, "--shards", "1"),
        *("--family", "matching", "--family", "mapping", "--budget", "matching=200"),
        *("--budget", "mapping=20000"),
    ]
    process = subprocess.Popen(
        command, cwd=ROOT, env=cluster.environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 180
    completed: set[str] = set()
    while time.monotonic() < deadline and process.poll() is None and not completed:
        for journal in tmp_path.glob(f"*/{TASKS}/t*.json"):
            if json.loads(journal.read_text() or "{}").get("status") == "completed":
                completed.add(journal.stem)
        time.sleep(0.2)
    assert completed, f"no task completed in 180 s: {process.poll()}"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=180)
    assert process.returncode == 143, stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["status"] == "interrupted"
    done = {task["task"] for task in manifest["tasks"] if task["status"] == "completed"}
    assert done
    assert len(done) < len(manifest["tasks"]) == 4
    kept = {
        path.name: path.stat().st_mtime_ns
        for task in done
        for path in (run_dir / CASES).glob(f"part-{task}-*")
    }

    resumed = subprocess.run(
        [sys.executable, "-m", "nats_conformance.suites", "campaign", "--resume", str(run_dir)],
        cwd=ROOT,
        env=cluster.environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"4 tasks (1 shard per family), {len(done)} completed before the resume" in resumed.stderr
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["status"] == "completed"
    assert {task["status"] for task in manifest["tasks"]} == {"completed"}
    now = {path.name: path.stat().st_mtime_ns for path in (run_dir / CASES).glob("part-*")}
    assert kept.items() <= now.items()
    parts = list((run_dir / CASES).glob("*.parquet"))
    ids = [i for part in parts for i in pq.read_table(part, columns=["case_id"]).column(0).to_pylist()]
    assert manifest["cases"] == len(ids) == len(set(ids))
    assert counted(manifest["features"]) == verdicts_on_disk(parts)
    assert {key: n for key, n in counted(manifest["features"]).items() if key[0] == "matching"}


def test_a_task_whose_worker_is_killed_is_retried_and_every_case_is_counted_once(tmp_path: Path) -> None:
    """SIGKILL of the Python worker running a task (found by its journal's owner, a process of this
    campaign's session) while it records: Spark runs the task again (`local[2,4]`: up to four attempts),
    the new attempt removes what the killed one wrote, and the run completes with every case id once,
    each task's journal counting its own parts and the manifest the rows on disk."""
    command = [
        *campaign_command(tmp_path, "local[2,4]", "--shards", "1", "--seed", str(SEED)),
        *("--family", "mapping", "--family", "matching", "--budget", "mapping=30000"),
        *("--budget", "matching=600"),
    ]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    killed: tuple[str, str] | None = None
    while killed is None and time.monotonic() < deadline and process.poll() is None:
        begun = sorted(tmp_path.glob(f"*/{TASKS}/t*.json"))
        for path in begun if len(begun) == 2 else []:  # both tasks begun: a journal begun later is a retry
            with contextlib.suppress(OSError, ValueError):
                journal = json.loads(path.read_text())
                # the mapping task (the matching task never records 1,000) with half its budget left: a
                # task nearly done could end between this read and the kill, leaving nothing to run
                # again (a mapping task records 6,000 cases in about 3 s, its journal every 2 s)
                if journal["status"] == "running" and 1000 <= journal["cases"] <= 15000:
                    killed = (path.stem, journal["owner"])
                    break
        time.sleep(0.1)
    if killed is None:
        process.kill()
        pytest.fail(f"no task recorded in 240 s: {process.communicate()[1][-2000:]}")
    task, owner = killed
    worker = int(owner.partition(":")[0])
    assert os.getsid(worker) == process.pid  # a process of this campaign
    assert "pyspark.daemon" in " ".join(arguments(worker))
    killed_at = time.time()
    os.kill(worker, signal.SIGKILL)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["status"] == "completed"
    assert {t["status"] for t in manifest["tasks"]} == {"completed"}
    assert len(manifest["tasks"]) == 2
    journals = [json.loads(path.read_text()) for path in (run_dir / TASKS).glob("t*.json")]
    # the attempt the kill ended was run again (the worker may have just finished `task` and taken the
    # other one: a task's journal begun after the kill is a later attempt, both tasks having begun before)
    assert [journal for journal in journals if journal["started"] > killed_at], task
    assert [path.name for path in (run_dir / CASES).iterdir() if path.name.startswith(".")] == []
    parts = sorted((run_dir / CASES).glob("*.parquet"))
    for name in (t["task"] for t in manifest["tasks"]):
        journal = json.loads((run_dir / TASKS / f"{name}.json").read_text())
        mine = [part for part in parts if part.name.startswith(f"part-{name}-")]
        assert counted(journal["features"]) == verdicts_on_disk(mine)
    ids = [i for part in parts for i in pq.read_table(part, columns=["case_id"])["case_id"].to_pylist()]
    assert manifest["cases"] == manifest["written"] == len(ids) == len(set(ids)) > 0
    assert counted(manifest["features"]) == verdicts_on_disk(parts)
