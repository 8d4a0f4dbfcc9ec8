"""How a divergence is shown: the case, its replay command and its `nats` CLI line, or the server
configuration where natscli cannot configure it (an account import); all derived from the record by
records.replay."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from nats_conformance.records.files import printable
from nats_conformance.records.replay import nats_cli_command, replay_command, server_config
from nats_conformance.records.schema import Case

SHOWN = 5


def describe_case(case: Case) -> str:
    """A case as lines: its class, columns, replay command and nats CLI line; bytes that are not UTF-8
    (a token cut inside a character) as ``\\xNN``."""
    source = case.source or ("(default >)" if case.feature == "republish" else "")
    lines = [
        f"{case.feature} {case.verdict} on {case.implementation} {case.server_version} ({case.backend}):"
        f" {case.case_class}",
        f"  source:      {source}",
        f"  destination: {case.destination}",
    ]
    if case.subject:
        lines.append(f"  subject:     {case.subject}")
    lines += [f"  expected:    {case.expected}", f"  observed:    {case.observed or '(nothing)'}"]
    if case.detail:
        lines.append(f"  detail:      {case.detail}")
    lines.append(f"  replay:      {replay_command(case)}")
    cli = nats_cli_command(case)
    if cli:
        lines.append(f"  nats CLI:    {cli}")
    config = server_config(case)
    if config:
        lines.append("  server config:")
        lines += [f"    {line}" for line in config.splitlines()]
    return printable("\n".join(lines))


def describe_divergences(cases: Sequence[Case]) -> str:
    """A failure message: the first few divergences in full, and how many more there were."""
    shown = [describe_case(case) for case in cases[:SHOWN]]
    more = len(cases) - SHOWN
    if more > 0:
        shown.append(f"... and {more} more diverging cases (see the run's records)")
    return f"{len(cases)} case(s) diverged from the reference:\n" + "\n".join(shown)


class Divergence(AssertionError):
    """A property found a case the reference disagrees with; each class of divergence raises its own
    subclass (`divergence_type`)."""


@cache
def divergence_type(case_class: str) -> type[Divergence]:
    """The exception of one divergence class. Hypothesis tells failures apart by exception type and
    place, so with one type per class a property shrinks and reports every distinct class it finds
    (``report_multiple_bugs``), not only the first."""
    return type(f"Divergence[{case_class}]", (Divergence,), {"__module__": __name__})


def assert_agrees(cases: Sequence[Case]) -> None:
    """Raise the divergence type of the first diverging case's class, describing all of them."""
    diverged = [case for case in cases if case.verdict == "diverge"]
    if diverged:
        raise divergence_type(diverged[0].case_class)(describe_divergences(diverged))
