"""The `cluster` family: the mapping unit (`suites.families.mapping`) on a cluster of three servers of
the target's build (`fixtures.servers.cluster`), each subject published to one server and observed on
another, over a route.

The documents say that each account has its own set of mappings ("Subject Mapping and Partitioning",
docs.nats.io), not which server of a cluster applies them. Observed, from 2.2: the server the client
publishes to maps the subject, and the message travels the route on its mapped subject, mapped once. So a
routed message is judged as a message published to the observing server would be: on the reference's
subject, once.
"""

from __future__ import annotations

from dataclasses import dataclass

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.cluster import ClusterBackend
from nats_conformance.fixtures.servers.process import ProcessBackend
from nats_conformance.records.replay import CLUSTER_SUFFIX
from nats_conformance.suites.engine.family import Description
from nats_conformance.suites.families.mapping import MappingFamily


@dataclass(frozen=True, slots=True)
class ClusterFamily(MappingFamily):
    """`MappingFamily`'s batches, on a cluster of the process backend's servers."""

    name: str = "cluster"
    description: Description = Description(
        "the mapping unit on a cluster of three servers of the target's build (process backend), each "
        "subject published to one server and observed on another, over a route",
        3_000,
    )
    features: tuple[str, ...] = ("mapping", "partition")
    mappings_per_batch: int = 10

    @property
    def layout(self) -> str:
        return "cluster"

    def server_for(self, server: Backend) -> Backend:
        return ClusterBackend(server) if isinstance(server, ProcessBackend) else server

    def unsupported(self, version: str, backend: str) -> str:
        if not backend.endswith(CLUSTER_SUFFIX):
            return "the cluster is three servers this suite starts on the process backend"
        return ""
