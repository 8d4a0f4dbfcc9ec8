"""Why a case is `unknown`: the one short list of reasons (docs/record-schema.md, "Unknown reasons").

A case is `unknown` only when its outcome could not be observed. Whoever makes such a case states why, at
the start of its `detail`: the reason, then ``: `` and what happened (`stated`), e.g. ``timeout: no reply
to $JS.API.INFO within 5.0s``. Three reasons are told by the case's `difference` instead (`BY_DIFFERENCE`).
`records.rules.UNKNOWN_REASONS` reads a row's reason from these, on both engines; an `unknown` row that
states none (a run recorded before reasons were stated) reads as `UNLISTED`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from nats_conformance.records.aggregates import VerdictCount
from nats_conformance.records.releases import Release, sorted_releases
from nats_conformance.records.schema import CRASH_UNCONFIRMED, NOT_SUPPORTED, REFUSED

TIMEOUT, CONNECTION_LOST, SERVER_DIED, SERVER_STALLED, SERVER_ERROR = (
    "timeout",
    "connection-lost",
    "server-died",
    "server-stalled",
    "server-error",
)
STEP_UNOBSERVED, NOTHING_OBSERVED, UNOBSERVABLE, ADAPTER_FAILED = (
    "step-unobserved",
    "nothing-observed",
    "unobservable",
    "adapter-failed",
)
UNLISTED: Final = "unlisted"

STATED: Final = {
    TIMEOUT: "a wait on the server passed its deadline while the server still ran: no PONG, no reply to a "
    "JetStream or streaming request, a reload neither confirmed nor refused, a start that neither ended "
    "nor became ready",
    CONNECTION_LOST: "a connection to the server dropped or could not be opened while the server still ran",
    SERVER_DIED: "the server ended during the unit with no panic in its log (killed from outside: SIGKILL, "
    "a fault injected by the nemesis, the OOM killer); it was restarted",
    SERVER_STALLED: "the server answered nothing for longer than the unit's waits allow (stopped with "
    "SIGSTOP, starved of CPU); it was restarted",
    SERVER_ERROR: "the server answered something the unit cannot go on from and that is not what it tests "
    "(a stream it could not store, a reply that is not JSON, a process that could not be started)",
    STEP_UNOBSERVED: "a step the case depends on (an earlier step of a sequence, the server it runs beside) "
    "was not observed, so the case was not run",
    NOTHING_OBSERVED: "the unit ended without a failure but left nothing to judge the case by",
    UNOBSERVABLE: "the protocol cannot carry what the case would observe (a subject with white space in a "
    "MSG frame)",
    ADAPTER_FAILED: "a library adapter exited, stopped answering or answered out of protocol",
}
"""The reasons a producer states at the start of an `unknown` case's `detail` (`stated`), with what each
means."""

BY_DIFFERENCE: Final = {
    CRASH_UNCONFIRMED: "crash-unconfirmed",
    NOT_SUPPORTED: NOT_SUPPORTED,
    REFUSED: REFUSED,
}
"""The reasons an `unknown` case's `difference` tells, whatever its `detail` says: a server at a URL that
stopped answering (`records.schema.CRASH_UNCONFIRMED`), a question an adapter was not asked, and the
subjects of a refused mapping in runs recorded before 2026-11-29."""

REASONS: Final = {
    **STATED,
    "crash-unconfirmed": "a server at a URL stopped answering during the unit (difference "
    f"{CRASH_UNCONFIRMED}): most likely a crash, which its log, not the suite's to read, cannot confirm",
    NOT_SUPPORTED: "an adapter's hello leaves out the operation or a function of the question (not counted "
    "by --max-unknown)",
    REFUSED: "runs before 2026-11-29 only: a subject of a mapping the server refused (not counted by "
    "--max-unknown)",
    UNLISTED: "no reason stated: a run recorded before unknown cases stated their reason",
}
"""Every reason a report can show, in the order it shows them, with what each means."""

SEPARATOR: Final = ": "


def stated(reason: str, text: str) -> str:
    """An `unknown` case's `detail`: `reason` (one of `STATED`), then what happened."""
    if reason not in STATED:
        raise ValueError(f"{reason!r} is not a listed reason of an unknown case")
    return f"{reason}{SEPARATOR}{text}"


def reason_stated(detail: str) -> str:
    """The reason `detail` begins with ('' when it states none)."""
    reason, separator, _ = detail.partition(SEPARATOR)
    return reason if separator and reason in STATED else ""


def unstated(detail: str) -> str:
    """`detail` without the reason it begins with: what happened."""
    reason = reason_stated(detail)
    return detail[len(reason) + len(SEPARATOR) :] if reason else detail


LIMIT: Final = 0.01
"""The share of a release's cases that may be unknown (issue 56: at most 1 %); a release above it is
marked in the table."""


@dataclass(frozen=True, slots=True)
class UnknownShare:
    """One release's cases, those of them `unknown` that the exit status counts, and every `unknown` case
    per reason (in `records.unknowns.REASONS` order)."""

    release: Release
    cases: int
    unknown: int
    reasons: tuple[tuple[str, int], ...]

    @property
    def share(self) -> float:
        return self.unknown / self.cases if self.cases else 0.0

    @property
    def share_text(self) -> str:
        """The share as a percentage with two decimals; ``< 0.01 %`` for a few cases of many, never a
        misleading ``0.00 %``."""
        return "< 0.01 %" if 0 < self.share < 0.0001 else f"{self.share * 100:.2f} %"

    @property
    def above(self) -> bool:
        """True iff more than `LIMIT` of its cases are unknown."""
        return self.share > LIMIT

    def of(self, reason: str) -> int:
        return dict(self.reasons).get(reason, 0)


def unknown_shares(counts: Iterable[VerdictCount]) -> tuple[UnknownShare, ...]:
    """Each release's `UnknownShare`, in release order."""
    cases: dict[Release, int] = {}
    unknown: dict[Release, int] = {}
    reasons: dict[Release, dict[str, int]] = {}
    for item in counts:
        cases[item.release] = cases.get(item.release, 0) + item.count
        if item.tally == "unknown":
            unknown[item.release] = unknown.get(item.release, 0) + item.count
        if item.verdict == "unknown":
            held = reasons.setdefault(item.release, {})
            held[item.reason] = held.get(item.reason, 0) + item.count
    return tuple(
        UnknownShare(
            release,
            cases[release],
            unknown.get(release, 0),
            tuple(sorted(reasons.get(release, {}).items(), key=lambda pair: _order(pair[0]))),
        )
        for release in sorted_releases(cases)
    )


def _order(reason: str) -> tuple[int, str]:
    """A reason's place: the list's order, one it does not hold last."""
    names = list(REASONS)
    return (names.index(reason) if reason in names else len(names), reason)


def reasons_shown(shares: Sequence[UnknownShare]) -> list[str]:
    """The reasons any release's unknown cases have: the table's columns."""
    return sorted({reason for item in shares for reason, _ in item.reasons}, key=_order)


def share_line(item: UnknownShare) -> str:
    """One line of a release's unknown cases, for a command's output: ``unknown on nats-server 2.14.10:
    31 of 87,101 cases (0.04 %): timeout 20, connection-lost 11``."""
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in item.reasons)
    return (
        f"unknown on {item.release.implementation} {item.release.version}: {item.unknown:,} of "
        f"{item.cases:,} cases ({item.share_text})" + (f": {reasons}" if reasons else "")
    )
