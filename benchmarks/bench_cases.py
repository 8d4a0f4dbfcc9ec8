"""Live mapping cases per second end to end, beside the raw publish rate of the same client.

    .venv/bin/python benchmarks/bench_cases.py [--version V] [--cases N] [--batches B] [--repeats R]

"Raw" publishes and observes the same subjects through the same wire tap with no reference and no
records; "cases" is the whole pipeline (reference, verdicts, records written as Parquet). "Without the
reference" is the same pipeline with the reference's subjects worked out before the clock starts: the
bound that judging and recording alone leave, whatever the reference costs; the time that working them
out takes on one core is printed too. `--batches N` runs the cases as N batches in turn, as a campaign
does (each batch's records are encoded while the next one is published). The one-million figure
includes server start-up.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nats_conformance.fixtures.config import Mapping, ServerConfig
from nats_conformance.fixtures.provision import resolve_binary
from nats_conformance.fixtures.servers.process import ProcessBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.engine.family import check, record, verdicts
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.expected import ExpectedSubjects
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.families import mapping as mapping_family
from nats_conformance.suites.families.mapping import compile_batch
from nats_conformance.suites.harness import publish_and_observe
from nats_conformance.suites.strategies import MappingBatch, bulk_subjects

MAPPINGS = tuple(
    (f"m{i}.*.*", f"out{i}.{{{{wildcard(2)}}}}.{{{{partition(10,1,2)}}}}.{{{{split(1,-)}}}}")
    for i in range(20)
)


def batch_of(cases: int, seed: int) -> MappingBatch:
    rng = random.Random(seed)
    pool = [f"k{i}-{rng.randrange(10**6)}" for i in range(1000)]
    per = cases // len(MAPPINGS)
    subjects = tuple(tuple(bulk_subjects(source, rng, per, pool=pool)) for source, _ in MAPPINGS)
    return MappingBatch(MAPPINGS, subjects, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="2.14.5")
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=1, help="run the cases as this many batches, in turn")
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    binary = resolve_binary(arguments.version)
    batches = [batch_of(arguments.cases // arguments.batches, seed + 1) for seed in range(arguments.batches)]
    publications = [[subject for group in batch.subjects for subject in group] for batch in batches]
    raw_rates, case_rates, bound_rates, totals, reference_times = [], [], [], [], []
    for repeat in range(arguments.repeats):
        began = time.perf_counter()
        server = ProcessBackend(binary)
        server.start(ServerConfig())
        try:
            elapsed, counts = judged_run(server, batches)
            totals.append(time.perf_counter() - began)
            case_rates.append(counts.total() / elapsed)
            profile = Session.of(server).profile
            started = time.perf_counter()
            ready = [ExpectedSubjects(compile_batch(batch, profile), parallel=False) for batch in batches]
            for expected in ready:
                expected.of(expected.groups[0][0])
            reference_times.append(time.perf_counter() - started)
            with mock.patch.object(mapping_family, "ExpectedSubjects", side_effect=ready):
                elapsed, counts = judged_run(server, batches)
            bound_rates.append(counts.total() / elapsed)
            server.apply(ServerConfig().with_mappings(*(Mapping(s, d) for s, d in MAPPINGS)))
            started = time.perf_counter()
            received = sum(publish_and_observe(server.url, subjects).received for subjects in publications)
            raw_rates.append(received / (time.perf_counter() - started))
        finally:
            server.cleanup()
        print(
            f"repeat {repeat + 1}: {counts.total()} cases ({counts['agree']} agree) at"
            f" {case_rates[-1]:,.0f}/s; without the reference {bound_rates[-1]:,.0f}/s;"
            f" raw {raw_rates[-1]:,.0f} msg/s; with server start {totals[-1]:.1f} s",
            flush=True,
        )
    raw, cases, bound = (statistics.median(rates) for rates in (raw_rates, case_rates, bound_rates))
    print(f"median: cases {cases:,.0f}/s, raw publish+observe {raw:,.0f} msg/s, ratio {cases / raw:.2f}")
    print(f"median without the reference: {bound:,.0f} cases/s, ratio {bound / raw:.2f}")
    alone = statistics.median(reference_times)
    print(f"median time of the reference alone (one core, this process): {alone:.2f} s for the cases")
    total = statistics.median(totals)
    print(f"median time for {arguments.cases:,} live cases including server start: {total:.1f} s")


def judged_run(server: ProcessBackend, batches: list[MappingBatch]) -> tuple[float, Counter[str]]:
    """The batches judged in turn into one fresh records directory: (seconds, verdict counts)."""
    counts = Counter[str]()
    with tempfile.TemporaryDirectory() as directory, RecordWriter(Path(directory) / "run") as writer:
        context = RunContext(
            "bench", "nats-server", server.version, "process", Expectations(), writer.next_case_id
        )
        session = Session.of(server)
        started = time.perf_counter()
        for batch in batches:
            judged = check(FAMILIES["mapping"], session, context, batch)
            record(writer, judged)
            counts.update(verdicts(judged))
        writer.flush()
        return time.perf_counter() - started, counts


if __name__ == "__main__":
    main()
