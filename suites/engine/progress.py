"""A campaign's progress on stderr: how many of its cases are done, out of how many, and when it should end.

The total is the plan's: every family's budget on every target (and the mapping budget per adapter and
release profile). It is corrected as the campaign goes, so the ETA stays honest: a skipped family's
budget leaves it, a family that ends short of (or past) its budget counts what it ran, and one running
past its budget counts what it has run. The ETA is what is left at the campaign's average rate so far
(server starts included).

On a terminal each family has a tqdm bar (the campaign's cases done and total, rate, verdicts, elapsed
and ETA), cleared when the family ends; elsewhere (a file, a pipe, CI logs) plain lines without `\\r`,
one every `$NATS_CONFORMANCE_PROGRESS_SECONDS` (default 30) while a family runs. In both, each family
ends with one line of its own counts.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

SECONDS_ENV: Final = "NATS_CONFORMANCE_PROGRESS_SECONDS"
PLAIN_SECONDS: Final = 30.0
"""Seconds between two plain progress lines off a terminal (`SECONDS_ENV` sets another)."""
VERDICTS: Final = ("agree", "diverge", "expected", "unknown")


def plain_seconds() -> float:
    try:
        seconds = float(os.environ.get(SECONDS_ENV, ""))
    except ValueError:
        return PLAIN_SECONDS
    return seconds if seconds >= 0 else PLAIN_SECONDS


def clock(seconds: float) -> str:
    """`3725` as `1:02:05`, `65` as `1:05`."""
    minutes, second = divmod(int(seconds), 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{second:02d}" if hours else f"{minute}:{second:02d}"


@dataclass(slots=True)
class Progress:
    """The progress of a campaign of `total` planned cases; `begin` a family (or any share of the plan
    with a budget), `add` its judged cases, `end` it."""

    total: int = 0
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    """Standard error as it is when the display is made (not when this module was first imported)."""
    label: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    """The verdicts of the current share."""
    budget: int = 0
    finished: int = 0
    """Cases of the shares that ended."""
    started: float = field(default_factory=time.monotonic)
    shown: float = 0.0
    terminal: bool | None = None
    bar: Any = None

    def __post_init__(self) -> None:
        if self.terminal is None:
            self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.shown = time.monotonic()

    @property
    def done(self) -> int:
        """Cases of the campaign judged so far."""
        return self.finished + self.counts.total()

    @property
    def planned(self) -> int:
        """The campaign's total as it stands: the current share counts the larger of its budget and what
        it has run."""
        return self.total + max(0, self.counts.total() - self.budget)

    def begin(self, label: str, budget: int) -> None:
        self.label, self.budget = label, budget
        self.counts.clear()

    def _open_bar(self) -> None:
        """The share's bar, opened at its first cases (so that what is said before, such as a skip or
        the rules a server is judged by, is not written over a bar)."""
        from tqdm import tqdm

        self.bar = tqdm(
            total=self.planned,
            initial=self.done,
            desc=self.label,
            file=self.stream,
            leave=False,
            dynamic_ncols=True,
            mininterval=0.25,
            bar_format="{desc} {percentage:3.0f}%|{bar}| {n}/{total} cases{postfix}",
        )
        self._refresh_bar(now=True)

    def add(self, verdicts: Counter[str]) -> None:
        self.counts.update(verdicts)
        self._show_now()

    def set(self, verdicts: Counter[str] | dict[str, int]) -> None:
        """The current share's verdicts so far (a scaled-out run's, read from its journal)."""
        self.counts.clear()
        self.counts.update(verdicts)
        self._show_now()

    def _show_now(self) -> None:
        if self.terminal:
            if self.bar is None:
                self._open_bar()
            else:
                self._refresh_bar()
            return
        now = time.monotonic()
        interval = plain_seconds()
        if now - self.shown >= interval:
            self.shown = now
            self._line(self.summary())

    def end(self, skipped: bool = False) -> None:
        """The current share ended (a skipped one ran nothing): the total counts what it ran instead of
        its budget, and its line is written (none for a skipped one: the campaign says why)."""
        if self.bar is not None:
            self._refresh_bar(now=True)  # its last state, also for a share shorter than a refresh
            self.bar.close()
            self.bar = None
        self.total += self.counts.total() - self.budget
        self.budget = self.counts.total()
        line = self.summary()
        self.finished += self.counts.total()
        self.counts.clear()
        self.budget = 0
        self.shown = time.monotonic()
        if not skipped:
            self._line(line)

    def rates(self) -> tuple[float, float, float | None]:
        """Elapsed seconds, cases per second, and seconds left (None before the first case)."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        left = (max(self.planned - self.done, 0) / rate) if self.done else None
        return elapsed, rate, left

    def summary(self) -> str:
        """One plain line: the share's cases and verdicts, then the campaign's done/total and ETA."""
        elapsed, rate, left = self.rates()
        verdicts = " ".join(f"{name}={self.counts[name]}" for name in VERDICTS)
        share = f"{self.done / self.planned:.0%}" if self.planned else "-"
        eta = clock(left) if left is not None else "-"
        return (
            f"{self.label} {self.counts.total()} cases, {verdicts}; campaign {self.done}/{self.planned} "
            f"cases ({share}), {rate:,.0f}/s, elapsed {clock(elapsed)}, ETA {eta}"
        )

    def _refresh_bar(self, now: bool = False) -> None:
        elapsed, rate, left = self.rates()
        verdicts = " ".join(f"{name}={self.counts[name]}" for name in VERDICTS)
        self.bar.total = self.planned
        self.bar.n = self.done
        eta = "-" if left is None else clock(left)
        self.bar.set_postfix_str(
            f"{rate:,.0f}/s, {verdicts}, elapsed {clock(elapsed)}, ETA {eta}",
            refresh=False,
        )
        if now or time.monotonic() - self.shown >= self.bar.mininterval:
            self.shown = time.monotonic()
            self.bar.refresh()

    def _line(self, line: str) -> None:
        print(line, file=self.stream, flush=True)
