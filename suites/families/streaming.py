"""Streaming family: partitioned NATS Streaming servers each serve exactly the channels of their list.

"NATS Streaming" → "Partitioning" (https://docs.nats.io/legacy/stan/nats-streaming-concepts/partitioning):
servers of one cluster ID, each with its own channel list, attached to one NATS server; a server whose
list has a channel in common with a running server must fail, and a request on a channel reaches the one
server that defines it. One unit is one layout (2-4 servers, as `suites.streaming.strategies` draws them)
and the channels probed on it; its nats-streaming-server processes join the target's NATS server for the
unit alone. Cases are nats-streaming-server's, at its binary's version.

Running (`observe_layout`: `launch_layout`, then `probe`) yields a `LayoutObservation`, the servers as
last seen and each channel's probe; judging (`judge_layout`: `judge_starts`, `judge_channels`) reads
only that. `start_layout` and `probe_and_judge` do both for the pytest properties
(`suites.streaming.test_channels`) and the fault-tolerance scenario (`suites.streaming.fault_tolerance`).
The streaming client needs protobuf and the registry imports this module in every process, so only the
probe imports the client (`fixtures.clients.streaming`), when it runs.

Cases (feature `streaming`; the `functions` column names what was checked; the `layout` column holds the
servers, labelled from 1 in start order):

* `startup`, one per server (`destination` = `server K`): started, or failed and why, against
  `reference.channels.start_outcome` given the servers that were running when it started. The server's
  own message is the case's `detail`. A duplicate-channel failure must also name a running server that
  has a channel in common and one of the two servers' entries.
* `publish` and `subscribe`, one per channel (`subject`): which running servers accepted or refused the
  request, or that none answered (timeout), against `publish_outcome` and `subscribe_outcome` given the
  servers that did start (so a start that diverged is one case, not a cascade). Who answered is read
  from each server's trace log (the publish's guid, the subscription's inbox), and the answers the
  client received are in `detail`.
* `receive`, one per channel whose subscription was accepted: how many times one message published on
  the channel reached the subscriber, against `deliveries` (each server serving the subscription
  delivers it once).

Differences are named `reference-<expected>-server-<observed>` (kinds), `wrong-servers` (same kind, other
servers), `duplicate-acks` (a server acknowledged one publish more than once), `duplicate-deliveries` or
`missing-deliveries`, and `conflict-names-wrong-server`; a server that neither started nor exited
in time, or a client that could not connect, makes its cases `unknown`, and a NATS server that stalled
while the channels were probed (`STALL`) makes the whole unit `unknown`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from nats_conformance.fixtures.errors import ServerDiedError, ServerStalledError
from nats_conformance.fixtures.provision import (
    NATS_STREAMING_SERVER,
    binary_version,
    cached_binary,
    parse_version_spec,
    resolve_binary,
)
from nats_conformance.fixtures.servers.streaming import (
    StartResult,
    StreamingConfig,
    StreamingServer,
    StreamingServers,
    has_protobuf,
)
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import Case
from nats_conformance.records.unknowns import CONNECTION_LOST, STEP_UNOBSERVED, stated
from nats_conformance.reference.channels import (
    ACCEPTED,
    DUPLICATE_CHANNEL,
    REFUSED,
    STARTED,
    TIMEOUT,
    RequestOutcome,
    ServerSpec,
    StartOutcome,
    deliveries,
    publish_outcome,
    start_outcome,
    subscribe_outcome,
)
from nats_conformance.reference.errors import (
    InvalidChannelError,
    InvalidVersionError,
    NoChannelError,
    PartitioningWithClusteringError,
)
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.versions import Version
from nats_conformance.suites.engine.family import Description, Judged, Schedule, TargetServer, beside
from nats_conformance.suites.engine.verdicts import RunContext, make_case
from nats_conformance.suites.streaming.layouts import Layout, layout_column, layout_of
from nats_conformance.suites.streaming.strategies import layouts_with_channels

if TYPE_CHECKING:
    from nats_conformance.fixtures.clients.streaming import StreamingClient

FEATURE = "streaming"
IMPLEMENTATION = NATS_STREAMING_SERVER.name
PROVISION = f"python -m nats_conformance.fixtures provision --product {NATS_STREAMING_SERVER.name}"
CONFLICT = re.compile(r'channel "(.*)" causes conflict with channels on server "(.*)"')
FAILURE_KINDS = (
    ("invalid channel name", InvalidChannelError.kind),
    ("could not subscribe to publish subject", InvalidChannelError.kind),
    ("no configured channel", NoChannelError.kind),
    ("partitioning in clustering mode", PartitioningWithClusteringError.kind),
    ("causes conflict with channels on server", DUPLICATE_CHANNEL),
)
"""The server's start-up failure messages (observed on 0.25.6) and the reference kind each one means; a
channel entry the subject rules forbid but the configuration parser lets through (a space) fails when
the server subscribes to its publish subject."""

NATS_LOST = (
    "no servers available",
    "connection refused",
    "connection closed",
    "connection reset by peer",
    "i/o timeout",
)
"""Signs, in a failed start's last words, that the NATS server under the streaming server was gone (a
fault of the run, such as a killed server, not the layout's): such a start is `unknown`. So is a start
whose last word is `EOF`: its connection ended while it read (0.25.6 says `Failed to start: EOF`)."""


def lost_nats(message: str) -> bool:
    """Whether a streaming server's failure says it lost (or never reached) its NATS server."""
    said = message.lower().strip()
    return any(sign in said for sign in NATS_LOST) or said == "eof" or said.endswith((": eof", " eof"))


REQUEST_TIMEOUT = 1.0
"""Seconds without an answer after which a publish or subscription counts as timed out."""
SETTLE = 0.25
"""Seconds to keep collecting answers (and deliveries) after the first one."""
STALL = REQUEST_TIMEOUT / 2
"""Seconds the NATS server under a layout may take to answer a PING while the channels are probed.
Longer, and a request may have timed out because that server stalled (stopped, or starved of CPU), not
because of the layout: `_observe` raises `ServerStalledError`, so the unit is `unknown`."""
PING_INTERVAL = 0.05


@dataclass(frozen=True, slots=True)
class ServerSeen:
    """One server of a layout as last seen: how its start ended, whether it still ran, and its log."""

    result: StartResult
    running: bool
    log: str


@dataclass(frozen=True, slots=True)
class LayoutSeen:
    """A layout's servers as last seen, in start order: what the judging reads (no process involved)."""

    layout: Layout
    servers: tuple[ServerSeen, ...]

    def running(self) -> list[tuple[int, ServerSpec]]:
        """(label, spec) of the servers that started and still ran."""
        return [
            (label, spec)
            for label, spec, server in zip(self.layout.labels(), self.layout, self.servers, strict=True)
            if server.result.started and server.running
        ]

    def label_of(self, server_id: str) -> int | None:
        for label, server in zip(self.layout.labels(), self.servers, strict=True):
            if server.result.server_id == server_id:
                return label
        return None

    def handled_by(self, needle: str) -> tuple[int, ...]:
        """Labels of the started servers whose log mentions `needle` (a guid or a subscription inbox)."""
        if not needle:
            return ()
        return tuple(
            label
            for label, server in zip(self.layout.labels(), self.servers, strict=True)
            if server.result.started and needle in server.log
        )


@dataclass(slots=True)
class LayoutRun:
    """A started layout: its live servers (with their results) and the cases of their starts."""

    layout: Layout
    cluster_id: str
    servers: list[StreamingServer]
    cases: list[Case] = field(default_factory=list)
    start_us: int = 0

    def seen(self) -> LayoutSeen:
        """The servers as they are now."""
        return LayoutSeen(
            self.layout,
            tuple(
                ServerSeen(
                    server.result
                    or StartResult("unknown", stated(STEP_UNOBSERVED, f"{server.name} was not started")),
                    server.is_running(),
                    server.logs(),
                )
                for server in self.servers
            ),
        )

    def running(self) -> list[tuple[int, ServerSpec]]:
        """(label, spec) of the servers that started and still run."""
        return self.seen().running()


@dataclass(frozen=True, slots=True)
class LayoutObservation:
    """What one run of a layout showed: its servers after the probes and each channel's probe."""

    seen: LayoutSeen
    channels: tuple[ChannelObservation, ...]
    start_us: int = 0
    probe_us: int = 0


def observed_kind(result: StartResult) -> str:
    """The reference kind a start result means (`started`, an error kind, or `failed` for a message
    no kind explains)."""
    if result.started:
        return STARTED
    for sign, kind in FAILURE_KINDS:
        if sign in result.message:
            return kind
    return "failed"


def launch_layout(network: StreamingServers, layout: Layout) -> LayoutRun:
    """Start `layout`'s servers with a new cluster ID, each once the earlier servers it may conflict
    with are settled; the caller stops the servers (`network.stop_servers`)."""
    cluster_id = f"nc-{uuid.uuid4().hex[:12]}"
    configs = [StreamingConfig(cluster_id, spec.channels, clustered=spec.clustered) for spec in layout]
    began = time.perf_counter()
    servers = network.start_servers(configs, depends=lambda j, k: layout.may_conflict(j + 1, k + 1))
    start_us = int((time.perf_counter() - began) * 1e6 / max(1, len(servers)))
    return LayoutRun(layout, cluster_id, servers, start_us=start_us)


def start_layout(
    network: StreamingServers, layout: Layout, context: RunContext, *, seed: int = 0
) -> LayoutRun:
    """`launch_layout`, with each start judged in the run's `cases`."""
    run = launch_layout(network, layout)
    run.cases = judge_starts(context, run.seen(), seed=seed, duration_us=run.start_us)
    return run


def judge_starts(context: RunContext, seen: LayoutSeen, *, seed: int = 0, duration_us: int = 0) -> list[Case]:
    """A `startup` case per server, against the reference given the servers started before it."""
    cases = []
    running: list[tuple[int, ServerSpec]] = []
    for label, spec, server in zip(seen.layout.labels(), seen.layout, seen.servers, strict=True):
        expected = start_outcome(spec, running)
        cases.append(
            _startup_case(
                context,
                seen,
                label=label,
                spec=spec,
                expected=expected,
                result=server.result,
                running=running,
                seed=seed,
                duration_us=duration_us,
            )
        )
        if server.result.started:
            running.append((label, spec))
    return cases


def _startup_case(
    context: RunContext,
    run: LayoutSeen,
    *,
    label: int,
    spec: ServerSpec,
    expected: StartOutcome,
    result: StartResult,
    running: Sequence[tuple[int, ServerSpec]],
    seed: int,
    duration_us: int,
) -> Case:
    kind = observed_kind(result)
    observed = STARTED if kind == STARTED else f"failed: {kind}"
    before = "+".join(str(other) for other, _ in running) or "none"
    detail = f"running before: {before}; {result.message or 'ready'}"
    reason = ""
    if result.state == "unknown" or (kind == "failed" and lost_nats(result.message)):
        difference = "unknown"
        detail = result.message
        reason = CONNECTION_LOST if kind == "failed" else ""  # else what its message tells
    elif not expected.allows(kind):
        difference = f"reference-{expected.kind}-server-{kind}"
    elif kind == DUPLICATE_CHANNEL and not _names_a_conflict(run, spec, expected, result):
        difference = "conflict-names-wrong-server"
    else:
        difference = ""
    return make_case(
        context,
        feature=FEATURE,
        functions=("startup",),
        source="",
        destination=f"server {label}",
        layout=layout_column(run.layout),
        expected=expected.describe(),
        observed=observed,
        difference=difference,
        detail=detail,
        seed=seed,
        duration_us=duration_us,
        reason=reason,
    )


def _names_a_conflict(run: LayoutSeen, spec: ServerSpec, expected: StartOutcome, result: StartResult) -> bool:
    """The failure names a server the reference says conflicts, and an entry of it or of the failing
    server (which of the two the server names is not documented)."""
    found = CONFLICT.search(result.message)
    if not found:
        return False
    channel, server_id = found.groups()
    other = run.label_of(server_id)
    if other is None or other not in expected.conflicts:
        return False
    return channel in spec.channels or channel in run.layout.spec(other).channels


@dataclass(frozen=True, slots=True)
class ChannelObservation:
    """What one channel's probe saw: each request's first answer kind, the answers received, who logged
    handling it, and the deliveries of the probe's message."""

    channel: str
    subscribe_kind: str = TIMEOUT
    subscribe_answers: tuple[str, ...] = ()
    inbox: str = ""
    publish_kind: str = TIMEOUT
    publish_answers: tuple[str, ...] = ()
    guid: str = ""
    delivered: int = 0
    failure: str = ""


async def _probe(client: StreamingClient, channel: str) -> ChannelObservation:
    """Subscribe to `channel`, publish one message on it, count its deliveries and acknowledge them."""
    from nats_conformance.fixtures.clients.streaming import StreamingRequestError, StreamingTimeoutError

    subscribe_kind, subscription = TIMEOUT, None
    subscribe_answers: tuple[str, ...] = ()
    try:
        subscription = await client.subscribe(channel, timeout=REQUEST_TIMEOUT, settle=SETTLE)
        subscribe_kind, subscribe_answers = ACCEPTED, subscription.replies.errors
    except StreamingRequestError as error:
        subscribe_kind, subscribe_answers = REFUSED, (error.server_message,)
    except StreamingTimeoutError:
        pass
    payload = uuid.uuid4().hex.encode()
    publish_kind, guid = TIMEOUT, ""
    publish_answers: tuple[str, ...] = ()
    try:
        replies = await client.publish(channel, payload, timeout=REQUEST_TIMEOUT, settle=SETTLE)
        publish_kind, publish_answers, guid = ACCEPTED, replies.errors, replies.request_id
    except StreamingRequestError as error:
        publish_kind, publish_answers, guid = REFUSED, (error.server_message,), error.request_id
    except StreamingTimeoutError as error:
        guid = error.request_id
    delivered = 0
    if subscription is not None:
        await asyncio.sleep(SETTLE)
        for message in subscription.received():
            if message.data == payload:
                delivered += 1
                await subscription.ack(message)
    return ChannelObservation(
        channel,
        subscribe_kind,
        subscribe_answers,
        subscription.inbox if subscription is not None else "",
        publish_kind,
        publish_answers,
        guid,
        delivered,
    )


CLIENT_ID = "probe"
REGISTERED = f"[Client:{CLIENT_ID}] Connected"
"""What a server logs once it has registered the probe's connection."""


async def _observe(
    url: str, cluster_id: str, channels: Sequence[str], registered: Callable[[], bool]
) -> list[ChannelObservation]:
    from nats_conformance.fixtures.clients.streaming import StreamingClient

    async with await StreamingClient.connect(url, cluster_id, CLIENT_ID, timeout=2.0) as client:
        # Every server answers the connection; the client goes on with the first answer. A server that
        # has not registered it yet holds a publish or subscription for up to a second (observed), which
        # could outlast REQUEST_TIMEOUT under load: wait until every running server has registered it.
        deadline = time.monotonic() + 3.0
        while not registered() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        probed = asyncio.Event()
        watch = asyncio.create_task(_longest_ping(client, probed))
        try:
            observations = list(await asyncio.gather(*(_probe(client, channel) for channel in channels)))
        finally:
            probed.set()
        longest = await watch
        if longest > STALL:
            raise ServerStalledError(
                f"the NATS server under the layout took {longest:.1f} s to answer a PING while the "
                f"channels were probed (at most {STALL} s)"
            )
        return observations


async def _longest_ping(client: StreamingClient, probed: asyncio.Event) -> float:
    """PING the NATS server every `PING_INTERVAL` until `probed` is set; the longest round trip (a PING
    that is not answered within ten seconds counts as ten seconds)."""
    from nats_conformance.fixtures.clients.streaming import StreamingError

    longest = 0.0
    while not probed.is_set():
        began = time.monotonic()
        try:
            await client.ping(timeout=10)
        except StreamingError:
            return max(longest, 10.0)
        longest = max(longest, time.monotonic() - began)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(probed.wait(), PING_INTERVAL)
    return longest


def _describe_observed(kind: str, servers: tuple[int, ...]) -> str:
    if kind == TIMEOUT:
        return TIMEOUT if not servers else f"timeout, logged by {'+'.join(map(str, servers))}"
    if not servers:
        return f"{kind} by a server of no log"
    return RequestOutcome(kind, servers).describe()


def _difference(expected: RequestOutcome, kind: str, servers: tuple[int, ...]) -> str:
    if kind != expected.kind:
        return f"reference-{expected.kind}-server-{kind}"
    if kind != TIMEOUT and servers != expected.servers:
        return "wrong-servers"
    if kind == TIMEOUT and servers:
        return "reference-timeout-server-logged"
    return ""


@dataclass(frozen=True, slots=True)
class RequestVerdict:
    """One request of a channel's probe judged: the `function` checked (``subscribe``, ``publish`` or
    ``receive``), what the reference expected, what was observed, their difference, and the answers."""

    function: str
    expected: str
    observed: str
    difference: str
    detail: str


def judge_channels(
    context: RunContext,
    run: LayoutSeen,
    observations: Sequence[ChannelObservation],
    *,
    seed: int = 0,
    duration_us: int = 0,
) -> list[Case]:
    """Cases for every probed channel: publish, subscribe, and receive when the subscription was
    accepted as the reference says (`judge_requests`)."""
    running = run.running()
    destination = f"running {'+'.join(str(label) for label, _ in running) or 'none'}"
    layout = layout_column(run.layout)
    return [
        make_case(
            context,
            feature=FEATURE,
            functions=(verdict.function,),
            source="",
            destination=destination,
            layout=layout,
            subject=seen.channel,
            expected=verdict.expected,
            observed=verdict.observed,
            difference=verdict.difference,
            detail=verdict.detail,
            seed=seed,
            duration_us=duration_us,
        )
        for seen in observations
        for verdict in judge_requests(run, running, seen)
    ]


def judge_requests(
    run: LayoutSeen, running: Sequence[tuple[int, ServerSpec]], seen: ChannelObservation
) -> list[RequestVerdict]:
    """The subscribe and publish requests of one channel's probe against the reference given the
    `running` servers (both ``unknown`` when the probe failed), then its deliveries when the subscription
    was accepted as the reference says: more acknowledgements than servers that logged the message is
    ``duplicate-acks``."""
    channel = seen.channel
    expected_sub = subscribe_outcome(running, channel)
    expected_pub = publish_outcome(running, channel)
    if seen.failure:
        return [
            RequestVerdict(function, expected.describe(), "", "unknown", seen.failure)
            for function, expected in (("subscribe", expected_sub), ("publish", expected_pub))
        ]
    sub_servers = _subscription_handlers(run, seen)
    verdicts = [
        RequestVerdict(
            "subscribe",
            expected_sub.describe(),
            _describe_observed(seen.subscribe_kind, sub_servers),
            _difference(expected_sub, seen.subscribe_kind, sub_servers),
            f"answers: {_answers(seen.subscribe_answers)}",
        )
    ]
    pub_servers = run.handled_by(seen.guid)
    pub_observed = _describe_observed(seen.publish_kind, pub_servers)
    pub_difference = _difference(expected_pub, seen.publish_kind, pub_servers)
    if seen.publish_kind == ACCEPTED and len(seen.publish_answers) > len(pub_servers):
        # More acknowledgements than servers that logged the message: one server acknowledged (and
        # stored) it more than once. Fewer is not judged: a late one may miss the settle window.
        pub_observed += f" ({len(seen.publish_answers)} acks)"
        pub_difference = pub_difference or "duplicate-acks"
    verdicts.append(
        RequestVerdict(
            "publish",
            expected_pub.describe(),
            pub_observed,
            pub_difference,
            f"answers: {_answers(seen.publish_answers)}",
        )
    )
    if expected_sub.kind == ACCEPTED and seen.subscribe_kind == ACCEPTED:
        wanted = deliveries(running, channel)
        verdicts.append(
            RequestVerdict(
                "receive",
                f"delivered {wanted}x",
                f"delivered {seen.delivered}x",
                _delivery_difference(wanted, seen.delivered),
                f"publish: {_describe_observed(seen.publish_kind, pub_servers)}",
            )
        )
    return verdicts


def _delivery_difference(wanted: int, delivered: int) -> str:
    if delivered > wanted:
        return "duplicate-deliveries"
    return "missing-deliveries" if delivered < wanted else ""


def _subscription_handlers(run: LayoutSeen, seen: ChannelObservation) -> tuple[int, ...]:
    if seen.subscribe_kind == REFUSED:
        return run.handled_by(f'Invalid channel "{seen.channel}" in subscription request')
    return run.handled_by(f"inbox={seen.inbox},")


def _answers(answers: Sequence[str]) -> str:
    if not answers:
        return "none"
    return ", ".join(repr(answer) if answer else "ok" for answer in answers)


def probe(url: str, run: LayoutRun, channels: Sequence[str]) -> tuple[list[ChannelObservation], int]:
    """Probe every channel through the NATS server at `url` on the layout's running servers (nothing to
    ask when no server runs); returns the observations and the microseconds per channel. A client that
    cannot connect makes every observation a `failure`."""
    from nats_conformance.fixtures.clients.streaming import StreamingError

    if not run.running() or not channels:
        return [], 0
    began = time.perf_counter()
    try:
        observations = asyncio.run(
            _observe(
                url,
                run.cluster_id,
                channels,
                lambda: all(REGISTERED in run.servers[label - 1].logs() for label, _ in run.running()),
            )
        )
    except StreamingError as error:
        observations = [ChannelObservation(channel, failure=str(error)) for channel in channels]
    return observations, int((time.perf_counter() - began) * 1e6 / max(1, len(channels)))


def probe_and_judge(
    url: str,
    run: LayoutRun,
    channels: Sequence[str],
    context: RunContext,
    *,
    seed: int = 0,
) -> list[Case]:
    """`probe`, with each request judged (`judge_channels`)."""
    observations, duration_us = probe(url, run, channels)
    return judge_channels(context, run.seen(), observations, seed=seed, duration_us=duration_us)


def observe_layout(network: StreamingServers, layout: Layout, channels: Sequence[str]) -> LayoutObservation:
    """Start the layout, probe the channels, and stop every server of the network (also on error)."""
    try:
        run = launch_layout(network, layout)
        observations, probe_us = probe(network.url, run, channels)
        return LayoutObservation(run.seen(), tuple(observations), run.start_us, probe_us)
    finally:
        network.stop_servers()


def judge_layout(context: RunContext, observed: LayoutObservation, *, seed: int = 0) -> list[Case]:
    """Every start's case, then every probed request's."""
    return [
        *judge_starts(context, observed.seen, seed=seed, duration_us=observed.start_us),
        *judge_channels(context, observed.seen, observed.channels, seed=seed, duration_us=observed.probe_us),
    ]


@dataclass(frozen=True, slots=True)
class StreamingUnit:
    """A layout, in start order, and the channels to publish and subscribe on."""

    layout: Layout
    channels: tuple[str, ...]
    seed: int = 0


@dataclass(frozen=True, slots=True)
class StreamingObservation:
    """What the layout showed, and the nats-streaming-server version that showed it."""

    version: str
    layout: LayoutObservation


@dataclass(frozen=True, slots=True)
class StreamingFamily(TargetServer):
    """Layouts on the build of nats-streaming-server `release` (a release line or version); the
    campaign never builds it (`unsupported` says how). A unit starts 2-4 servers (a partitioned one
    waits a second for conflict replies) and records about 20 cases; eight units run at once
    (`schedule`). Figures: docs/benchmarks.md, Families."""

    name: str = "streaming"
    description: Description = Description(
        "a layout of partitioned NATS Streaming servers attached to the target, and channel probes",
        250,
    )
    features: tuple[str, ...] = ("streaming",)
    release: str = "0.25"

    @property
    def schedule(self) -> Schedule[Session]:
        """8 layouts at once on the target's NATS server: each has a cluster ID, work directory and
        processes of its own, and a layout's time is spent waiting (a partitioned server waits a second
        for conflict replies, a probe for answers), so eight layouts take little longer than one."""
        return Schedule(beside, 8)

    def unsupported(self, version: str, backend: str) -> str:
        """Streaming servers are local processes joining a nats-server 2 on 127.0.0.1 (the `process`
        backend), through a client that needs protobuf, from a build already in the cache."""
        if not has_protobuf():
            return "the streaming client needs protobuf: pip install -e '.[streaming]'"
        if backend != "process":
            return f"streaming servers join a process-backend nats-server only (not {backend})"
        try:
            major = Version.parse(version).major
        except InvalidVersionError:
            major = 0
        if major != 2:
            return f"nats-streaming-server joins a nats-server 2.x (not {version or 'unknown'})"
        release = parse_version_spec(self.release, NATS_STREAMING_SERVER).release or self.release
        if not cached_binary(release, NATS_STREAMING_SERVER).is_file():
            return f"nats-streaming-server {release} build missing: run `{PROVISION}`"
        return ""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[StreamingUnit]:
        def unit(drawn: tuple[Layout, tuple[str, ...]], seed: int) -> StreamingUnit:
            return StreamingUnit(drawn[0], drawn[1], seed)

        return st.builds(unit, layouts_with_channels(), st.integers(0, 2**32 - 1))

    def execute(self, session: Session, unit: StreamingUnit) -> StreamingObservation:
        """Start the layout's servers on the target's NATS server, probe, and stop them all. A NATS
        server found gone afterwards raises `ServerDiedError`, and one that stalled while the channels
        were probed `ServerStalledError`: either way the unit is `unknown` and the server is restarted
        and journaled (`suites.engine.family.check`), so the next layouts do not start on a dead or
        stopped server."""
        binary = resolve_binary(self.release, NATS_STREAMING_SERVER)
        with StreamingServers(session.url, binary) as servers:
            observed = observe_layout(servers, unit.layout, unit.channels)
        if not session.server.is_running():
            raise ServerDiedError(f"the NATS server under the streaming layout ({session.url}) is gone")
        return StreamingObservation(binary_version(binary), observed)

    def judge(
        self,
        context: RunContext,
        profile: ReleaseProfile,
        unit: StreamingUnit,
        observed: StreamingObservation,
    ) -> Judged:
        context.expectations.note_run(IMPLEMENTATION, observed.version)
        streaming = replace(context, implementation=IMPLEMENTATION, server_version=observed.version)
        return judge_layout(streaming, observed.layout, seed=unit.seed)

    def unit_of(self, case: CaseFile) -> StreamingUnit:
        """The case's layout, probed on its channel when it has one."""
        return StreamingUnit(layout_of(case), (case.subject,) if case.subject else ())
