"""Server start-to-ready and reload-to-applied times per backend (medians of several runs).

    .venv/bin/python benchmarks/bench_backends.py [--version 2.14.5] [--runs 7] [--backend process ...]
        [--operator] [--reloads 3]

"Ready" means the server sent INFO on its port; "applied" means a message published on the new
configuration's probe subject arrived on its mapped subject (see fixtures/servers/probe.py). With
`--operator` the server runs in operator mode (`fixtures.servers.operator.OperatorBackend`): "applied"
is then an account JWT pushed, its mappings read back and its probe mapping in force.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nats_conformance.fixtures.config import Mapping, ServerConfig
from nats_conformance.fixtures.options import RunConfig, Target
from nats_conformance.fixtures.provision import parse_version_spec, resolve_binary
from nats_conformance.fixtures.servers import open_backend
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.operator import OperatorBackend
from nats_conformance.fixtures.servers.process import ProcessBackend


def measure(
    target: Target, run: RunConfig, runs: int, *, operator: bool = False, reloads_per_run: int = 3
) -> tuple[list[float], list[float]]:
    starts: list[float] = []
    reloads: list[float] = []
    for index in range(runs):
        backend: Backend = open_backend(target, run, binary_resolver=resolve_binary)
        if operator:
            assert isinstance(backend, ProcessBackend), "operator mode wraps a server this suite starts"
            backend = OperatorBackend(backend)
        began = time.perf_counter()
        backend.start(ServerConfig())
        starts.append(time.perf_counter() - began)
        try:
            for step in range(reloads_per_run):
                config = ServerConfig(mappings=(Mapping("foo.*", f"bar{index}{step}.$1"),))
                began = time.perf_counter()
                backend.apply(config)
                reloads.append(time.perf_counter() - began)
        finally:
            backend.stop()
    return starts, reloads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="2.14.5")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--backend", action="append", default=[])
    parser.add_argument("--operator", action="store_true", help="the servers in operator mode")
    parser.add_argument("--reloads", type=int, default=3, help="reloads (or pushes) per start")
    arguments = parser.parse_args()
    spec = parse_version_spec(arguments.version)
    backends = arguments.backend or ["process", "container"]
    run = RunConfig((spec,), tuple(backends))
    changes = arguments.reloads * arguments.runs
    mode = ", operator mode" if arguments.operator else ""
    print(f"nats-server {spec.label}{mode}, {arguments.runs} starts and {changes} reloads per backend")
    print(f"{'backend':<10} {'start median':>13} {'start min':>10} {'reload median':>14} {'reload min':>11}")
    for backend in backends:
        starts, reloads = measure(
            Target(backend, spec),
            run,
            arguments.runs,
            operator=arguments.operator,
            reloads_per_run=arguments.reloads,
        )
        print(
            f"{backend:<10} {statistics.median(starts) * 1000:>10.1f} ms {min(starts) * 1000:>7.1f} ms"
            f" {statistics.median(reloads) * 1000:>11.1f} ms {min(reloads) * 1000:>8.1f} ms"
        )


if __name__ == "__main__":
    main()
