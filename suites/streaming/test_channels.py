"""NATS Streaming channel partitions on live servers
(https://docs.nats.io/legacy/stan/nats-streaming-concepts/partitioning).

Every worked example of the document runs as an explicit test; two properties draw layouts of 2-4
partitioned servers with one cluster ID: which servers start and which fail (and why) matches
``reference.channels``, and publishes and subscriptions reach the servers the reference names. Cases
are recorded (feature ``streaming``, see ``suites.families.streaming``); a test fails on an unexpected
divergence or an unknown outcome. Known divergences are in ``expectations.toml``
(``partition-overlap-undetected``, ``overlapping-entries-store-twice``).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import example, given, settings

from nats_conformance.fixtures.clients.streaming import StreamingClient
from nats_conformance.fixtures.servers.streaming import StreamingConfig, StreamingNetwork
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.channels import DUPLICATE_CHANNEL
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.streaming import probe_and_judge, start_layout
from nats_conformance.suites.reproduce import describe_divergences
from nats_conformance.suites.streaming.layouts import Layout
from nats_conformance.suites.streaming.strategies import layouts, layouts_with_channels

pytestmark = [pytest.mark.live, pytest.mark.streaming]

LAYOUT_BUDGET = settings(max_examples=max(5, settings().max_examples // 3))
"""A third of the profile's examples (20 with ``ci``): each starts 2-4 servers, and a partitioned server
waits one second for duplicate-channel answers before it is ready."""

ROUTING_BUDGET = settings(max_examples=max(4, settings().max_examples // 5))
"""A fifth (12 with ``ci``): each also waits out a one-second timeout for unowned channels."""

UNDETECTED_OVERLAP = Layout.of(["foo.*"], ["*.bar"])
"""Both servers would handle foo.bar; the document says the second must fail."""


def run_layout(
    network: StreamingNetwork,
    context: RunContext,
    recorder: RecordWriter,
    layout: Layout,
    channels: tuple[str, ...] = (),
) -> list[Case]:
    """Start the layout, probe the channels, stop every server; record and return the cases."""
    try:
        run = start_layout(network, layout, context)
        cases = [*run.cases, *probe_and_judge(network.url, run, channels, context)]
    finally:
        network.stop_servers()
    recorder.extend(cases)
    return cases


def assert_as_documented(cases: list[Case]) -> None:
    """No unexpected divergence and no unknown outcome."""
    bad = [case for case in cases if case.verdict in ("diverge", "unknown")]
    assert not bad, describe_divergences(bad)


def outcomes(cases: list[Case], function: str) -> dict[str, str]:
    """subject (or destination, for starts) -> observed, for one kind of case."""
    return {case.subject or case.destination: case.observed for case in cases if case.functions == function}


@LAYOUT_BUDGET
@example(layout=UNDETECTED_OVERLAP)
@example(layout=Layout.of(["foo.*", "bar.>"], ["bar.baz.bat"], ["foo"]))
@example(layout=Layout.of(["foo.>"], ["foo.*"], ["*.*"]))
@given(layout=layouts())
def test_servers_that_start_and_fail_match_the_reference(
    streaming_network: StreamingNetwork,
    streaming_context: RunContext,
    recorder: RecordWriter,
    layout: Layout,
) -> None:
    """ "A given channel must be defined in a single server": each server starts unless its list is
    invalid, clustering is on, or a running server has a channel in common with it; then it fails with
    the reason (the duplicate names a running server that conflicts)."""
    cases = run_layout(streaming_network, streaming_context, recorder, layout)
    assert len(cases) == len(layout)
    assert_as_documented(cases)


@ROUTING_BUDGET
@example(
    case=(
        Layout.of(["foo.*", "bar.>"], ["baz"]),
        ("foo.bar", "bar.baz", "bar.baz.bat", "foo", "foo.bar.baz", "bar", "some.other.channel", "baz"),
    )
)
@example(case=(UNDETECTED_OVERLAP, ("foo.bar", "foo.x", "x.bar", "foo.*")))
@given(case=layouts_with_channels())
def test_requests_reach_the_servers_that_handle_the_channel(
    streaming_network: StreamingNetwork,
    streaming_context: RunContext,
    recorder: RecordWriter,
    case: tuple[Layout, tuple[str, ...]],
) -> None:
    """ "Applications behavior": a publish is acknowledged by the server that has the channel and a
    subscription is served by it (each delivers a message once); with none, both time out; wildcard
    channels are refused."""
    layout, channels = case
    cases = run_layout(streaming_network, streaming_context, recorder, layout, channels)
    assert_as_documented(cases)


DOCUMENTED_WILDCARDS = Layout.of(["foo.*", "bar.>"])
ACCEPTED = ("foo.bar", "bar.baz", "bar.baz.bat")
IGNORED = ("foo", "foo.bar.baz", "bar", "some.other.channel")


def test_documented_wildcard_example(
    streaming_network: StreamingNetwork, streaming_context: RunContext, recorder: RecordWriter
) -> None:
    """ "Wildcards": with foo.* and bar.>, the server accepts subscriptions and messages on foo.bar,
    bar.baz, bar.baz.bat and ignores foo, foo.bar.baz, bar, some.other.channel."""
    cases = run_layout(
        streaming_network, streaming_context, recorder, DOCUMENTED_WILDCARDS, (*ACCEPTED, *IGNORED)
    )
    assert_as_documented(cases)
    for function in ("publish", "subscribe"):
        seen = outcomes(cases, function)
        assert {channel: seen[channel] for channel in ACCEPTED} == dict.fromkeys(ACCEPTED, "accepted by 1")
        assert {channel: seen[channel] for channel in IGNORED} == dict.fromkeys(IGNORED, "timeout")
    assert outcomes(cases, "receive") == dict.fromkeys(ACCEPTED, "delivered 1x")


def test_documented_first_example_and_wildcard_channels(
    streaming_network: StreamingNetwork, streaming_context: RunContext, recorder: RecordWriter
) -> None:
    """ "Partitioning": foo, bar and baz.* configure a server; "applications cannot publish to, or
    subscribe to, wildcard channels" (baz.* is refused)."""
    layout = Layout.of(["foo", "bar", "baz.*"])
    cases = run_layout(
        streaming_network, streaming_context, recorder, layout, ("foo", "bar", "baz.qux", "baz.*")
    )
    assert_as_documented(cases)
    assert outcomes(cases, "startup") == {"server 1": "started"}
    assert {case.layout for case in cases} == {layout.servers}
    published = outcomes(cases, "publish")
    assert published == {
        "foo": "accepted by 1",
        "bar": "accepted by 1",
        "baz.qux": "accepted by 1",
        "baz.*": "refused by 1",
    }
    assert outcomes(cases, "subscribe")["baz.*"] == "refused by 1"


def test_documented_fault_tolerance_partitions(
    streaming_network: StreamingNetwork, streaming_context: RunContext, recorder: RecordWriter
) -> None:
    """ "Fault Tolerance and Partitioning": partitions foo.> and bar.> in one cluster both start, and a
    client of the cluster reaches each channel's partition."""
    layout = Layout.of(["foo.>"], ["bar.>"])
    cases = run_layout(streaming_network, streaming_context, recorder, layout, ("foo.a", "bar.b.c", "baz"))
    assert_as_documented(cases)
    assert list(outcomes(cases, "startup").values()) == ["started", "started"]
    assert outcomes(cases, "publish") == {
        "foo.a": "accepted by 1",
        "bar.b.c": "accepted by 2",
        "baz": "timeout",
    }


def test_partitioning_with_clustering_is_a_startup_error(
    streaming_network: StreamingNetwork, streaming_context: RunContext, recorder: RecordWriter
) -> None:
    """ "Partitioning": "Trying to start a server with Partitioning and Clustering enabled will result in
    a startup error"."""
    layout = Layout.from_json('[{"channels": ["foo"], "clustered": true}, ["foo"]]')
    cases = run_layout(streaming_network, streaming_context, recorder, layout)
    assert_as_documented(cases)
    first, second = cases
    assert first.observed == "failed: partitioning-with-clustering"
    assert "stan: channels partitioning in clustering mode is not supported" in first.detail
    assert second.observed == "started", "a server that failed holds no channel"


def test_duplicate_channel_fails_the_starting_server(
    streaming_network: StreamingNetwork, streaming_context: RunContext, recorder: RecordWriter
) -> None:
    """ "When a server receives this list and finds that it has a channel in common, it will return an
    error to the emitting server, which will then fail to start"; the running server keeps serving."""
    layout = Layout.of(["foo.*", "bar.>"], ["bar.baz.bat", "qux"])
    cases = run_layout(streaming_network, streaming_context, recorder, layout, ("bar.baz.bat", "qux"))
    assert_as_documented(cases)
    startup = [case for case in cases if case.functions == "startup"]
    assert [case.observed for case in startup] == ["started", f"failed: {DUPLICATE_CHANNEL}"]
    assert 'channel "bar.baz.bat" causes conflict with channels on server' in startup[1].detail
    assert outcomes(cases, "publish") == {"bar.baz.bat": "accepted by 1", "qux": "timeout"}


def test_divergence_overlapping_wildcards_both_start(
    streaming_network: StreamingNetwork, streaming_context: RunContext, recorder: RecordWriter
) -> None:
    """Finding (document vs server): foo.* and *.bar both handle foo.bar, yet the second server starts.
    The server compares lists by matching each entry, taken as a subject, against the other's entries, so
    two wildcard entries that only meet in a channel neither names literally are not a conflict. With both
    running, a publish on foo.bar is stored and acknowledged twice, and a subscriber gets each message
    from both servers: the duplicates the document warns about."""
    cases = run_layout(
        streaming_network, streaming_context, recorder, UNDETECTED_OVERLAP, ("foo.bar", "foo.x", "x.bar")
    )
    assert_as_documented(cases)
    start_of_second = cases[1]
    assert (start_of_second.expected, start_of_second.observed) == ("failed: duplicate-channel", "started")
    assert start_of_second.verdict == "expected"
    assert start_of_second.expectation == "partition-overlap-undetected"
    assert outcomes(cases, "publish") == {
        "foo.bar": "accepted by 1+2",
        "foo.x": "accepted by 1",
        "x.bar": "accepted by 2",
    }
    assert outcomes(cases, "receive")["foo.bar"] == "delivered 2x"


def test_divergence_entries_of_one_server_that_overlap_store_twice(
    streaming_network: StreamingNetwork, streaming_context: RunContext, recorder: RecordWriter
) -> None:
    """Finding (document vs server): with bar.> and *.foo in one list, a publish on bar.foo is stored
    twice (two sequences), acknowledged twice and delivered twice; bar.x, matched once, is not."""
    layout = Layout.of(["bar.>", "*.foo"])
    cases = run_layout(streaming_network, streaming_context, recorder, layout, ("bar.foo", "bar.x"))
    assert_as_documented(cases)
    assert outcomes(cases, "publish") == {"bar.foo": "accepted by 1 (2 acks)", "bar.x": "accepted by 1"}
    assert outcomes(cases, "receive") == {"bar.foo": "delivered 2x", "bar.x": "delivered 1x"}
    twice = [case for case in cases if case.subject == "bar.foo" and case.functions != "subscribe"]
    assert {(case.verdict, case.expectation) for case in twice} == {
        ("expected", "overlapping-entries-store-twice")
    }


def test_acknowledgements_reach_the_owner(streaming_network: StreamingNetwork) -> None:
    """ "Only the server handling the subscription on this channel should receive" the acknowledgements:
    with two partitions, an acknowledged message on each is not redelivered after the ack wait, and one
    left unacknowledged is."""
    configs = [StreamingConfig("acks", ("foo.*",)), StreamingConfig("acks", ("bar.*",))]

    async def scenario() -> None:
        async with await StreamingClient.connect(streaming_network.url, "acks", "acker") as client:
            subscriptions = [await client.subscribe(c, ack_wait=1) for c in ("foo.a", "bar.a")]
            for subscription in subscriptions:
                await client.publish(subscription.channel, b"ack me")
                await client.publish(subscription.channel, b"leave me")
                acked, left = await subscription.next_message(), await subscription.next_message()
                assert (acked.data, left.data) == (b"ack me", b"leave me")
                await subscription.ack(acked)
            await asyncio.sleep(1.6)
            for subscription in subscriptions:
                again = subscription.received()
                assert [(m.data, m.redelivered) for m in again] == [(b"leave me", True)], subscription.channel

    try:
        servers = streaming_network.start_servers(configs)
        assert all(server.result is not None and server.result.started for server in servers)
        asyncio.run(scenario())
    finally:
        streaming_network.stop_servers()


def test_layout_json_round_trips() -> None:
    layout = Layout.from_json('[["foo.*","bar.>"],{"channels":["x"],"clustered":true},[]]')
    assert Layout.from_json(layout.to_json()) == layout
    assert json.loads(layout.to_json())[1] == {"channels": ["x"], "clustered": True}
