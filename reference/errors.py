"""Error tree of nats-conformance.

`ConformanceError` is the root of every error the product raises on purpose; command lines catch it once
and print one line. The reference's own errors (invalid subjects, invalid mappings) live below it.

Every error the reference raises carries a stable, short kebab-case ``kind`` (a class attribute): the
adapter protocol reports it verbatim, and suites compare kinds, never message texts.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from types import FrameType
from typing import Any, ClassVar


class ConformanceError(Exception):
    """Root of every deliberate nats-conformance error; its message is one line meant for a user."""

    kind: ClassVar[str] = "error"


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised in the main thread as a kind of Ctrl-C's KeyboardInterrupt, so that the
    same clean-up runs (servers stopped, records flushed, the journal marked interrupted) and Hypothesis
    stops at once rather than replaying the interrupted example."""


class HungUp(Terminated):
    """SIGHUP arrived (the terminal or the session that ran the command went away): ends it as SIGTERM
    does, with its own exit status (129)."""


ENDINGS: dict[str, tuple[int, str]] = {
    "SIGINT": (130, "interrupted"),
    "SIGTERM": (143, "terminated"),
    "SIGHUP": (129, "hung up"),
}
"""The exit status and the one line of a command a signal ended."""
_KINDS: dict[int, type[KeyboardInterrupt]] = {
    signal.SIGINT: KeyboardInterrupt,
    signal.SIGTERM: Terminated,
    signal.SIGHUP: HungUp,
}

_PENDING: list[type[KeyboardInterrupt]] = []
"""The interrupts signals raised during the current command."""


def interruption(error: BaseException) -> str:
    """The signal an interrupting exception stands for ('' for any other exception). Any exception
    raised once an interrupt has come stands for it: code the interrupt broke off may raise an error of
    its own in its place (Hypothesis's test wrapper fails an internal assertion when Ctrl-C lands while
    it sets up)."""
    if isinstance(error, KeyboardInterrupt):
        return _signal_name(type(error))
    if _PENDING:
        return _signal_name(_PENDING[0])
    return ""


def _signal_name(kind: type[KeyboardInterrupt]) -> str:
    if issubclass(kind, HungUp):
        return "SIGHUP"
    return "SIGTERM" if issubclass(kind, Terminated) else "SIGINT"


_HELD: list[bool] = []
"""Holds True while `interrupts_held` defers interrupts."""


def _interrupt(signum: int, frame: FrameType | None) -> None:
    kind = _KINDS.get(signum, KeyboardInterrupt)
    _PENDING.append(kind)
    if not _HELD:
        raise kind


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Defer a signal's interrupt to the end of the block: for a native library's import, which runs
    Python code from C (DuckDB's builds its enums so) and aborts with a traceback of its own when an
    exception is raised there."""
    _HELD.append(True)
    try:
        yield
    finally:
        _HELD.pop()
    raise_pending_interrupt()


def _drop_interrupts(hook: Callable[[Any], object], unraisable: Any) -> None:
    """Print no traceback for an interrupt lost where it was raised (`raise_pending_interrupt` raises it
    again); any other exception goes to `hook`."""
    if not isinstance(unraisable.exc_value, KeyboardInterrupt):
        hook(unraisable)


def raise_pending_interrupt() -> None:
    """Raise again an interrupt a signal raised where it was lost: an exception raised inside a
    garbage-collector callback (Hypothesis registers one) is printed and dropped, so a loop calls this
    between units."""
    if _PENDING:
        raise _PENDING[0]


def interrupt_later(kind: type[KeyboardInterrupt]) -> None:
    """Have the next `raise_pending_interrupt` raise `kind`: an interrupt that comes other than by a
    signal to this process (the driver of a scaled-out campaign stopping its tasks)."""
    _PENDING.append(kind)


def forget_interrupts() -> None:
    """Drop the interrupts not raised yet (at the end of a command, or of a task in a reused process)."""
    _PENDING.clear()


class UsageError(ConformanceError, ValueError):
    """A command line's arguments are wrong (an unknown option, a bad number, a missing argument)."""

    kind: ClassVar[str] = "invalid-argument"


def ignore_signals() -> None:
    """Ignore SIGINT, SIGTERM and SIGHUP from now on: a command already ending by one of them keeps its
    one line and exit status when the signal comes again (a second Ctrl-C, a terminal's SIGHUP after
    its SIGINT) instead of dying of it with a traceback."""
    for number in _KINDS:
        signal.signal(number, signal.SIG_IGN)


def forget_escaped_interrupt() -> None:
    """Make CPython forget a KeyboardInterrupt that escaped code run from a string. CPython (3.8 and
    later) remembers one that left an ``exec`` of a string (dataclasses, attrs and Hypothesis build code
    so) even once the program has handled it, and at exit kills its own process with SIGINT: status -2,
    no line, in place of the command's 130. Running a string resets that memory."""
    exec("")  # an empty string, run only for the side effect above


def run_command(command: Callable[[], int], *, own_process: bool = False) -> int:
    """A command line's exit status: `command`'s, or 2 after one `nats-conformance: error: ...` line on
    stderr for a `ConformanceError`, or 130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP) when interrupted
    (whatever error the interrupt turned into, see `interruption`).

    Once interrupted, the signals are ignored while the line is printed; `own_process` (the command is
    this process's own, about to exit with that status) keeps them ignored until the process exits,
    rather than handing them back to Python's defaults for the last steps of the exit."""
    # Ctrl-C interrupts even a command started where SIGINT is ignored (a background job of a script).
    previous = {number: signal.signal(number, _interrupt) for number in _KINDS}
    unraisable = sys.unraisablehook
    sys.unraisablehook = partial(_drop_interrupts, unraisable)
    interrupted = False
    try:
        return int(command())
    except BaseException as error:
        cause = interruption(error)
        if cause:
            ignore_signals()
            interrupted = True
            forget_escaped_interrupt()
            status, line = ENDINGS[cause]
            print(f"nats-conformance: {line}", file=sys.stderr)
            return status
        if not isinstance(error, ConformanceError):
            raise
        print(f"nats-conformance: error: {error}", file=sys.stderr)
        return 2
    finally:
        if not (interrupted and own_process):
            for number, handler in previous.items():
                signal.signal(number, handler)
        sys.unraisablehook = unraisable
        forget_interrupts()


class MappingError(ConformanceError, ValueError):
    """A subject mapping (source, destination or weighted list) that a release rejects.

    Args:
        detail: one line saying what is wrong and where (the offending token when there is one).
    """

    kind: ClassVar[str] = "invalid-mapping"

    def __init__(self, detail: str) -> None:
        super().__init__(" ".join(detail.split()) or self.kind)
        self.detail = str(self)


class InvalidSourceError(MappingError):
    """The mapping source is not a valid subject (empty token, whitespace, ``>`` not last)."""

    kind = "invalid-source"


class InvalidDestinationError(MappingError):
    """The destination is not a valid mapping destination subject (empty token, whitespace outside a
    function token, a ``*`` token, ``>`` present in only one of source and destination, empty)."""

    kind = "invalid-destination"


class UnknownFunctionError(MappingError):
    """A ``{{...}}`` destination token names no mapping function of any release."""

    kind = "unknown-function"


class UnsupportedFunctionError(MappingError):
    """A ``{{...}}`` token names a mapping function that this release's mapping validator does not
    accept (it appeared later, or it exists in the transform engine only, as ``left``/``right``)."""

    kind = "unsupported-function"


class FunctionNotAvailableError(MappingError):
    """An account function where its name is not known: ``{{account-hash-import()}}`` outside an import,
    or any of them where the transform engine meets it (``reference.functions``)."""

    kind = "function-not-available"


class WrongArgumentCountError(MappingError):
    """A mapping function got too few or too many arguments."""

    kind = "wrong-argument-count"


class InvalidArgumentError(MappingError):
    """A mapping function argument is not an integer, out of the 32-bit range where that is checked,
    or a ``split`` separator containing a space or a dot."""

    kind = "invalid-argument"


class WildcardIndexOutOfRangeError(MappingError):
    """A wildcard index exceeds the number of ``*`` wildcards in the source (or the source has none)."""

    kind = "wildcard-index-out-of-range"


class WildcardsNotUsedError(MappingError):
    """The release requires every source ``*`` to be referenced in the destination (before 2.10)."""

    kind = "wildcards-not-used"


class InvalidWeightError(MappingError):
    """A weighted-destination weight outside 0..100 (or not an integer / ``N%`` text)."""

    kind = "invalid-weight"


class TotalWeightError(MappingError):
    """The weights of one weighted list (per cluster from 2.10) add up to more than 100."""

    kind = "total-weight-exceeded"


class DuplicateDestinationError(MappingError):
    """The same destination appears twice in one weighted list."""

    kind = "duplicate-destination"


MAPPING_ERROR_KINDS: tuple[str, ...] = (
    InvalidSourceError.kind,
    InvalidDestinationError.kind,
    UnknownFunctionError.kind,
    UnsupportedFunctionError.kind,
    FunctionNotAvailableError.kind,
    WrongArgumentCountError.kind,
    InvalidArgumentError.kind,
    WildcardIndexOutOfRangeError.kind,
    WildcardsNotUsedError.kind,
    InvalidWeightError.kind,
    TotalWeightError.kind,
    DuplicateDestinationError.kind,
)


class InvalidVersionError(ConformanceError, ValueError):
    """A text that is no version: not ``2.14.5``, ``v2.14.5``, a line ``2.10`` or a pre-release
    ``2.14.6-RC.1`` (``reference.versions.Version.parse``)."""

    kind = "invalid-version"


class UnknownVersionError(ConformanceError, ValueError):
    """A server version the reference has no release profile for."""

    kind = "unknown-version"


class SubjectMismatchError(ConformanceError, ValueError):
    """``Transform.apply`` was given a subject that the mapping source does not match."""

    kind = "subject-mismatch"


class PartitioningError(ConformanceError, ValueError):
    """A NATS Streaming server's channel-partitioning configuration that it refuses at startup
    (https://docs.nats.io/legacy/stan/nats-streaming-concepts/partitioning)."""

    kind: ClassVar[str] = "invalid-partitioning"


class InvalidChannelError(PartitioningError):
    """A channel entry that is not a valid channel name (wildcards allowed as whole tokens)."""

    kind = "invalid-channel"


class NoChannelError(PartitioningError):
    """Partitioning is on but the channel list is empty."""

    kind = "no-channel"


class PartitioningWithClusteringError(PartitioningError):
    """Partitioning and clustering are both enabled ("will result in a startup error")."""

    kind = "partitioning-with-clustering"


PARTITIONING_ERROR_KINDS: tuple[str, ...] = (
    InvalidChannelError.kind,
    NoChannelError.kind,
    PartitioningWithClusteringError.kind,
)
