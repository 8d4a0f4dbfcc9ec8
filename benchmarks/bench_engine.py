"""Engine-target throughput: questions answered per second by the transform engine of a release
(`--target engine:RELEASE`) beside the reference adapter (`python -m nats_conformance.reference serve`) in the
same run.

Run: ``.venv/bin/python benchmarks/bench_engine.py [--release 2.14.5] [--questions N] [--repeats R]``.
The questions are the library family's (``suites.families.library``, the release's profile), drawn
once. Each repeat runs the library family against the engine (``suites.engine.run.run_family``: draw,
ask, judge against the reference, build cases; not the minimisation of divergence classes), then sends
its questions to each adapter through ``AdapterProcess.ask`` in batches of ``BATCH`` (encode, pipe,
answer, decode: the round trip a campaign pays per question). Prints
medians of R repeats.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_adapter import question_of

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.fixtures.engine import engine_command
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case, CaseBlock
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.protocol import Question
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.run import run_family, unwritten
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import LIBRARY
from nats_conformance.suites.families.library import BACKEND, AdapterSession

REFERENCE = f"{shlex.quote(sys.executable)} -m nats_conformance.reference serve"
ROOT = Path(__file__).resolve().parents[1]
BATCH = 2000
"""Questions per round trip."""


def round_trip(adapter: AdapterProcess, questions: list[Question]) -> float:
    """Questions per second of asking `questions` in batches."""
    started = time.perf_counter()
    for offset in range(0, len(questions), BATCH):
        answers = adapter.ask(questions[offset : offset + BATCH])
        assert all(answer is not None for answer in answers), adapter.failures
    return len(questions) / (time.perf_counter() - started)


def library_rate(adapter: AdapterProcess, release: str, questions: int) -> tuple[float, list[Case]]:
    """Questions per second of the library loop against `adapter`, and the cases it made."""
    asked: list[Case | CaseBlock] = []
    counter = itertools.count()
    context = RunContext("bench", adapter.implementation, release, BACKEND, Expectations(), counter.__next__)
    started = time.perf_counter()
    sink = unwritten(also=asked.extend)
    run_family(
        LIBRARY, AdapterSession(adapter, for_version(release)), context, budget=questions, seed=0, sink=sink
    )
    cases = cases_of(asked)
    return len(cases) / (time.perf_counter() - started), cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default="2.14.5")
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    engine_rates, reference_rates, library_rates = [], [], []
    with (
        AdapterProcess(engine_command(arguments.release)) as engine,
        AdapterProcess(REFERENCE, cwd=ROOT) as reference,
    ):
        questions: list[Question] = []
        for _ in range(arguments.repeats):
            rate, asked = library_rate(engine, arguments.release, arguments.questions)
            library_rates.append(rate)
            questions = questions or [question_of(case) for case in asked]
            engine_rates.append(round_trip(engine, questions))
            reference_rates.append(round_trip(reference, questions))
    print(f"{len(questions)} questions (profile {arguments.release}) x {arguments.repeats} repeats, medians:")
    print(f"  {engine.implementation:<32} {statistics.median(engine_rates):12,.0f} questions/s round trip")
    print(
        f"  {reference.implementation:<32} {statistics.median(reference_rates):12,.0f} questions/s round trip"
    )
    print(f"  library loop against the engine  {statistics.median(library_rates):12,.0f} questions/s")
    print("  (draw, ask, judge against the reference, build cases; no minimisation)")


if __name__ == "__main__":
    main()
