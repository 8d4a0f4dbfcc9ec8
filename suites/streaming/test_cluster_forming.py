"""The document's caveat on the duplicate rule: "on startup, it is possible that the underlying NATS cluster
is not fully formed ... Anytime a Streaming server detects that a NATS server was added to the NATS
cluster, it will resend its list of channels. It means that currently running servers may suddenly fail
with a message regarding duplicate channels."

Two partitioned servers with a channel in common (foo.* and foo.bar), each with its own embedded NATS
server and not yet routed to each other, both start; a third NATS server then joins both into one
cluster, and a server that finds the duplicate fails with a partitioning error naming the channel.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nats_conformance.fixtures.children import start_child
from nats_conformance.fixtures.servers.local import HOST, free_port
from nats_conformance.fixtures.servers.streaming import StreamingConfig, StreamingNetwork, failure_line
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.engine.verdicts import RunContext, make_case
from nats_conformance.suites.families.streaming import FEATURE
from nats_conformance.suites.reproduce import describe_divergences

pytestmark = [pytest.mark.live, pytest.mark.streaming]

SOURCE = '[["foo.*"],["foo.bar"]] on separate NATS servers, then joined into one cluster'
LATE_FAILURE = 'Partitioning error: channel "foo.bar" causes conflict with channels on server'


def test_running_servers_fail_when_the_cluster_forms(
    streaming_network: StreamingNetwork,
    streaming_context: RunContext,
    recorder: RecordWriter,
    tmp_path: Path,
) -> None:
    cluster = {name: free_port() for name in ("a", "b", "joiner")}
    cluster_id = "forming"
    configs = [StreamingConfig(cluster_id, ("foo.*",)), StreamingConfig(cluster_id, ("foo.bar",))]
    arguments = [
        ["-a", HOST, "-p", str(free_port()), "-cluster", f"nats://{HOST}:{cluster['a']}"],
        [
            *("-a", HOST, "-p", str(free_port()), "-cluster", f"nats://{HOST}:{cluster['b']}"),
            *("-routes", f"nats://{HOST}:{cluster['joiner']}"),
        ],
    ]
    joiner = None
    try:
        servers = streaming_network.start_servers(
            configs, depends=lambda _j, _k: False, embedded=True, arguments=arguments
        )
        before = [server.result.state if server.result else "not started" for server in servers]
        joiner = start_child(
            [
                str(streaming_network.nats.binary),
                *("-a", HOST, "-p", str(free_port()), "-cluster", f"nats://{HOST}:{cluster['joiner']}"),
                *("-routes", f"nats://{HOST}:{cluster['a']}"),
            ],
            log=tmp_path / "joiner.log",
            cwd=tmp_path,
            dies_with_thread=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and all(server.is_running() for server in servers):
            time.sleep(0.05)
        time.sleep(0.5)
        after = [
            "running" if server.is_running() else f"failed: {failure_line(server.logs())}"
            for server in servers
        ]
    finally:
        if joiner is not None:
            joiner.stop()
        streaming_network.stop_servers()
    failed = [state for state in after if state.startswith("failed: ")]
    observed = f"before: {' + '.join(before)}; after: {' | '.join(after)}"
    agrees = before == ["started", "started"] and bool(failed) and all(LATE_FAILURE in s for s in failed)
    case = make_case(
        streaming_context,
        feature=FEATURE,
        functions=("cluster-forming",),
        source=SOURCE,
        destination="servers 1 and 2",
        expected="both start; once routed, one fails: duplicate-channel",
        observed=observed,
        difference="" if agrees else "reference-late-duplicate-server-other",
    )
    recorder.add(case)
    assert case.verdict == "agree", describe_divergences([case])
    assert len(failed) == 1 or all(LATE_FAILURE in state for state in failed)
