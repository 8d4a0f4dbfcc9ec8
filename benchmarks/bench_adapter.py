"""Adapter-target throughput: questions judged per second end to end, side by side with the raw round
trip of the same questions to the same adapter process.

Run: ``.venv/bin/python benchmarks/bench_adapter.py [--questions N] [--repeats R] [--adapter CMD]``.
End to end is ``suites.library.run_library`` (Hypothesis-drawn families, pipelined asks, the reference's
answer to every request, judging, case building; no minimisation needed: the default adapter is
``examples/adapters/correct.py``). The baseline sends the same questions, already drawn, through
``AdapterProcess.ask`` and does nothing else. Prints medians of R repeats and their ratio.
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

from fixtures.clients.adapter import AdapterProcess
from records.casefile import CaseFile
from records.expectations import Expectations
from records.schema import Case
from suites.differential import RunContext
from suites.library import BACKEND, BATCH, run_library

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    default = f"{shlex.quote(sys.executable)} {ROOT / 'examples/adapters/correct.py'}"
    parser.add_argument("--adapter", default=default)
    arguments = parser.parse_args()
    end_to_end, raw = [], []
    with AdapterProcess(arguments.adapter) as adapter:
        for _ in range(arguments.repeats):
            asked: list[Case] = []
            counter = itertools.count()
            context = RunContext(
                "bench", adapter.implementation, "2.14.5", BACKEND, Expectations(), counter.__next__
            )
            started = time.perf_counter()
            run_library(adapter, context, asked.extend, cases=arguments.questions)
            end_to_end.append(len(asked) / (time.perf_counter() - started))
            requests = [_request(case) for case in asked]
            started = time.perf_counter()
            for offset in range(0, len(requests), BATCH):
                adapter.ask(requests[offset : offset + BATCH])
            raw.append(len(requests) / (time.perf_counter() - started))
    e2e, base = statistics.median(end_to_end), statistics.median(raw)
    print(f"adapter: {adapter.implementation}, {arguments.questions} questions x {arguments.repeats} repeats")
    print(f"end to end (draw, ask, judge, record): {e2e:12,.0f} questions/s (median)")
    print(f"raw round trip of the same questions:  {base:12,.0f} questions/s (median)")
    print(f"ratio: {e2e / base:.2f}")


def _request(case: Case) -> dict[str, object]:
    request = CaseFile.of(case).request()
    assert request is not None
    return request


if __name__ == "__main__":
    main()
