"""The document's "Fault Tolerance and Partitioning" example, on one machine, as a scenario of cases.

Two partitions (foo.conf with foo.>, bar.conf with bar.>), each an FT pair sharing a file store, four
servers with embedded NATS servers routed into one mesh as in the document's command lines: host1 and
host2 become two sets of 127.0.0.1 ports, /nss/datastore a temporary directory. The document's command
lines are run first as written; their `-ft_group_name` option is not a command-line flag of the server
(the configuration-file key is), which is the `ft-group-name-not-a-flag` divergence. With `-ft_group`
in its place the example holds: one active server and one standby per partition, a client of the
cluster reaches both partitions, and after the active foo server dies its standby serves foo.> with the
messages stored before.

Every step is a case (feature `streaming`, function `fault-tolerance` for roles, `publish`/`subscribe`/
`receive` for requests); the cases' `source` is `EXAMPLE_SOURCE`, which `python -m nats_conformance.suites
replay --feature streaming --source ...` recognises and runs again.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from nats_conformance.fixtures.clients.streaming import StreamingClient, StreamingTimeoutError
from nats_conformance.fixtures.provision import NATS_STREAMING_SERVER, binary_version, resolve_binary
from nats_conformance.fixtures.servers.local import HOST, free_port
from nats_conformance.fixtures.servers.streaming import StreamingConfig, StreamingServer, StreamingServers
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case
from nats_conformance.suites.engine.verdicts import RunContext, make_case
from nats_conformance.suites.families.streaming import FEATURE, IMPLEMENTATION, LayoutRun, probe_and_judge
from nats_conformance.suites.streaming.layouts import Layout

PARTITIONS = {"foo": "foo.>", "bar": "bar.>"}
HOSTS = ("host1", "host2")
DOCUMENTED_FLAG = "-ft_group_name"
SERVER_FLAG = "-ft_group"
EXAMPLE_SOURCE = '{"example":"fault-tolerance-and-partitioning","partitions":["foo.>","bar.>"]}'
"""The `source` of this scenario's cases (JSON, not a layout: replay runs the whole scenario)."""


class Mesh:
    """Ports of the example: a client and a cluster port per (host, partition)."""

    def __init__(self) -> None:
        self.client = {(host, part): free_port() for host in HOSTS for part in PARTITIONS}
        self.cluster = {(host, part): free_port() for host in HOSTS for part in PARTITIONS}

    def arguments(self, host: str, part: str, datastore: Path, flag: str) -> list[str]:
        """The document's command line for `part` on `host`, with its hosts and ports mapped here."""
        other = HOSTS[1 - HOSTS.index(host)]
        routes = ",".join(f"nats://{HOST}:{self.cluster[other, p]}" for p in PARTITIONS)
        return [
            "-store",
            "file",
            "-dir",
            str(datastore / f"{part}data"),
            flag,
            part,
            "-a",
            HOST,
            "-p",
            str(self.client[host, part]),
            "-cluster",
            f"nats://{HOST}:{self.cluster[host, part]}",
            "-routes",
            routes,
        ]

    def url(self, host: str, part: str) -> str:
        return f"nats://{HOST}:{self.client[host, part]}"


def ft_case(
    context: RunContext, *, what: str, expected: str, observed: str, difference: str, detail: str = ""
) -> Case:
    return make_case(
        context,
        feature=FEATURE,
        functions=("fault-tolerance",),
        source=EXAMPLE_SOURCE,
        destination=what,
        expected=expected,
        observed=observed,
        difference=difference,
        detail=detail,
    )


def start_pairs(
    network: StreamingServers, cluster_id: str, mesh: Mesh, datastore: Path, flag: str
) -> dict[tuple[str, str], StreamingServer]:
    """Start the four servers: host1's foo and bar together, then host2's once those are settled (the
    document starts them one by one; only which member of a pair comes first matters)."""
    servers: dict[tuple[str, str], StreamingServer] = {}
    for host in HOSTS:
        started = network.start_servers(
            [StreamingConfig(cluster_id, (channel,)) for channel in PARTITIONS.values()],
            depends=lambda _j, _k: False,
            embedded=True,
            arguments=[mesh.arguments(host, part, datastore, flag) for part in PARTITIONS],
        )
        servers.update(zip(((host, part) for part in PARTITIONS), started, strict=True))
    return servers


def state(server: StreamingServer) -> str:
    result = server.result
    if result is None:
        return "not started"
    return {"started": "active", "standby": "standby"}.get(result.state, f"{result.state}: {result.message}")


@dataclass(slots=True)
class FaultToleranceRun:
    """The scenario's cases and what the test asserts on besides them."""

    cases: list[Case] = field(default_factory=list)
    as_written: str = ""
    roles: dict[tuple[str, str], str] = field(default_factory=dict)
    took_over: bool = False


def run_example(network: StreamingServers, context: RunContext, datastore: Path) -> FaultToleranceRun:
    """Run the example on `network` (its NATS server is not used: the servers form their own mesh),
    with file stores under `datastore`; every server it starts is stopped before it returns."""
    cluster_id = f"nc-ft-{uuid.uuid4().hex[:8]}"
    mesh = Mesh()
    run = FaultToleranceRun()
    try:
        # As written: -ft_group_name on the command line.
        as_written = network.server(
            StreamingConfig(cluster_id, (PARTITIONS["foo"],)),
            embedded=True,
            arguments=mesh.arguments("host1", "foo", datastore / "as-written", DOCUMENTED_FLAG),
        )
        result = as_written.start()
        as_written.stop()
        run.as_written = result.message
        run.cases.append(
            ft_case(
                context,
                what="host1 foo, the document's command line",
                expected="active",
                observed=state(as_written),
                difference="" if result.started else "document-command-line-refused",
                detail=result.message,
            )
        )

        # With the server's flag: two FT pairs.
        servers = start_pairs(network, cluster_id, mesh, datastore, SERVER_FLAG)
        wanted = {("host1", p): "active" for p in PARTITIONS} | {("host2", p): "standby" for p in PARTITIONS}
        for key, server in servers.items():
            run.roles[key] = state(server)
            run.cases.append(
                ft_case(
                    context,
                    what=f"{key[0]} {key[1]} with {SERVER_FLAG}",
                    expected=wanted[key],
                    observed=state(server),
                    difference="" if state(server) == wanted[key] else "wrong-ft-role",
                    detail=server.result.message if server.result else "",
                )
            )
        if run.roles != wanted:
            return run

        layout = Layout.of([PARTITIONS["foo"]], [PARTITIONS["bar"]])
        actives = LayoutRun(layout, cluster_id, [servers["host1", "foo"], servers["host1", "bar"]])
        run.cases += probe_and_judge(mesh.url("host2", "bar"), actives, ("foo.a", "bar.b", "baz"), context)

        # The active foo server dies: its standby takes over and serves foo.> from the shared store.
        servers["host1", "foo"].kill()
        run.took_over = servers["host2", "foo"].wait_until_active(timeout=15)
        run.cases.append(
            ft_case(
                context,
                what="host2 foo after host1 foo died",
                expected="active",
                observed="active" if run.took_over else "standby",
                difference="" if run.took_over else "standby-did-not-take-over",
            )
        )
        if not run.took_over:
            return run
        after = LayoutRun(layout, cluster_id, [servers["host2", "foo"], servers["host1", "bar"]])
        run.cases += probe_and_judge(mesh.url("host2", "bar"), after, ("foo.c", "bar.d"), context)
        stored = asyncio.run(stored_messages(mesh.url("host1", "bar"), cluster_id, "foo.a"))
        run.cases.append(
            ft_case(
                context,
                what="foo.a after the failover",
                expected="1 message stored before the failover",
                observed=f"{stored} message(s)",
                difference="" if stored == 1 else "store-lost-on-failover",
            )
        )
        return run
    finally:
        network.stop_servers()


async def stored_messages(url: str, cluster_id: str, channel: str, *, quiet: float = 0.5) -> int:
    """How many messages `channel` holds: a subscription from the first, counted until `quiet`."""
    async with await StreamingClient.connect(url, cluster_id, "ft-reader") as client:
        subscription = await client.subscribe(channel, start="First")
        count = 0
        while True:
            try:
                await subscription.next_message(timeout=quiet)
            except StreamingTimeoutError:
                return count
            count += 1


def replay_example(release: str = "0.25") -> list[Case]:
    """The example run again on the build of nats-streaming-server `release` (what `python -m
    nats_conformance.suites replay` does for a case whose source is `EXAMPLE_SOURCE`); its servers embed their
    NATS servers."""
    binary = resolve_binary(release, NATS_STREAMING_SERVER)
    counter = itertools.count(1)
    context = RunContext(
        "replay", IMPLEMENTATION, binary_version(binary), "process", Expectations(), lambda: next(counter)
    )
    with StreamingServers("", binary) as servers:
        return run_example(servers, context, servers.workdir / "ft-datastore").cases
