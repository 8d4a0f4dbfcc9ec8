"""Per family on one release: wall time, cases, units, cases/s and units/s, and the share of the time spent
setting units up (server start and stop, configuration reload, JetStream stream creation and deletion,
NATS Streaming layouts) against the rest (drawing, publishing, judging, recording).

    .venv/bin/python benchmarks/bench_families.py [--target 2.14.5] [--repeats 3] [--family NAME ...]
        [--plan default] [--scale 1.0] [--seed 1] [--warm] [--baseline TREE]

Each family runs as a campaign of that family alone (`run_campaign`, its known cases first, then drawn
units up to its budget: the plan's, times `--scale`) in a fresh process, into a scratch run directory
whose Parquet rows are counted and must equal the cases the writer counted. The setup is measured, not
guessed: the worker wraps the setup calls with timers (the outermost call counts when one calls another,
and calls of threads running side by side count the wall time they cover, once):

- `start`: a server's start and stop (`ProcessBackend`, `OperatorBackend`), restarts included;
- `reload`: a configuration applied to a running server, an account JWT pushed;
- `streams`: JetStream stream creation and deletion (and a JetStream client's connection);
- `streaming`: a NATS Streaming layout's servers started and stopped.

Apart from the setup, `draw` is the wall time the run spent drawing units itself (the engine's
`data.draw` of a family's strategy: Hypothesis and the family's strategies) or waiting for the next unit
of a drawing process (`suites.engine.prefetch`, which draws while the run runs the units before): what
the run lost to drawing.

With `--warm` each worker first runs its family with a budget of one unit, untimed, in the same process:
what a process does once and a campaign of every family pays once (a module a tree imports on first use,
such as `scipy.special` for the first chi-square test, the worker pool of `suites.expected`) is then
outside the measure, in both trees alike; without it, a small family's wall holds them.

With `--baseline TREE` (a `git worktree` of another commit) every measurement also runs on that tree's
code, the two trees alternating within each repeat (which goes first alternates too), and the table
gives each tree's medians and the ratios of this tree to the baseline. Units are calls to
`suites.engine.family.check` (and to its batched form where one exists, and units handed to a slot of
`suites.engine.rolling` where that exists), each a distinct unit.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = ("start", "reload", "streams", "streaming")
DRAW = (
    ("hypothesis.strategies._internal.core", "DataObject", "draw"),
    ("nats_conformance.suites.engine.prefetch", "Drawn", "__next__"),
)
"""The calls that draw a unit (`suites.engine.run.run_family`'s `data.draw`) or wait for one drawn
apart, timed as `draw`; a call a tree lacks is skipped."""
SETUP_CALLS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "start": (
        ("nats_conformance.fixtures.servers.process", "ProcessBackend", "start"),
        ("nats_conformance.fixtures.servers.process", "ProcessBackend", "stop"),
        ("nats_conformance.fixtures.servers.operator", "OperatorBackend", "start"),
        ("nats_conformance.fixtures.servers.operator", "OperatorBackend", "stop"),
    ),
    "reload": (
        ("nats_conformance.fixtures.servers.local", "LocalServer", "apply"),
        ("nats_conformance.fixtures.servers.operator", "OperatorBackend", "apply"),
        ("nats_conformance.fixtures.servers.operator", "OperatorBackend", "push_mappings"),
    ),
    "streams": (
        ("nats_conformance.fixtures.clients.jetstream", "JetStreamClient", "__init__"),
        ("nats_conformance.fixtures.clients.jetstream", "JetStreamClient", "create_stream"),
        ("nats_conformance.fixtures.clients.jetstream", "JetStreamClient", "create_streams"),
        ("nats_conformance.fixtures.clients.jetstream", "JetStreamClient", "delete_stream"),
        ("nats_conformance.fixtures.clients.jetstream", "JetStreamClient", "delete_streams"),
    ),
    "streaming": (
        ("nats_conformance.fixtures.servers.streaming", "StreamingServers", "start_servers"),
        ("nats_conformance.fixtures.servers.streaming", "StreamingServers", "stop_servers"),
        ("nats_conformance.fixtures.servers.streaming", "StreamingServer", "stop"),
    ),
}
"""The setup calls timed per category, as (module, class, method); a method a tree lacks is skipped, so
the same worker measures a baseline commit and this one."""


class Timers:
    """Per category, the wall time covered by the outermost timed calls of any thread (the union of their
    intervals, so that setups running side by side count once), and the units checked."""

    def __init__(self) -> None:
        self.intervals: dict[str, list[tuple[float, float]]] = {c: [] for c in (*CATEGORIES, "draw")}
        self.units = 0
        self._local = threading.local()
        self._lock = threading.Lock()

    def wrap(self, category: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self._local, "depth", 0)
            if depth:
                return method(*args, **kwargs)
            self._local.depth = 1
            began = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                ended = time.perf_counter()
                self._local.depth = 0
                with self._lock:
                    self.intervals[category].append((began, ended))

        return timed

    def seconds(self, category: str) -> float:
        """The length of the union of the category's intervals."""
        total, reach = 0.0, float("-inf")
        for began, ended in sorted(self.intervals[category]):
            if ended > reach:
                total += ended - max(began, reach)
                reach = ended
        return total

    def install(self, top: str) -> None:
        """Wraps the calls of a tree whose package prefix is `top` (`nats_conformance.` or none)."""

        def ours(name: str) -> str:
            return top + name.removeprefix("nats_conformance.")

        for category, calls in SETUP_CALLS.items():
            for module_name, class_name, method_name in calls:
                owner = getattr(importlib.import_module(ours(module_name)), class_name)
                method = owner.__dict__.get(method_name)
                if method is not None:
                    setattr(owner, method_name, self.wrap(category, method))
        for module_name, class_name, method_name in DRAW:
            try:
                owner = getattr(importlib.import_module(ours(module_name)), class_name)
            except ImportError:
                continue
            setattr(owner, method_name, self.wrap("draw", getattr(owner, method_name)))
        run = importlib.import_module(ours("nats_conformance.suites.engine.run"))
        for name in ("check", "check_many"):
            checked = getattr(run, name, None)
            if checked is not None:
                setattr(run, name, self.counted(checked, batched=name == "check_many"))
        try:
            rolling = importlib.import_module(ours("nats_conformance.suites.engine.rolling")).Rolling
        except ImportError:  # a tree from before units ran without batches
            return
        submit = rolling.submit

        def submitted(runner: Any, unit: Any) -> None:
            self.units += 1
            submit(runner, unit)

        rolling.submit = submitted

    def counted(self, checked: Callable[..., Any], *, batched: bool) -> Callable[..., Any]:
        @functools.wraps(checked)
        def counting(family: Any, session: Any, context: Any, unit: Any, *rest: Any, **kwargs: Any) -> Any:
            self.units += len(unit) if batched else 1
            return checked(family, session, context, unit, *rest, **kwargs)

        return counting


def worker(arguments: argparse.Namespace) -> None:
    """One family's campaign in this process (imports from `--tree`); prints one JSON line."""
    sys.path.insert(0, arguments.tree)
    # A tree from before issue 55 has the five packages at the top, not under nats_conformance.
    top = "nats_conformance." if (Path(arguments.tree) / "nats_conformance" / "__init__.py").exists() else ""

    def module(name: str) -> Any:
        return importlib.import_module(top + name)

    RunConfig = module("fixtures.options").RunConfig
    parse_version_spec = module("fixtures.provision").parse_version_spec
    load_expectations = module("records.expectations").load_expectations
    for counts in ("records.counts", "reports.counts", "records.tally"):  # newest first (issue 55, 0699aef)
        try:
            run_tally = module(counts).run_tally
            break
        except (ImportError, AttributeError):
            continue
    campaign = module("suites.engine.campaign")
    CampaignPlan, run_campaign = campaign.CampaignPlan, campaign.run_campaign
    FAMILIES = module("suites.families").FAMILIES

    def plan_of(budget: int) -> CampaignPlan:
        budgets = dict.fromkeys(FAMILIES, 0) | {arguments.worker: budget}
        return CampaignPlan(budgets=budgets, seed=arguments.seed)

    run = RunConfig((parse_version_spec(arguments.target),), ("process",))
    with (
        tempfile.TemporaryDirectory() as scratch,
        open(os.devnull, "w") as quiet,
        contextlib.redirect_stderr(quiet),
    ):
        if arguments.warm:
            run_campaign(run, plan_of(1), Path(scratch) / "warm", load_expectations())
        timers = Timers()
        timers.install(top)
        plan = plan_of(arguments.budget)
        run_dir = Path(scratch) / "run"
        began = time.perf_counter()
        writer, _ = run_campaign(run, plan, run_dir, load_expectations())
        wall = time.perf_counter() - began
        tally = run_tally(run_dir)
        rows = sum(tally.values())
    result = {
        "wall": wall,
        "cases": writer.total,
        "rows": rows,
        "units": timers.units,
        "verdicts": dict(tally),
        "setup": {category: timers.seconds(category) for category in CATEGORIES},
        "draw": timers.seconds("draw"),
    }
    print(json.dumps(result))


def measure(tree: Path, family: str, budget: int, arguments: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        family,
        "--budget",
        str(budget),
        "--tree",
        str(tree),
        "--target",
        arguments.target,
        "--seed",
        str(arguments.seed),
        *(["--warm"] if arguments.warm else []),
    ]
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{family} on {tree} exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["rows"] != result["cases"]:
        raise SystemExit(f"{family} on {tree}: {result['cases']} cases but {result['rows']} rows on disk")
    return result


def medians(results: list[dict[str, Any]]) -> dict[str, float]:
    wall = statistics.median(r["wall"] for r in results)
    row = {
        "wall": wall,
        "cases": statistics.median(r["cases"] for r in results),
        "units": statistics.median(r["units"] for r in results),
        "cases/s": statistics.median(r["cases"] / r["wall"] for r in results),
        "units/s": statistics.median(r["units"] / r["wall"] for r in results),
    }
    for category in CATEGORIES:
        row[category] = statistics.median(r["setup"][category] / r["wall"] for r in results)
    row["setup"] = statistics.median(sum(r["setup"].values()) / r["wall"] for r in results)
    row["draw"] = statistics.median(r.get("draw", 0.0) / r["wall"] for r in results)
    return row


def table(name: str, rows: dict[str, dict[str, float]]) -> Iterator[str]:
    yield f"\n{name}"
    shares = " | ".join(CATEGORIES)
    yield f"| family | wall | cases | units | cases/s | units/s | setup | {shares} | draw |"
    yield "|---" * (8 + len(CATEGORIES)) + "|"
    for family, row in rows.items():
        parts = [f"{row[category]:.0%}" for category in CATEGORIES]
        yield (
            f"| {family} | {row['wall']:.1f} s | {row['cases']:,.0f} | {row['units']:,.0f} | "
            f"{row['cases/s']:,.0f} | {row['units/s']:,.1f} | {row['setup']:.0%} | {' | '.join(parts)} | "
            f"{row['draw']:.0%} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="2.14.5")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--family", action="append", default=[])
    parser.add_argument("--plan", default="default", help="the plan whose budgets are scaled (default)")
    parser.add_argument("--scale", type=float, default=1.0, help="share of the plan's budgets (1.0)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", help="a worktree of the baseline commit, measured alternately")
    parser.add_argument("--json", help="write every measurement here")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="run the family once (a budget of one unit) in each worker before the timed run, so that "
        "what a process does once (imports on first use, a worker pool's start) is not timed",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tree", default=str(ROOT), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        worker(arguments)
        return
    sys.path.insert(0, str(ROOT))
    from nats_conformance.suites.engine.plans import FLOOR, PLANS
    from nats_conformance.suites.families import FAMILIES

    families = arguments.family or list(FAMILIES)
    plan = PLANS[arguments.plan].budgets()
    budgets = {family: max(FLOOR, round(plan[family] * arguments.scale)) for family in families}
    trees = {"this": ROOT} | ({"baseline": Path(arguments.baseline).resolve()} if arguments.baseline else {})
    results: dict[str, dict[str, list[dict[str, Any]]]] = {name: {f: [] for f in families} for name in trees}
    for repeat in range(arguments.repeats):
        order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
        for family in families:
            for name in order:
                result = measure(trees[name], family, budgets[family], arguments)
                results[name][family].append(result)
                print(
                    f"repeat {repeat + 1} {name} {family}: {result['wall']:.2f} s, {result['cases']} cases, "
                    f"{result['units']} units, setup {sum(result['setup'].values()) / result['wall']:.0%}, "
                    f"{result.get('verdicts')}",
                    flush=True,
                )
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(results, indent=1))
    print(
        f"\nnats-server {arguments.target}, plan {arguments.plan} x {arguments.scale}, "
        f"seed {arguments.seed}, medians of {arguments.repeats}{', warmed' if arguments.warm else ''}, "
        f"{os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    summary = {name: {family: medians(runs) for family, runs in per.items()} for name, per in results.items()}
    for name, rows in summary.items():
        for line in table(f"{name} ({trees[name]})", rows):
            print(line)
    if "baseline" in summary:
        print("\nratios this/baseline (median wall, units/s)")
        print("| family | wall | units/s | cases/s |\n|---|---|---|---|")
        for family in families:
            this, base = summary["this"][family], summary["baseline"][family]
            if not base["units"]:
                print(f"| {family} | (not in the baseline) | | |")
                continue
            print(
                f"| {family} | {this['wall'] / base['wall']:.2f} | {this['units/s'] / base['units/s']:.2f} | "
                f"{this['cases/s'] / base['cases/s']:.2f} |"
            )


if __name__ == "__main__":
    main()
