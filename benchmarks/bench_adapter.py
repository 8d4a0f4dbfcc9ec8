"""Adapter-target throughput: questions judged per second end to end, side by side with the raw round
trip of the same questions to the same adapter process.

Run: ``.venv/bin/python benchmarks/bench_adapter.py [--questions N] [--repeats R] [--adapter CMD]``.
End to end is the library family run by the engine (``suites.engine.run.run_family`` on an
``AdapterSession``: Hypothesis-drawn structures with seeded bulk, drawn by a process of their own,
``SIDE_BY_SIDE`` families per round trip, the reference's answer to every question, judging, case
building), then the minimisation of every unexpected divergence class (``suites.engine.shrink``; with no
expectations here, every class; the default adapter, ``examples/adapters/correct.py``, has none). The
baseline sends the same questions, already drawn, through ``AdapterProcess.ask`` in batches of 2,000
and does nothing else.
Prints medians of R repeats, their ratio, and the median time minimisation took of the end to end run.
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

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case, CaseBlock
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.protocol import Question
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.run import run_family, unwritten
from nats_conformance.suites.engine.shrink import minimise
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import LIBRARY
from nats_conformance.suites.families.library import BACKEND, AdapterSession

ROOT = Path(__file__).resolve().parents[1]
BATCH = 2000
"""Questions per round trip of the baseline."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    default = f"{shlex.quote(sys.executable)} {ROOT / 'examples/adapters/correct.py'}"
    parser.add_argument("--adapter", default=default)
    arguments = parser.parse_args()
    end_to_end, raw, minimising = [], [], []
    with AdapterProcess(arguments.adapter) as adapter:
        for _ in range(arguments.repeats):
            asked: list[Case | CaseBlock] = []
            counter = itertools.count()
            context = RunContext(
                "bench", adapter.implementation, "2.14.5", BACKEND, Expectations(), counter.__next__
            )
            started = time.perf_counter()
            # run_adapter's steps, timed apart
            session = AdapterSession(adapter, for_version("2.14.5"))
            sink = unwritten(also=asked.extend, shrinks=True)
            run_family(LIBRARY, session, context, budget=arguments.questions, seed=0, sink=sink)
            asking = time.perf_counter()
            minimise(LIBRARY, session, context, sink.smallest or {}, unwritten())
            finished = time.perf_counter()
            cases = cases_of(asked)
            end_to_end.append(len(cases) / (finished - started))
            minimising.append(finished - asking)
            questions = [question_of(case) for case in cases]
            started = time.perf_counter()
            for offset in range(0, len(questions), BATCH):
                adapter.ask(questions[offset : offset + BATCH])
            raw.append(len(questions) / (time.perf_counter() - started))
    e2e, base = statistics.median(end_to_end), statistics.median(raw)
    print(f"adapter: {adapter.implementation}, {arguments.questions} questions x {arguments.repeats} repeats")
    print(f"end to end (draw, ask, judge, record): {e2e:12,.0f} questions/s (median)")
    print(f"raw round trip of the same questions:  {base:12,.0f} questions/s (median)")
    print(f"ratio: {e2e / base:.2f}")
    print(f"of which minimising divergence classes: {statistics.median(minimising):.2f} s (median)")


def question_of(case: Case) -> Question:
    """The adapter question a library-family case asked."""
    question = CaseFile.of(case).question()
    assert question is not None
    return question


if __name__ == "__main__":
    main()
