"""The streaming channel-partition model: the document's examples, entry validity, the duplicate rule and
request routing, with properties checking ``common_channel`` against brute force."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.reference import (
    InvalidChannelError,
    NoChannelError,
    PartitioningWithClusteringError,
    ServerSpec,
    channel_in_common,
    check_server,
    common_channel,
    deliveries,
    is_valid_channel,
    is_valid_channel_entry,
    matches,
    publish_outcome,
    serves,
    start_layout,
    subscribe_outcome,
)
from nats_conformance.reference.channels import (
    ACCEPTED,
    DUPLICATE_CHANNEL,
    REFUSED,
    STARTED,
    TIMEOUT,
    RequestOutcome,
)

# https://docs.nats.io/legacy/stan/nats-streaming-concepts/partitioning, "Wildcards": foo.* and bar.>
WILDCARD_EXAMPLE = ("foo.*", "bar.>")
ACCEPTED_CHANNELS = ("foo.bar", "bar.baz", "bar.baz.bat")
IGNORED_CHANNELS = ("foo", "foo.bar.baz", "bar", "some.other.channel")


@pytest.mark.parametrize("channel", ACCEPTED_CHANNELS)
def test_documented_wildcard_list_accepts(channel: str) -> None:
    assert serves(WILDCARD_EXAMPLE, channel)
    running = [(1, ServerSpec(WILDCARD_EXAMPLE))]
    assert publish_outcome(running, channel) == RequestOutcome(ACCEPTED, (1,))
    assert subscribe_outcome(running, channel) == RequestOutcome(ACCEPTED, (1,))
    assert deliveries(running, channel) == 1


@pytest.mark.parametrize("channel", IGNORED_CHANNELS)
def test_documented_wildcard_list_ignores(channel: str) -> None:
    assert not serves(WILDCARD_EXAMPLE, channel)
    running = [(1, ServerSpec(WILDCARD_EXAMPLE))]
    assert publish_outcome(running, channel) == RequestOutcome(TIMEOUT)
    assert subscribe_outcome(running, channel) == RequestOutcome(TIMEOUT)


def test_documented_first_example_is_a_valid_list() -> None:
    """ "Partitioning": foo, bar and baz.* (wildcards allowed in configuration)."""
    spec = ServerSpec(("foo", "bar", "baz.*"))
    check_server(spec)
    assert serves(spec.channels, "baz.qux")
    assert not serves(spec.channels, "baz")
    assert not serves(spec.channels, "baz.*"), "applications cannot use wildcard channels"


def test_documented_fault_tolerance_partitions_are_disjoint() -> None:
    """ "Fault Tolerance and Partitioning": foo.> and bar.> coexist in one cluster."""
    outcomes = start_layout([ServerSpec(("foo.>",)), ServerSpec(("bar.>",))])
    assert [o.kind for o in outcomes] == [STARTED, STARTED]
    running = [(1, ServerSpec(("foo.>",))), (2, ServerSpec(("bar.>",)))]
    assert publish_outcome(running, "foo.a.b").describe() == "accepted by 1"
    assert publish_outcome(running, "bar.a").describe() == "accepted by 2"
    assert publish_outcome(running, "baz.a").describe() == "timeout"


def test_partitioning_with_clustering_is_a_startup_error() -> None:
    with pytest.raises(PartitioningWithClusteringError):
        check_server(ServerSpec(("foo",), clustered=True))
    assert start_layout([ServerSpec(("foo",), clustered=True)])[0].kind == "partitioning-with-clustering"


def test_an_empty_list_is_refused() -> None:
    with pytest.raises(NoChannelError):
        check_server(ServerSpec(()))


@pytest.mark.parametrize(
    "entry", ["foo", "foo.bar", "*", ">", "foo.*", "*.bar", "foo.>", "*.*.>", "a-b_c", "Foo.BAR"]
)
def test_valid_entries(entry: str) -> None:
    assert is_valid_channel_entry(entry)
    check_server(ServerSpec((entry,)))


@pytest.mark.parametrize(
    "entry", ["", ".foo", "foo.", "foo..bar", "fo*", "foo.b>", "foo.>.bar", ">.foo", "foo/bar", "foo bar"]
)
def test_invalid_entries(entry: str) -> None:
    assert not is_valid_channel_entry(entry)
    with pytest.raises(InvalidChannelError, match="invalid channel name"):
        check_server(ServerSpec(("foo", entry)))


@pytest.mark.parametrize(
    ("name", "valid"), [("foo.bar", True), ("foo.*", False), ("foo.>", False), ("a/b", False), ("", False)]
)
def test_channels_for_requests_are_literal(name: str, valid: bool) -> None:
    assert is_valid_channel(name) is valid


@pytest.mark.parametrize(
    ("first", "second", "witness"),
    [
        ("foo.bar", "foo.bar", "foo.bar"),
        ("foo.*", "foo.bar", "foo.bar"),
        ("foo.*", "*.bar", "foo.bar"),
        ("foo.>", "*.bar", "foo.bar"),
        ("foo.>", "foo.*", "foo.x"),
        ("foo.>", "foo.bar.>", "foo.bar.x"),
        ("*.>", "foo.*.baz", "foo.x.baz"),
        (">", "a.b.c", "a.b.c"),
        ("foo", "foo.>", None),
        ("foo.*", "foo", None),
        ("foo.*", "bar.*", None),
        ("foo.*", "foo.*.*", None),
    ],
)
def test_common_channel(first: str, second: str, witness: str | None) -> None:
    assert common_channel(first, second) == witness
    assert (common_channel(second, first) is None) == (witness is None)


def test_duplicate_rule_compares_with_running_servers_only() -> None:
    """A server that failed does not make later servers fail: only running servers answer."""
    layout = [ServerSpec(("foo.*",)), ServerSpec(("foo.bar", "zzz")), ServerSpec(("zzz",))]
    outcomes = start_layout(layout)
    assert [o.kind for o in outcomes] == [STARTED, DUPLICATE_CHANNEL, STARTED]
    assert outcomes[1].conflicts == (1,)
    assert outcomes[1].channel == "foo.bar"


def test_undetectable_overlap_is_still_a_duplicate_for_the_document() -> None:
    """foo.* and *.bar share foo.bar: the document's rule makes the second server fail."""
    outcomes = start_layout([ServerSpec(("foo.*",)), ServerSpec(("*.bar",))])
    assert outcomes[1].kind == DUPLICATE_CHANNEL
    assert outcomes[1].channel == "foo.bar"


def test_requests_on_wildcard_channels() -> None:
    running = [(1, ServerSpec(("foo.*",))), (2, ServerSpec(("bar",)))]
    assert publish_outcome(running, "foo.*") == RequestOutcome(REFUSED, (1,))
    assert publish_outcome(running, "x.*") == RequestOutcome(TIMEOUT)
    assert subscribe_outcome(running, "x.*") == RequestOutcome(REFUSED, (1, 2))
    assert subscribe_outcome([], "x.*") == RequestOutcome(TIMEOUT)
    with pytest.raises(InvalidChannelError):
        publish_outcome(running, "foo..bar")


def test_duplicate_owners_all_answer() -> None:
    running = [(1, ServerSpec(("foo.*",))), (2, ServerSpec(("*.bar",)))]
    assert publish_outcome(running, "foo.bar").describe() == "accepted by 1+2"
    assert deliveries(running, "foo.bar") == 2


TOKENS = ("a", "b")
entries = st.lists(st.sampled_from([*TOKENS, "*"]), min_size=1, max_size=3).flatmap(
    lambda tokens: st.sampled_from([".".join(tokens), ".".join([*tokens[:-1], ">"])])
)


def literal_channels(longest: int) -> list[str]:
    alphabet = [*TOKENS, "x"]
    return [
        ".".join(tokens)
        for size in range(1, longest + 2)
        for tokens in itertools.product(alphabet, repeat=size)
    ]


@given(first=entries, second=entries)
def test_common_channel_agrees_with_brute_force(first: str, second: str) -> None:
    """Entries overlap iff some literal channel over their tokens and one filler token matches both."""
    witness = common_channel(first, second)
    longest = max(len(first.split(".")), len(second.split(".")))
    brute = [c for c in literal_channels(longest) if matches(first, c) and matches(second, c)]
    assert (witness is not None) == bool(brute)
    if witness is not None:
        assert matches(first, witness)
        assert matches(second, witness)
    assert (common_channel(second, first) is None) == (witness is None)


@given(layout=st.lists(st.lists(entries, min_size=1, max_size=3, unique=True), min_size=1, max_size=4))
def test_servers_that_start_never_share_a_channel(layout: list[list[str]]) -> None:
    specs = [ServerSpec(tuple(channels)) for channels in layout]
    outcomes = start_layout(specs)
    started = [spec for spec, outcome in zip(specs, outcomes, strict=True) if outcome.started]
    assert outcomes[0].started
    for one, other in itertools.combinations(started, 2):
        assert channel_in_common(one.channels, other.channels) is None


def test_a_server_with_an_invalid_channel_and_a_duplicate_may_report_either() -> None:
    """The documents state both rules but not which check a server makes first (found by the streaming
    family: 0.25.6 reports the duplicate `>` before the invalid `foo bar` that follows it)."""
    outcomes = start_layout([ServerSpec((">",)), ServerSpec((">", "foo bar"))])
    second = outcomes[1]
    assert second.kind == InvalidChannelError.kind
    assert second.also == (DUPLICATE_CHANNEL,)
    assert second.conflicts == (1,)
    assert second.allows(DUPLICATE_CHANNEL)
    assert second.allows(InvalidChannelError.kind)
    assert not second.allows(STARTED)
    assert start_layout([ServerSpec(("foo bar",))])[0].also == ()
