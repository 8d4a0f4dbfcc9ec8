"""Strategies for streaming layouts and the channels to ask them about.

Channel entries are built from three tokens (`foo`, `bar`, `baz`) and the wildcards, so that servers
often have channels in common, which is what the duplicate rule is about. Layouts shrink towards fewer
servers, shorter lists and the token `foo`; rare server kinds (an invalid entry, an empty list,
clustering switched on) shrink towards a plain server.
"""

from __future__ import annotations

from hypothesis import strategies as st

from nats_conformance.reference.channels import ServerSpec, is_valid_channel_entry
from nats_conformance.reference.subjects import FULL_WILDCARD, PARTIAL_WILDCARD
from nats_conformance.suites.streaming.layouts import Layout

TOKENS = ("foo", "bar", "baz")
OTHER_TOKENS = ("qux", "x")
"""Tokens no entry uses: channels made of them reach nobody, or only wildcards."""

INVALID_ENTRIES = ("foo..bar", "foo.", ".foo", "fo*", "foo.>.bar", "b>", "foo/bar", "foo bar")
"""Entries a server must refuse: an empty token (three ways), a wildcard inside a token, `>` not last,
`/` (observed rule), a space (the subjects document's rule)."""

SERVER_KINDS = ("plain",) * 17 + ("invalid-entry", "empty", "clustered")
"""About one server in seven of a 4-server layout is one of the rare kinds."""


@st.composite
def channel_entries(draw: st.DrawFn) -> str:
    """A valid entry of one to three tokens: literals from `TOKENS` or `*`, and sometimes `>` last."""
    tokens = draw(st.lists(st.sampled_from((*TOKENS, PARTIAL_WILDCARD)), min_size=1, max_size=3))
    # A lone `>` serves every channel and so collides with every other server: keep it rare.
    if draw(st.integers(0, 3)) == 0 and (len(tokens) > 1 or draw(st.integers(0, 3)) == 0):
        tokens[-1] = FULL_WILDCARD
    return ".".join(tokens)


def channel_lists() -> st.SearchStrategy[tuple[str, ...]]:
    """One to three distinct valid entries (a server's channels are the keys of a map)."""
    return st.lists(channel_entries(), min_size=1, max_size=3, unique=True).map(tuple)


@st.composite
def server_specs(draw: st.DrawFn) -> ServerSpec:
    """A server: mostly a plain valid list; rarely one with an invalid entry added, an empty list, or
    clustering enabled as well."""
    kind = draw(st.sampled_from(SERVER_KINDS))
    if kind == "empty":
        return ServerSpec(())
    channels = draw(channel_lists())
    if kind == "invalid-entry":
        bad = draw(st.sampled_from(INVALID_ENTRIES))
        return ServerSpec((*channels, bad))
    return ServerSpec(channels, clustered=kind == "clustered")


def layouts(*, min_servers: int = 2, max_servers: int = 4) -> st.SearchStrategy[Layout]:
    """Layouts of `min_servers` to `max_servers` servers in start order."""
    return st.lists(server_specs(), min_size=min_servers, max_size=max_servers).map(
        lambda specs: Layout(tuple(specs))
    )


@st.composite
def channel_for(draw: st.DrawFn, layout: Layout) -> str:
    """A channel to ask `layout` about: mostly one that an entry of the layout serves (its wildcards
    filled with tokens, possibly foreign ones), else a literal channel of known and foreign tokens, and
    rarely an entry itself (a wildcard channel, which applications may not use)."""
    entries = sorted({c for spec in layout for c in spec.channels if is_valid_channel_entry(c)})
    choice = draw(st.integers(0, 9)) if entries else 9
    if choice <= 5:
        entry = draw(st.sampled_from(entries))
        tokens: list[str] = []
        for token in entry.split("."):
            if token == PARTIAL_WILDCARD:
                tokens.append(draw(st.sampled_from((*TOKENS, *OTHER_TOKENS))))
            elif token == FULL_WILDCARD:
                tokens += draw(st.lists(st.sampled_from((*TOKENS, *OTHER_TOKENS)), min_size=1, max_size=2))
            else:
                tokens.append(token)
        return ".".join(tokens)
    if choice == 6:
        return draw(st.sampled_from(entries))
    return ".".join(draw(st.lists(st.sampled_from((*TOKENS, *OTHER_TOKENS)), min_size=1, max_size=4)))


@st.composite
def layouts_with_channels(
    draw: st.DrawFn, *, min_channels: int = 3, max_channels: int = 8
) -> tuple[Layout, tuple[str, ...]]:
    """A layout (2-4 servers) and distinct channels to publish and subscribe on."""
    layout = draw(layouts())
    channels = draw(st.lists(channel_for(layout), min_size=min_channels, max_size=max_channels, unique=True))
    return layout, tuple(channels)
