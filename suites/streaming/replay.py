"""`python -m suites replay --feature streaming --source LAYOUT [--subject CHANNEL]`: one streaming case
run again on fresh servers.

The layout (the recorded case's `source`, JSON) is started on a new NATS network, every start is judged,
and when a channel is given it is published and subscribed on, as the suite does. The source of the
fault-tolerance example's cases (`fault_tolerance.EXAMPLE_SOURCE`) runs that whole scenario again.
`--server-version` names the nats-streaming-server release (default the 0.25 line). Known divergences
are not looked up: a replay shows the comparison with the reference as it is.
"""

from __future__ import annotations

import itertools

from fixtures.provision import binary_version
from fixtures.streaming import StreamingNetwork, provision_binaries
from records.expectations import Expectations
from records.schema import Case
from suites.differential import RunContext
from suites.streaming.fault_tolerance import EXAMPLE_SOURCE, run_example
from suites.streaming.layouts import Layout
from suites.streaming.partitions import IMPLEMENTATION, probe_and_judge, start_layout

DEFAULT_SPEC = "0.25"


def replay_streaming(source: str, channel: str = "", spec: str | None = None) -> list[Case]:
    """The cases of `source` (a layout's JSON) and, when given, of `channel`; raises a
    `ConformanceError` with one line for a bad layout or a server that cannot be provisioned."""
    example = source.strip() == EXAMPLE_SOURCE
    layout = None if example else Layout.from_json(source)
    binaries = provision_binaries(spec or DEFAULT_SPEC)
    counter = itertools.count(1)
    with StreamingNetwork(*binaries) as network:
        network.start()
        context = RunContext(
            run_id="replay",
            implementation=IMPLEMENTATION,
            server_version=binary_version(binaries[1]),
            backend="process",
            expectations=Expectations(),
            next_case_id=lambda: next(counter),
        )
        if layout is None:
            return run_example(network, context, network.workdir / "ft-datastore").cases
        try:
            run = start_layout(network, layout, context)
            return [*run.cases, *probe_and_judge(network.url, run, (channel,) if channel else (), context)]
        finally:
            network.stop_servers()
