"""A layout: the partitioned streaming servers of one cluster, in start order, and its JSON form.

A streaming case keeps its layout in the `layout` column; the JSON form (records.replay.layout_json) is
what `python -m nats_conformance.suites replay --feature streaming --source ...` reads back: a list with one
item per server, either its channel list (`["foo.*", "bar.>"]`) or, for a server with clustering enabled as
well, `{"channels": [...], "clustered": true}`. Servers are labelled from 1 in start order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.replay import layout_json
from nats_conformance.reference.channels import ServerSpec, channel_in_common, is_valid_channel_entry
from nats_conformance.reference.errors import ConformanceError


class LayoutError(ConformanceError, ValueError):
    """A layout's JSON text cannot be read (a replay argument or a record)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """The servers of one cluster, in start order."""

    servers: tuple[ServerSpec, ...]

    @classmethod
    def of(cls, *channel_lists: tuple[str, ...] | list[str]) -> Layout:
        """A layout of plain partitioned servers, one channel list each."""
        return cls(tuple(ServerSpec(tuple(channels)) for channels in channel_lists))

    def __iter__(self) -> Iterator[ServerSpec]:
        return iter(self.servers)

    def __len__(self) -> int:
        return len(self.servers)

    def labels(self) -> range:
        return range(1, len(self.servers) + 1)

    def spec(self, label: int) -> ServerSpec:
        return self.servers[label - 1]

    def to_json(self) -> str:
        return layout_json(self.servers)

    @classmethod
    def from_json(cls, text: str) -> Layout:
        """Read the JSON form; raises `LayoutError` naming what is wrong."""
        try:
            items = json.loads(text)
        except json.JSONDecodeError as error:
            raise LayoutError(f'\'layout\' must be JSON such as [["foo.*"],["bar.>"]] ({error})') from None
        if not isinstance(items, list) or not items:
            raise LayoutError(f"'layout' must be a non-empty JSON list of channel lists (got {text!r})")
        servers = []
        for item in items:
            clustered = False
            channels = item
            if isinstance(item, dict):
                channels, clustered = item.get("channels"), bool(item.get("clustered", False))
            if not isinstance(channels, list) or not all(isinstance(c, str) for c in channels):
                raise LayoutError(f"each server must be a list of channel names (got {item!r})")
            servers.append(ServerSpec(tuple(channels), clustered))
        return cls(tuple(servers))

    def may_conflict(self, earlier: int, later: int) -> bool:
        """True iff servers `earlier` and `later` (labels) have a channel in common, so `later` must not
        start before `earlier` has started or failed. Servers without one can start together: a server
        only ever fails on a channel it has in common with another (the implementation finds a subset
        of the common channels; see the `partition-overlap-undetected` expectation)."""
        first = [c for c in self.spec(earlier).channels if is_valid_channel_entry(c)]
        second = [c for c in self.spec(later).channels if is_valid_channel_entry(c)]
        return channel_in_common(first, second) is not None


def layout_column(layout: Layout) -> tuple[ServerSpec, ...]:
    """What a case records of its layout (the `layout` column); `layout_of` reads it back."""
    return layout.servers


def layout_of(case: CaseFile) -> Layout:
    """A case's layout: its `layout` column, else its `source` as the JSON form (a replay command line
    spells the layout there)."""
    return Layout(case.layout) if case.layout else Layout.from_json(case.source)
