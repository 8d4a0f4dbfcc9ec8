"""The document's "Fault Tolerance and Partitioning" example (``suites.streaming.fault_tolerance``): its
command lines as written are refused (``ft-group-name-not-a-flag``); with ``-ft_group`` two FT pairs
share one cluster, each partition answers its channels, and the foo standby takes over with the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from nats_conformance.fixtures.servers.streaming import StreamingNetwork
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.reproduce import describe_divergences
from nats_conformance.suites.streaming.fault_tolerance import DOCUMENTED_FLAG, PARTITIONS, run_example

pytestmark = [pytest.mark.live, pytest.mark.streaming]


def test_documented_fault_tolerance_and_partitioning(
    streaming_network: StreamingNetwork,
    streaming_context: RunContext,
    recorder: RecordWriter,
    tmp_path: Path,
) -> None:
    run = run_example(streaming_network, streaming_context, tmp_path)
    recorder.extend(run.cases)
    bad = [case for case in run.cases if case.verdict in ("diverge", "unknown")]
    assert not bad, describe_divergences(bad)
    assert run.as_written == f"flag provided but not defined: {DOCUMENTED_FLAG}"
    assert (run.cases[0].verdict, run.cases[0].expectation) == ("expected", "ft-group-name-not-a-flag")
    assert run.roles == {("host1", p): "active" for p in PARTITIONS} | {
        ("host2", p): "standby" for p in PARTITIONS
    }
    assert run.took_over, "the standby foo server did not take over"
    published = {case.subject: case.observed for case in run.cases if case.functions == "publish"}
    assert published == {
        "foo.a": "accepted by 1",
        "bar.b": "accepted by 2",
        "baz": "timeout",
        "foo.c": "accepted by 1",
        "bar.d": "accepted by 2",
    }
    assert run.cases[-1].observed == "1 message(s)"
