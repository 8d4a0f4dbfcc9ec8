"""Ten million case records to a finished report: Spark (``local[*]``) and DuckDB, beside a baseline.

    .venv/bin/python benchmarks/bench_reports.py [--rows 10000000] [--repeats 3] [--keep DIR]
        [--baseline DIR --baseline-engines spark,arrow]

Generates synthetic records of the real schema with pyarrow (vectorised; four releases, every feature,
a few thousand divergences, partition and weighted rows), writes them as one run directory, then runs
``python -m nats_conformance.reports build`` end to end (a fresh process: interpreter, Spark start-up,
aggregations, plots, the three outputs) with ``--engine spark`` and with ``--engine duckdb``, and, with
``--baseline``, the same command in another checkout (e.g. ``git archive`` of an earlier commit) with its
engines, all alternately, ``--repeats`` times each. Prints the medians, and where the time went (from the
command's progress lines).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nats_conformance.records.schema import ARROW_TYPES, SCHEMA, SCHEMA_VERSION  # noqa: E402
from nats_conformance.records.writer import CASES, MANIFEST  # noqa: E402
from nats_conformance.reference.functions import MAPPING_FUNCTIONS  # noqa: E402

RELEASES = ("2.9.25", "2.10.27", "2.12.15", "2.14.5")
FEATURES = ("mapping", "partition", "weighted", "validation", "matching")
FEATURE_SHARES = (0.60, 0.20, 0.10, 0.05, 0.05)
FUNCTIONS = tuple(f.name for f in MAPPING_FUNCTIONS if f.name not in ("$n", "partition", "left", "right"))
"""Functions of the synthetic mapping rows (partition rows are their own feature; no release accepts
left/right in a mapping)."""
PART_ROWS = 1_000_000
WEIGHTS = ARROW_TYPES["weights"]
DIVERGE, EXPECTED, UNKNOWN = 1e-3, 2e-4, 5e-4


def text(values: np.ndarray | list[str]) -> pa.Array:
    return pa.array(values, type=pa.string())


def empty(kind: pa.DataType, size: int) -> pa.Array:
    """A list column of ``size`` empty lists."""
    return pa.array([[]], kind).take(pa.array(np.zeros(size, np.int64)))


def numbered(prefix: str, numbers: np.ndarray) -> pa.Array:
    """``prefix`` + each number, as one vectorised string column."""
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(numbers), pa.string()), "")


def pick(pool: list[str], index: np.ndarray) -> pa.Array:
    return text(pool).take(pa.array(index))


def mapping_block(rng: np.random.Generator, size: int) -> dict[str, pa.Array]:
    template = rng.integers(0, 200, size)
    names = [FUNCTIONS[t % len(FUNCTIONS)] for t in range(200)]
    sources = [f"m{t}.*.*" for t in range(200)]
    destinations = [f"o{t}.{{{{wildcard(2)}}}}.{{{{{names[t]}(1,2)}}}}" for t in range(200)]
    subject = pc.binary_join_element_wise(
        pick(sources, template), numbered("", rng.integers(0, 10**6, size)), "."
    )
    return {
        "functions": pick(names, template),
        "source": pick(sources, template),
        "destination": pick(destinations, template),
        "subject": subject,
        "expected": subject,
        "partitions": np.zeros(size, np.int32),
        "bucket": np.full(size, -1, np.int32),
    }


def partition_block(rng: np.random.Generator, size: int) -> dict[str, pa.Array]:
    mapping = rng.integers(0, 40, size)
    counts = (2 + mapping % 15).astype(np.int32)
    key = rng.integers(0, 20_000, size).astype(np.uint64)
    bucket = (
        (key * np.uint64(2654435761) + mapping.astype(np.uint64) * np.uint64(40503)) >> np.uint64(7)
    ) % counts.astype(np.uint64)
    sources = [f"p{m}.*" for m in range(40)]
    destinations = [f"p{m}.{{{{wildcard(1)}}}}.{{{{partition({2 + m % 15},1)}}}}" for m in range(40)]
    subject = pc.binary_join_element_wise(
        pick([f"p{m}" for m in range(40)], mapping), numbered("k", key), "."
    )
    return {
        "functions": pick(["wildcard+partition"], np.zeros(size, np.int64)),
        "source": pick(sources, mapping),
        "destination": pick(destinations, mapping),
        "subject": subject,
        "expected": subject,
        "partitions": counts,
        "bucket": bucket.astype(np.int32),
    }


LOST, UNCHANGED = -1, -2
"""The generator's numbers of a weighted list's outcomes other than its entries (`outcome_column`)."""


def outcome_column(feature: str, bucket: np.ndarray) -> pa.Array:
    """The `outcome` of each row of `feature` whose generated bucket is `bucket` (`LOST`, `UNCHANGED`)."""
    if feature == "partition":
        return pick(["delivered"], np.zeros(len(bucket), np.int64))
    if feature == "weighted":
        return text(np.where(bucket == LOST, "lost", np.where(bucket == UNCHANGED, "unchanged", "delivered")))
    return pick([""], np.zeros(len(bucket), np.int64))


def weighted_lists() -> list[tuple[str, list[dict[str, object]], list[int], list[float]]]:
    """20 lists: (source, entries, bucket per outcome, share per outcome)."""
    out = []
    for index in range(20):
        weights = [10 + 5 * (index % 7), 20 + index % 5] if index % 3 else [60, 40]
        source = f"w{index}.s" if index % 4 == 0 else f"w{index}.*"
        entries: list[dict[str, object]] = [
            {"destination": f"w{index}.d{k}", "weight": w, "cluster": None} for k, w in enumerate(weights)
        ]
        rest = 100 - sum(weights)
        if index % 4 == 0 and rest:
            entries.append({"destination": source, "weight": 0, "cluster": None})  # the rest is lost
        buckets = list(range(len(weights))) + ([LOST if index % 4 == 0 else UNCHANGED] if rest else [])
        shares = [w / 100 for w in weights] + ([rest / 100] if rest else [])
        out.append((source, entries, buckets, shares))
    return out


def weighted_block(rng: np.random.Generator, size: int) -> dict[str, pa.Array]:
    lists = weighted_lists()
    chosen = rng.integers(0, len(lists), size)
    bucket = np.empty(size, np.int32)
    for index, (_, _, buckets, shares) in enumerate(lists):
        rows = chosen == index
        bucket[rows] = rng.choice(buckets, size=int(rows.sum()), p=shares)
    subject = pick([source.replace("*", "x") for source, *_ in lists], chosen)
    return {
        "functions": pick([""], np.zeros(size, np.int64)),
        "source": pick([source for source, *_ in lists], chosen),
        "destination": pick([""], np.zeros(size, np.int64)),
        "weights": pa.array([entries for _, entries, *_ in lists], WEIGHTS).take(pa.array(chosen)),
        "subject": subject,
        "expected": subject,
        "partitions": np.zeros(size, np.int32),
        "bucket": bucket,
    }


def validation_block(rng: np.random.Generator, size: int) -> dict[str, pa.Array]:
    names = [*FUNCTIONS, "left", "right", "partition"]
    name = rng.integers(0, len(names), size)
    expected = np.where(rng.random(size) < 0.7, "accept", "reject:unsupported-function")
    return {
        "functions": pick(names, name),
        "source": pick(["v.*"], np.zeros(size, np.int64)),
        "destination": pick([f"v.{{{{{n}(1,2)}}}}" for n in names], name),
        "subject": pick([""], np.zeros(size, np.int64)),
        "expected": text(expected),
        "partitions": np.zeros(size, np.int32),
        "bucket": np.full(size, -1, np.int32),
    }


def matching_block(rng: np.random.Generator, size: int) -> dict[str, pa.Array]:
    subject = numbered("x.", rng.integers(0, 10**6, size))
    return {
        "functions": pick([""], np.zeros(size, np.int64)),
        "source": pick(["x.*", "x.>", "*.*"], rng.integers(0, 3, size)),
        "destination": pick([""], np.zeros(size, np.int64)),
        "subject": subject,
        "expected": pick(["match"], np.zeros(size, np.int64)),
        "partitions": np.zeros(size, np.int32),
        "bucket": np.full(size, -1, np.int32),
    }


BLOCKS = {
    "mapping": mapping_block,
    "partition": partition_block,
    "weighted": weighted_block,
    "validation": validation_block,
    "matching": matching_block,
}


def part(rng: np.random.Generator, rows: int, first_id: int) -> pa.Table:
    """``rows`` synthetic records: features in FEATURE_SHARES, releases evenly, rare divergences."""
    sizes = rng.multinomial(rows, FEATURE_SHARES)
    tables = []
    for feature, size in zip(FEATURES, sizes, strict=True):
        columns = BLOCKS[feature](rng, int(size))
        draw = rng.random(size)
        verdict = np.where(
            draw < DIVERGE,
            "diverge",
            np.where(
                draw < DIVERGE + EXPECTED,
                "expected",
                np.where(draw < DIVERGE + EXPECTED + UNKNOWN, "unknown", "agree"),
            ),
        )
        differs = verdict != "agree"
        difference = pick(["wrong-subject", "not-delivered", "duplicated"], rng.integers(0, 3, size))
        difference = pc.if_else(pa.array(differs & (verdict != "unknown")), difference, "")
        observed = (
            columns["expected"]
            if feature != "validation"
            else pc.if_else(
                pa.array(np.char.startswith(np.asarray(columns["expected"], dtype=str), "accept")),
                "accept",
                "reject",
            )
        )
        observed = pc.if_else(pa.array(differs), "", observed)
        if feature == "weighted":
            observed = pc.if_else(pa.array(columns["bucket"] == LOST), "", observed)
        tables.append(
            pa.table(
                {
                    "run_id": pick(["bench"], np.zeros(size, np.int64)),
                    "case_id": np.arange(size, dtype=np.int64),
                    "implementation": pick(["nats-server"], np.zeros(size, np.int64)),
                    "server_version": pick(list(RELEASES), rng.integers(0, len(RELEASES), size)),
                    "backend": pick(["process"], np.zeros(size, np.int64)),
                    "feature": pick([feature], np.zeros(size, np.int64)),
                    "functions": columns["functions"],
                    "source": columns["source"],
                    "destination": columns["destination"],
                    "subject": columns["subject"],
                    "expected": columns["expected"],
                    "observed": observed,
                    "verdict": text(verdict),
                    "kind": pick(["case"], np.zeros(size, np.int64)),
                    "detail": pc.if_else(pa.array(verdict == "unknown"), "connection lost", ""),
                    "expectation": pc.if_else(pa.array(verdict == "expected"), "synthetic-known", ""),
                    "difference": difference,
                    "partitions": pa.array(columns["partitions"], pa.int32()),
                    "bucket": pa.array(columns["bucket"], pa.int64(), mask=columns["bucket"] < 0),
                    "outcome": outcome_column(feature, columns["bucket"]),
                    "seed": rng.integers(0, 2**31, size),
                    "duration_us": rng.integers(1, 100, size),
                    "stream_subjects": empty(ARROW_TYPES["stream_subjects"], size),
                    "headers_only": np.zeros(size, bool),
                    "weights": columns.get("weights", empty(WEIGHTS, size)),
                    "layout": empty(ARROW_TYPES["layout"], size),
                    "steps": empty(ARROW_TYPES["steps"], size),
                    "oracle": pick([""], np.zeros(size, np.int64)),
                }
            )
        )
    table = pa.concat_tables(tables)
    ids = pa.array(np.arange(first_id, first_id + table.num_rows, dtype=np.int64))
    return table.set_column(table.schema.get_field_index("case_id"), "case_id", ids).cast(SCHEMA)


def generate(run_dir: Path, rows: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    (run_dir / CASES).mkdir(parents=True)
    written = 0
    number = 0
    while written < rows:
        table = part(rng, min(PART_ROWS, rows - written), written)
        pq.write_table(table, run_dir / CASES / f"part-{number:05d}.parquet", compression="zstd")
        written += table.num_rows
        number += 1
    manifest = {
        "run_id": "bench",
        "schema_version": SCHEMA_VERSION,
        "cases": written,
        "written": written,
        "unwritten": 0,
    }
    (run_dir / MANIFEST).write_text(json.dumps(manifest))


STEP = re.compile(r"\[\s*([\d.]+)s\] (.*)")


def build(run_dir: Path, out: Path, engine: str, tree: Path) -> tuple[float, dict[str, float]]:
    """Wall seconds of one ``python -m nats_conformance.reports build`` of the checkout ``tree``, and when
    each progress step began."""
    began = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nats_conformance.reports",
            "build",
            str(run_dir),
            "--out",
            str(out),
            "--engine",
            engine,
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - began
    if result.returncode != 0:
        raise SystemExit(f"reports build --engine {engine} failed:\n{result.stderr}")
    steps = {}
    for line in result.stderr.splitlines():
        match = STEP.search(line)
        if match:
            steps[match.group(2)] = float(match.group(1))
    return wall, steps


def phases(steps: dict[str, float]) -> dict[str, float]:
    """Start-up, aggregation and rendering seconds from the progress lines (see reports/build.py)."""

    def at(prefix: str) -> float:
        return next(value for key, value in steps.items() if key.startswith(prefix))

    aggregating = at("aggregating with")
    derived = at("computing statistics")
    return {
        "engine start": aggregating - at("starting Spark") if "starting Spark (local[*])" in steps else 0.0,
        "aggregations": derived - aggregating,
        "statistics + rendering": at("wrote") - derived,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this run directory")
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    parser.add_argument("--baseline-engines", default="spark,arrow", help="its engines, comma-separated")
    arguments = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-reports-"))
    try:
        run_dir = arguments.keep or scratch / "run"
        if not (run_dir / MANIFEST).exists():
            began = time.perf_counter()
            generate(run_dir, arguments.rows)
            seconds = time.perf_counter() - began
            size = sum(p.stat().st_size for p in (run_dir / CASES).iterdir()) / 1e6
            print(f"generated {arguments.rows:,} records ({size:,.0f} MB) in {seconds:.1f} s")
        runs = [(f"{engine}", engine, ROOT) for engine in ("spark", "duckdb")]
        if arguments.baseline:
            engines = arguments.baseline_engines.split(",")
            runs += [(f"baseline {engine}", engine, arguments.baseline) for engine in engines]
        walls: dict[str, list[float]] = {name: [] for name, _, _ in runs}
        parts: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in runs}
        for repeat in range(arguments.repeats):
            for name, engine, tree in runs:
                out = scratch / f"out-{name.replace(' ', '-')}"
                wall, steps = build(run_dir, out, engine, tree)
                walls[name].append(wall)
                parts[name].append(phases(steps))
                shown = ", ".join(f"{phase} {value:.1f} s" for phase, value in parts[name][-1].items())
                print(f"  run {repeat + 1}: {name:15s} {wall:6.1f} s  ({shown})", flush=True)
        print(
            f"\n{arguments.rows:,} records to a finished report (median of {arguments.repeats}, end to end):"
        )
        for name, times in walls.items():
            split = {phase: statistics.median(p[phase] for p in parts[name]) for phase in parts[name][0]}
            detail = ", ".join(f"{phase} {value:.1f} s" for phase, value in split.items())
            print(f"  {name:15s} {statistics.median(times):6.1f} s  ({detail})")
        summaries = []
        for name, _, _ in runs:
            summary = json.loads((scratch / f"out-{name.replace(' ', '-')}" / "summary.json").read_text())
            summary.pop("generated")
            summaries.append(summary)
        print(f"  the same summary.json from every build: {all(s == summaries[0] for s in summaries)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
