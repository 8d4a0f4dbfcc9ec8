"""Republished messages checked per second on a live server, beside the raw rates of the same client.

    .venv/bin/python benchmarks/bench_republish.py [--version 2.14.5] [--messages 20000] [--repeats 3]

One JetStream server (process backend, memory storage). Each repeat creates a fresh stream with a
RePublish option (``b.*.*`` -> ``rb.{{wildcard(2)}}.{{partition(10,1,2)}}``), publishes ``--messages``
messages pipelined (no acks) with one application header, and reads the republished messages on a
second connection:

* core: the same publish -> receive with no JetStream (a plain subscription on the subjects);
* raw: publish -> receive through the stream, messages only counted;
* checked: the same, and every message predicted by ``reference.republish.StreamModel`` and judged
  (subject, body, every header, time-stamp form) into a recorded case (``suites.families.republish``).

Rates are messages per second from the first publish to the last message read (medians of repeats).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nats_conformance.fixtures.clients.jetstream import JetStreamClient, jetstream_config
from nats_conformance.fixtures.clients.wire import WireConnection
from nats_conformance.fixtures.provision import parse_version_spec, resolve_binary
from nats_conformance.fixtures.servers.process import ProcessBackend
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.republish import RePublish, StreamModel, rules_for
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.republish import MessageLedger, stream_config

OPTION = RePublish("b.*.*", "rb.{{wildcard(2)}}.{{partition(10,1,2)}}")
SUBJECTS = ("b.*.*",)
HEADERS = {"X-Trace": "bench"}
CHUNK = 500


def subjects_for(count: int) -> list[str]:
    return [f"b.k{i % 97}.v{i % 13}" for i in range(count)]


def publish_all(url: str, subjects: list[str], *, headers: dict[str, str] | None) -> None:
    with WireConnection(url) as publisher:
        for start in range(0, len(subjects), CHUNK):
            for subject in subjects[start : start + CHUNK]:
                publisher.publish(subject, b"payload-0123456789", headers=headers)
            publisher.send()
        publisher.flush(timeout=30)


def core_rate(url: str, subjects: list[str]) -> float:
    with JetStreamClient(url, timeout=30) as reader:
        reader.tap("b.>")
        began = time.perf_counter()
        publish_all(url, subjects, headers=HEADERS)
        done = reader.wait_for(len(subjects), 30)
        elapsed = time.perf_counter() - began
    assert done, "core messages lost"
    return len(subjects) / elapsed


def republish_rate(
    url: str, name: str, subjects: list[str], *, check: RunContext | None, writer: RecordWriter | None
) -> float:
    rules = rules_for("2.14.5") if check is None else rules_for(check.server_version)
    with JetStreamClient(url, timeout=30) as reader:
        reader.tap("rb.>")
        reply = reader.create_stream(stream_config(name, SUBJECTS, OPTION))
        assert "error" not in reply, reply
        began = time.perf_counter()
        publish_all(url, subjects, headers=HEADERS)
        if check is not None and writer is not None:
            model = StreamModel(name, SUBJECTS, OPTION, rules)
            ledger = MessageLedger(SUBJECTS, OPTION)
            pairs = tuple(HEADERS.items())
            for subject in subjects:
                model.publish(subject, b"payload-0123456789", pairs)
            done = reader.wait_for(len(subjects), 30)
            cases = ledger.judge(check, model.republished, reader.tapped, final=True)
            for case in cases:
                writer.add(case)
            bad = [case for case in cases if case.verdict != "agree"]
            assert not bad, bad[:3]
        else:
            done = reader.wait_for(len(subjects), 30)
        elapsed = time.perf_counter() - began
        reader.delete_stream(name)
    assert done, "republished messages lost"
    return len(subjects) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="2.14.5")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    server = ProcessBackend(resolve_binary(parse_version_spec(arguments.version)))
    names = (f"BENCH{i}" for i in itertools.count())
    subjects = subjects_for(arguments.messages)
    rates: dict[str, list[float]] = {"core": [], "raw": [], "checked": []}
    with tempfile.TemporaryDirectory(prefix="bench-republish-") as records:
        writer = RecordWriter(Path(records) / "run", run_id="bench")
        try:
            server.start(jetstream_config(server))
            counter = itertools.count()
            context = RunContext.for_server(
                server, run_id="bench", expectations=Expectations(), next_case_id=lambda: next(counter)
            )
            for _ in range(arguments.repeats):
                rates["core"].append(core_rate(server.url, subjects))
                rates["raw"].append(
                    republish_rate(server.url, next(names), subjects, check=None, writer=None)
                )
                rates["checked"].append(
                    republish_rate(server.url, next(names), subjects, check=context, writer=writer)
                )
        finally:
            writer.close()
            server.cleanup()
    print(
        f"nats-server {server.version}, {arguments.messages} messages x {arguments.repeats} repeats "
        f"(process backend, memory storage)"
    )
    print(f"{'path':<9} {'median msg/s':>13} {'min':>10} {'max':>10}")
    for path, values in rates.items():
        print(f"{path:<9} {statistics.median(values):>13,.0f} {min(values):>10,.0f} {max(values):>10,.0f}")


if __name__ == "__main__":
    main()
