"""Coverage-guided drawing against unguided drawing: the code of nats-server's server package that a
fixed number of questions to a -cover engine reaches, with and without guidance.

    .venv/bin/python benchmarks/bench_guidance.py [--release 2.14.9] [--questions 10000] [--seeds 5]

For each seed, `nats-conformance coverage --target engine:R --cases N --seed S` runs once guided (the
engine answers `coverage`, each family scores the blocks it ran first: `suites.engine.run.run_family`
with guidance) and once `--unguided`, in fresh processes, into a scratch folder. From each run's merged
profile it counts the blocks of the server package that ran, and from its coverage.json the statements of
server/subject_transform.go and of the mapping surface. The table gives the median, minimum and
maximum over the seeds of each mode, and the ratio of the guided median to the unguided one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nats_conformance.records.coverage import COVERAGE_FILE  # noqa: E402
from nats_conformance.suites.coverage import PROFILE, SHOWN_FILE  # noqa: E402

MODES = {"guided": [], "unguided": ["--unguided"]}
MEASURES = ("server blocks", SHOWN_FILE, "surface statements", "seconds")


def blocks_reached(profile: Path) -> int:
    """The blocks of the server package a merged text profile counts as run (`path:span statements
    count` lines)."""
    reached = set()
    for line in profile.read_text().splitlines()[1:]:
        place, _statements, count = line.rsplit(" ", 2)
        if "/server/" in place and int(count) > 0:
            reached.add(place)
    return len(reached)


def measure(release: str, questions: int, seed: int, flags: list[str], scratch: Path) -> dict[str, float]:
    out = scratch / f"{seed}-{'-'.join(flags) or 'guided'}"
    started = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nats_conformance.suites",
            "coverage",
            "--target",
            f"engine:{release}",
            "--cases",
            str(questions),
            "--seed",
            str(seed),
            *flags,
            "--out",
            str(out),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    seconds = time.monotonic() - started
    (run,) = out.iterdir()
    document = json.loads((run / COVERAGE_FILE).read_text())
    shown = next(item for item in document["files"] if item["path"] == SHOWN_FILE)
    return {
        "server blocks": blocks_reached(run / PROFILE),
        SHOWN_FILE: shown["covered"],
        "surface statements": document["covered"],
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", default="2.14.9")
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=5)
    arguments = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {mode: {m: [] for m in MEASURES} for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="bench-guidance-") as scratch:
        for seed in range(1, arguments.seeds + 1):
            for mode, flags in MODES.items():
                figures = measure(arguments.release, arguments.questions, seed, flags, Path(scratch))
                for name, value in figures.items():
                    results[mode][name].append(value)
                print(f"seed {seed} {mode}: {figures}", file=sys.stderr)
    questions, seeds = f"{arguments.questions:,}", arguments.seeds
    print(f"nats-server {arguments.release} engine, {questions} questions, seeds 1-{seeds}")
    print("| measure | guided median (min-max) | unguided median (min-max) | guided / unguided |")
    print("|---|---|---|---|")
    for name in MEASURES:
        guided, unguided = results["guided"][name], results["unguided"][name]
        ratio = statistics.median(guided) / statistics.median(unguided)
        print(
            f"| {name} | {statistics.median(guided):.0f} ({min(guided):.0f}-{max(guided):.0f}) "
            f"| {statistics.median(unguided):.0f} ({min(unguided):.0f}-{max(unguided):.0f}) | {ratio:.3f} |"
        )


if __name__ == "__main__":
    main()
