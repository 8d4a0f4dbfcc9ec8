"""The same campaign without `--master` (the baseline), with `--master local[N]` and, with `--cluster`,
on a Spark standalone cluster of two one-core workers started here (`tests/live/spark_cluster.py`).

    .venv/bin/python benchmarks/bench_scaleout.py [--repeats 3] [--cluster] [--shards 2]
        [--target 2.14.5] [--budget mapping=5000 --budget matching=50000]

Each run is the whole command in a fresh process (interpreter, Spark start-up and executors, servers,
the cases), the modes alternating, `--repeats` times each. Prints per mode the median wall time, the
cases (equal in every run of a mode: the seed is fixed) and cases per second, and for scaled-out runs
the median of the slowest task's own time (from the manifest's `tasks`), so that what Spark adds shows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nats_conformance.records.writer import MANIFEST  # noqa: E402
from tests.live.spark_cluster import standalone_cluster  # noqa: E402


def timed(command: list[str], out: Path, environment: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """Wall seconds of `command` and the manifest of the run it wrote under `out`."""
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1, 3):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    (run_dir,) = out.iterdir()
    return seconds, json.loads((run_dir / MANIFEST).read_text())


@contextlib.contextmanager
def cluster_url(wanted: bool) -> Iterator[str | None]:
    if not wanted:
        yield None
        return
    with standalone_cluster() as cluster:
        yield cluster.url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", default="2.14.5")
    parser.add_argument("--budget", action="append", default=[], metavar="FAMILY=N")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--local", default="local[2]", help="the local master (default local[2])")
    parser.add_argument("--cluster", action="store_true", help="also on a standalone cluster started here")
    arguments = parser.parse_args()
    budgets = arguments.budget or ["mapping=5000", "matching=50000"]
    campaign = [
        sys.executable,
        "-m",
        "nats_conformance.suites",
        "campaign",
        "--target",
        arguments.target,
        "--seed",
        "1",
    ]
    for budget in budgets:
        campaign += ["--family", budget.partition("=")[0], "--budget", budget]
    environment = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    with cluster_url(arguments.cluster) as url, tempfile.TemporaryDirectory() as scratch:
        modes = {"no --master": [], f"--master {arguments.local}": ["--master", arguments.local]}
        if url:
            modes["--master standalone (2 workers x 1 core)"] = ["--master", url]
        for name, options in modes.items():
            if options:
                modes[name] = [*options, "--shards", str(arguments.shards)]
        seconds: dict[str, list[float]] = {name: [] for name in modes}
        slowest: dict[str, list[float]] = {name: [] for name in modes}
        cases: dict[str, set[int]] = {name: set() for name in modes}
        for repeat in range(arguments.repeats):
            for name, options in modes.items():
                out = Path(scratch) / f"{len(seconds[name])}-{abs(hash(name))}"
                wall, manifest = timed([*campaign, *options, "--out", str(out)], out, environment)
                seconds[name].append(wall)
                cases[name].add(int(manifest["cases"]))
                tasks = manifest.get("tasks") or []
                if tasks:
                    slowest[name].append(max(float(task["seconds"]) for task in tasks))
                print(f"repeat {repeat + 1} {name}: {wall:.1f} s, {manifest['cases']} cases", flush=True)
        print(f"\n{' '.join(campaign[3:])}, median of {arguments.repeats}, {os.cpu_count()} cores:")
        for name in modes:
            wall = statistics.median(seconds[name])
            count = max(cases[name])
            line = f"  {name:45} {wall:6.1f} s  {count:8} cases  {count / wall:8,.0f} cases/s"
            if len(cases[name]) > 1:
                line += f"  (cases differ between repeats: {sorted(cases[name])})"
            if slowest[name]:
                line += f"  (slowest task {statistics.median(slowest[name]):.1f} s)"
            print(line)


if __name__ == "__main__":
    main()
