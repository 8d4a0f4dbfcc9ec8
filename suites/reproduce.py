"""How a divergence is shown: the case, a one-line replay command and the `nats server mapping` line."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from records.schema import Case

SHOWN = 5


def replay_command(case: Case) -> str:
    """The command that runs this one case again on a fresh server of the same release and backend."""
    if case.feature == "republish":  # needs the stream's subjects, kept in the case's detail
        from suites.republish import replay_command as republish_replay

        return republish_replay(case)
    if case.backend == "adapter":  # a transform library: the question again, to the same command
        from suites.library import adapter_command

        return shlex.join(
            [
                *("python", "-m", "suites", "replay", "--target", f"adapter:{adapter_command(case)}"),
                *("--profile", case.server_version, "--feature", case.feature, "--functions", case.functions),
                *("--source", case.source, "--destination", case.destination, "--subject", case.subject),
            ]
        )
    parts = [
        "python",
        "-m",
        "suites",
        "replay",
        "--server-version",
        case.server_version,
        "--backend",
        case.backend,
        "--feature",
        case.feature,
        "--source",
        case.source,
    ]
    if case.feature != "streaming":  # a streaming case's source is its whole layout
        parts += ["--destination", case.destination]
    if case.subject:
        parts += ["--subject", case.subject]
    return shlex.join(parts)


def nats_cli_command(case: Case) -> str:
    """The equivalent `nats server mapping` invocation (nats CLI), for people who have it."""
    if case.feature == "republish":  # a stream with the option: `nats stream add`
        from suites.republish import nats_cli_command as republish_cli

        return republish_cli(case)
    parts = ["nats", "server", "mapping", case.source, case.destination]
    if case.subject:
        parts.append(case.subject)
    return shlex.join(parts)


def describe_case(case: Case) -> str:
    lines = [
        f"{case.feature} {case.verdict} on {case.implementation} {case.server_version} ({case.backend}):"
        f" {case.case_class}",
        f"  source:      {case.source}",
        f"  destination: {case.destination}",
    ]
    if case.subject:
        lines.append(f"  subject:     {case.subject}")
    lines += [f"  expected:    {case.expected}", f"  observed:    {case.observed or '(nothing)'}"]
    if case.detail:
        lines.append(f"  detail:      {case.detail}")
    lines.append(f"  replay:      {replay_command(case)}")
    # The nats CLI maps subjects; it has no streaming, matching or subject-validity counterpart.
    if case.feature not in ("streaming", "matching", "subjects") and case.functions != "partition-op":
        lines.append(f"  nats CLI:    {nats_cli_command(case)}")
    return "\n".join(lines)


def describe_divergences(cases: Sequence[Case]) -> str:
    """A failure message: the first few divergences in full, and how many more there were."""
    shown = [describe_case(case) for case in cases[:SHOWN]]
    more = len(cases) - SHOWN
    if more > 0:
        shown.append(f"... and {more} more diverging cases (see the run's records)")
    return f"{len(cases)} case(s) diverged from the reference:\n" + "\n".join(shown)
