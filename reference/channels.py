"""NATS Streaming channel partitioning (docs.nats.io, NATS Streaming "Partitioning",
https://docs.nats.io/legacy/stan/nats-streaming-concepts/partitioning).

A partitioned server handles only the channels of its list (``store_limits.channels``), whose entries may
use the subject wildcards ``*`` and ``>``; several servers with one cluster ID share a NATS network, each
with its own list. The rules, by section of the document:

* "Partitioning": partitioning with clustering is a startup error.
* "Wildcards": an entry serves the literal channels it matches (``foo.*`` and ``bar.>`` accept
  ``foo.bar``, ``bar.baz``, ``bar.baz.bat``; ignore ``foo``, ``foo.bar.baz``, ``bar``,
  ``some.other.channel``); applications cannot publish to, or subscribe to, wildcard channels.
* "A given channel must be defined in a single server": a starting server sends its list to the
  running servers; one that has a channel in common answers with an error, and the starting server fails.
* "Applications behavior": a publish is received (and acknowledged) by the server that has the channel;
  with none, the publish times out. A subscription request reaches every server; those that do not
  handle the channel ignore it; with none, it times out.

Where the document is silent, observed behaviour of nats-streaming-server 0.25.6 decides, and the
function says so: which entries are valid, the empty list, and what requests on wildcard channels get.
Servers are identified by whatever labels the caller uses (the suite numbers them from 1 in start order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from nats_conformance.reference.errors import (
    InvalidChannelError,
    NoChannelError,
    PartitioningError,
    PartitioningWithClusteringError,
)
from nats_conformance.reference.matching import matches
from nats_conformance.reference.subjects import (
    FULL_WILDCARD,
    PARTIAL_WILDCARD,
    SEPARATOR,
    is_valid_publish_subject,
    is_valid_subject,
)

STARTED: Final = "started"
DUPLICATE_CHANNEL: Final = "duplicate-channel"
ACCEPTED: Final = "accepted"
REFUSED: Final = "refused"
TIMEOUT: Final = "timeout"
FILLER: Final = "x"
"""The token a witness channel uses where both entries have a wildcard."""

_FORBIDDEN_IN_CHANNELS: Final = frozenset("/")


def is_valid_channel_entry(entry: str) -> bool:
    """True iff ``entry`` may appear in a channel list: a valid subject by the subjects document, wildcards
    allowed as whole tokens ("Use of wildcards in configuration is allowed").

    Observed (the document is silent): ``/`` is refused too (``invalid channel name "a/b"``); an entry
    with a space passes the configuration parser, and the server then fails to start on it.
    """
    return is_valid_subject(entry) and _FORBIDDEN_IN_CHANNELS.isdisjoint(entry)


def is_valid_channel(name: str) -> bool:
    """True iff applications can publish to or subscribe to ``name``: a literal subject, no ``/``
    ("applications cannot publish to, or subscribe to, wildcard channels")."""
    return is_valid_publish_subject(name) and _FORBIDDEN_IN_CHANNELS.isdisjoint(name)


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One partitioned streaming server: its channel list (in configuration order) and whether
    clustering is enabled as well."""

    channels: tuple[str, ...]
    clustered: bool = False


def check_server(spec: ServerSpec) -> None:
    """Raise the ``PartitioningError`` that stops ``spec`` from starting on its own, if any.

    Checked in the order the server checks (observed): every entry is valid (``InvalidChannelError``,
    reported while reading the configuration), clustering is off (``PartitioningWithClusteringError``,
    documented in "Partitioning"), the list is not empty (``NoChannelError``: observed, ``stan: no
    configured channel``; the document only says the list must be given).
    """
    for entry in spec.channels:
        if not is_valid_channel_entry(entry):
            raise InvalidChannelError(f"invalid channel name {entry!r}")
    if spec.clustered:
        raise PartitioningWithClusteringError("channels partitioning in clustering mode is not supported")
    if not spec.channels:
        raise NoChannelError("partitioning is enabled but no channel is configured")


def serves(channels: Iterable[str], channel: str) -> bool:
    """True iff a server with list ``channels`` handles the literal ``channel`` ("Wildcards")."""
    return is_valid_channel(channel) and any(matches(entry, channel) for entry in channels)


def common_channel(first: str, second: str) -> str | None:
    """A literal channel that both entries serve, or None when they have none in common.

    The entries' tokens are walked together: a literal meets an equal literal or a ``*``; a ``>`` meets
    one or more remaining tokens of the other entry. Where both have a wildcard, the channel uses
    ``FILLER``. Both entries must be valid.
    """
    left, right = first.split(SEPARATOR), second.split(SEPARATOR)
    witness: list[str] = []
    for index in range(max(len(left), len(right))):
        mine = left[index] if index < len(left) else None
        theirs = right[index] if index < len(right) else None
        if FULL_WILDCARD in (mine, theirs):
            rest = right[index:] if mine == FULL_WILDCARD else left[index:]
            if not rest:
                return None
            return SEPARATOR.join(witness + [_literal(token) for token in rest])
        if mine is None or theirs is None:
            return None
        if mine == PARTIAL_WILDCARD:
            witness.append(_literal(theirs))
        elif theirs in (PARTIAL_WILDCARD, mine):
            witness.append(mine)
        else:
            return None
    return SEPARATOR.join(witness)


def _literal(token: str) -> str:
    return FILLER if token in (PARTIAL_WILDCARD, FULL_WILDCARD) else token


def channel_in_common(first: Sequence[str], second: Sequence[str]) -> tuple[str, str, str] | None:
    """The first (entry of ``first``, entry of ``second``, channel both serve), or None when the two
    lists have no channel in common."""
    for mine in first:
        for theirs in second:
            witness = common_channel(mine, theirs)
            if witness is not None:
                return mine, theirs, witness
    return None


@dataclass(frozen=True, slots=True)
class StartOutcome:
    """Whether a server starts: ``kind`` is ``STARTED``, ``DUPLICATE_CHANNEL`` or a ``PartitioningError``
    kind. For a duplicate, ``conflicts`` are the running servers with a channel in common and
    ``channel`` is one such channel."""

    kind: str
    conflicts: tuple[int, ...] = ()
    channel: str = ""
    detail: str = field(default="", compare=False)
    also: tuple[str, ...] = ()
    """Other failure kinds that equally apply: a configuration error of the server's own and a channel
    in common with a running server. The documents do not say which check comes first, so a server
    failing for either reason conforms."""

    @property
    def started(self) -> bool:
        return self.kind == STARTED

    def allows(self, kind: str) -> bool:
        """True iff a server reporting `kind` conforms to this outcome."""
        return kind == self.kind or kind in self.also

    def describe(self) -> str:
        return STARTED if self.started else f"failed: {' or '.join((self.kind, *self.also))}"


def start_outcome(spec: ServerSpec, running: Sequence[tuple[int, ServerSpec]]) -> StartOutcome:
    """Whether ``spec`` starts while the servers ``running`` (label, spec) are up.

    The server's own configuration (``check_server``) and the duplicate rule ("A given channel must be
    defined in a single server"): the server fails when any running server has a channel in common
    with it. When both apply, either kind conforms (``StartOutcome.also``).
    """
    conflicts: list[int] = []
    witness = ""
    for label, other in running:
        found = channel_in_common(spec.channels, other.channels)
        if found is not None:
            conflicts.append(label)
            witness = witness or found[2]
    try:
        check_server(spec)
    except PartitioningError as error:
        also = (DUPLICATE_CHANNEL,) if conflicts else ()
        return StartOutcome(error.kind, tuple(conflicts), witness, str(error), also)
    if conflicts:
        return StartOutcome(
            DUPLICATE_CHANNEL,
            tuple(conflicts),
            witness,
            f"channel {witness!r} would be served by servers {', '.join(map(str, conflicts))} too",
        )
    return StartOutcome(STARTED)


def start_layout(layout: Sequence[ServerSpec], *, first_label: int = 1) -> tuple[StartOutcome, ...]:
    """The outcome of starting ``layout``'s servers one after the other, each once the previous ones have
    started or failed; servers are labelled from ``first_label`` in order."""
    outcomes: list[StartOutcome] = []
    running: list[tuple[int, ServerSpec]] = []
    for offset, spec in enumerate(layout):
        outcome = start_outcome(spec, running)
        outcomes.append(outcome)
        if outcome.started:
            running.append((first_label + offset, spec))
    return tuple(outcomes)


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """What a client request gets: ``ACCEPTED`` by ``servers``, ``REFUSED`` (an error answer) by
    ``servers``, or ``TIMEOUT`` (no answer)."""

    kind: str
    servers: tuple[int, ...] = ()

    def describe(self) -> str:
        """``accepted by 1``, ``accepted by 1+3``, ``refused by 2``, ``timeout``."""
        if self.kind == TIMEOUT:
            return TIMEOUT
        return f"{self.kind} by {'+'.join(map(str, self.servers))}"


def _answering(kind: str, servers: Iterable[int]) -> RequestOutcome:
    chosen = tuple(sorted(servers))
    return RequestOutcome(kind, chosen) if chosen else RequestOutcome(TIMEOUT)


def _check_request_channel(channel: str) -> None:
    if not is_valid_subject(channel):
        raise InvalidChannelError(f"the reference does not model requests on the malformed name {channel!r}")


def owners(running: Sequence[tuple[int, ServerSpec]], channel: str) -> tuple[int, ...]:
    """The running servers that handle the literal ``channel``, sorted."""
    return tuple(sorted(label for label, spec in running if serves(spec.channels, channel)))


def publish_outcome(running: Sequence[tuple[int, ServerSpec]], channel: str) -> RequestOutcome:
    """A publish on ``channel`` with the servers ``running`` ("Applications behavior").

    A literal channel is received and acknowledged by every running server that has it defined (one,
    when the duplicate rule held); with none, the publish times out. A wildcard channel cannot be
    published to; observed: every running server with an entry that matches the channel's text (the
    wildcard tokens taken literally, as NATS routes it) answers with an error, and with none it times out.
    """
    _check_request_channel(channel)
    if is_valid_channel(channel):
        return _answering(ACCEPTED, owners(running, channel))
    return _answering(
        REFUSED, (label for label, spec in running if any(matches(e, channel) for e in spec.channels))
    )


def subscribe_outcome(running: Sequence[tuple[int, ServerSpec]], channel: str) -> RequestOutcome:
    """A subscription request on ``channel`` with the servers ``running`` ("Applications behavior").

    Every server receives it; a server that does not handle the channel ignores it, so a literal channel
    is served by every running server that has it defined, and times out with none. A wildcard channel
    cannot be subscribed to; observed: every running server refuses it (the name is checked before the
    server's own list), and with none running it times out.
    """
    _check_request_channel(channel)
    if is_valid_channel(channel):
        return _answering(ACCEPTED, owners(running, channel))
    return _answering(REFUSED, (label for label, _ in running))


def deliveries(running: Sequence[tuple[int, ServerSpec]], channel: str) -> int:
    """How many times a subscriber on ``channel`` receives one message published on it: once per server
    serving both (one; with the channel on several servers, "a subscription would be created on all
    servers handling the channel" and each delivers)."""
    if not is_valid_channel(channel):
        return 0
    return len(owners(running, channel))
