"""Streaming family: partitioned NATS Streaming servers each serve exactly the channels of their list.

"NATS Streaming" → "Partitioning" (https://docs.nats.io/legacy/stan/nats-streaming-concepts/partitioning):
servers of one
cluster ID, each with its own channel list, attached to one NATS server; a server whose list has a
channel in common with a running server must fail, and a request on a channel reaches the one server
that defines it. One unit is one layout (2-4 servers, as `suites.streaming.strategies` draws them) and
the channels probed on it; its nats-streaming-server processes join the target's NATS server for the
unit alone (`suites.streaming.partitions`). Cases are nats-streaming-server's, at its binary's version.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from fixtures.errors import ServerDiedError
from fixtures.provision import (
    NATS_STREAMING_SERVER,
    binary_version,
    cached_binary,
    parse_version_spec,
    resolve_binary,
)
from fixtures.servers.streaming import StreamingServers, has_protobuf
from fixtures.session import Session
from records.casefile import CaseFile
from reference.errors import InvalidVersionError
from reference.profiles import ReleaseProfile
from reference.versions import Version
from suites.engine.family import Judged, TargetServer
from suites.engine.verdicts import RunContext
from suites.streaming.layouts import Layout, layout_of
from suites.streaming.strategies import layouts_with_channels

if TYPE_CHECKING:
    from suites.streaming.partitions import LayoutObservation

PROVISION = f"python -m fixtures provision --product {NATS_STREAMING_SERVER.name}"


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
    (`side_by_side`). Figures: docs/benchmarks.md, Families."""

    name: str = "streaming"
    summary: str = "a layout of partitioned NATS Streaming servers attached to the target, and channel probes"
    features: tuple[str, ...] = ("streaming",)
    budget: int = 250
    release: str = "0.25"
    side_by_side: int = 8
    """Layouts run at once on the target's NATS server: each has a cluster ID, work directory and
    processes of its own, and a layout's time is spent waiting (a partitioned server waits a second for
    conflict replies, a probe for answers), so eight layouts take little longer than one."""

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
        """Start the layout's servers on the target's NATS server, probe, and stop them all (the client
        needs protobuf, hence the import here). A NATS server found gone afterwards raises
        `ServerDiedError`, and one that stalled while the channels were probed `ServerStalledError`:
        either way the unit is `unknown` and the server is restarted and journaled
        (`suites.engine.family.check`), so the next layouts do not start on a dead or stopped server."""
        from suites.streaming.partitions import observe_layout

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
        from suites.streaming.partitions import IMPLEMENTATION, judge_layout

        context.expectations.note_run(IMPLEMENTATION, observed.version)
        streaming = replace(context, implementation=IMPLEMENTATION, server_version=observed.version)
        return judge_layout(streaming, observed.layout, seed=unit.seed)

    def unit_of(self, case: CaseFile) -> StreamingUnit:
        """The case's layout, probed on its channel when it has one."""
        return StreamingUnit(layout_of(case), (case.subject,) if case.subject else ())
