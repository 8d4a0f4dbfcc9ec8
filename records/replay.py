"""The commands that run one recorded case again, derived from the record alone: what the suites print
for a divergence and what the reports show beside its smallest case.

`nats-conformance replay` (the same as `python -m suites replay`) takes the case's columns as options
(a republish case adds its stream's subjects and headers-only; a streaming case's layout goes in
`--source`, as JSON, and its release is nats-streaming-server's, so the NATS server it joins is left to
the default); an adapter case is asked again of the adapter command it was asked of, kept in its
`detail`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Final

from records.schema import Case
from reference.channels import ServerSpec

COMMAND_DETAIL: Final = "adapter command: "
"""How an adapter case's `detail` begins: the command the question was asked of follows."""

REPLAY: Final = ("nats-conformance", "replay")
"""How every printed replay line begins: the installed command, not the module path."""
OPERATOR_SUFFIX: Final = "-operator"
"""The backend of a server in operator mode is its inner backend's name with this suffix
(``process-operator``): its mappings were pushed in account JWTs."""


def operator_mode(backend: str) -> tuple[str, bool]:
    """(the inner backend, whether the server ran in operator mode) of a recorded backend."""
    inner = backend.removesuffix(OPERATOR_SUFFIX)
    return inner, inner != backend


def adapter_command(case: Case) -> str:
    """The adapter command a library case was asked of (from its `detail`), '' if not recorded."""
    if not case.detail.startswith(COMMAND_DETAIL):
        return ""
    return case.detail[len(COMMAND_DETAIL) :].split("; adapter ", 1)[0]


def layout_json(layout: Sequence[ServerSpec]) -> str:
    """A streaming layout's JSON form (what `--source` of a streaming replay reads): one item per server,
    its channel list, or `{"channels": [...], "clustered": true}` for a server with clustering."""
    items: list[object] = [
        {"channels": list(spec.channels), "clustered": True} if spec.clustered else list(spec.channels)
        for spec in layout
    ]
    return json.dumps(items, separators=(",", ":"))


def replay_command(case: Case) -> str:
    """The command that runs this one case again on a fresh server of the same release and backend
    (a republish case: its stream, option and, for a message, one publish)."""
    if case.feature == "republish":
        parts = [*REPLAY, "--feature", case.feature, "--server-version", case.server_version]
        parts += ["--backend", case.backend, "--stream-subjects", ",".join(case.stream_subjects)]
        if case.headers_only:
            parts.append("--headers-only")
        parts += ["--source", case.source, "--destination", case.destination]
        if case.steps:
            parts += ["--steps", json.dumps(list(case.steps))]
    elif case.backend == "adapter":  # a transform library: the question again, to the same command
        parts = [*REPLAY, "--target", f"adapter:{adapter_command(case)}", "--profile", case.server_version]
        parts += ["--feature", case.feature, "--functions", case.functions, "--source", case.source]
        parts += ["--destination", case.destination]
        if case.partitions:
            parts += ["--partitions", str(case.partitions)]
        return shlex.join([*parts, "--subject", case.subject])
    elif case.feature == "streaming":  # the layout's servers, or the scenario the source names
        source = layout_json(case.layout) if case.layout else case.source
        parts = [*REPLAY, "--backend", case.backend, "--feature", case.feature, "--source", source]
    else:
        backend, operator = operator_mode(case.backend)
        parts = [*REPLAY, "--server-version", case.server_version, "--backend", backend]
        parts += ["--operator"] if operator else []
        parts += ["--feature", case.feature, "--source", case.source, "--destination", case.destination]
        if case.steps:
            parts += ["--steps", json.dumps(list(case.steps))]
    if case.subject:
        parts += ["--subject", case.subject]
    return shlex.join(parts)


NO_CLI_COUNTERPART: Final = ("streaming", "matching", "subjects", "overlap", "weighted")
"""Features natscli has no command for: `nats server mapping` maps one subject through one destination
(no weighted list, no subscription, no NATS Streaming layout)."""


def nats_cli_command(case: Case) -> str:
    """The equivalent nats CLI invocation, for people who have it, or '' where natscli cannot express
    the case. `nats server mapping` runs the transform engine natscli was built with, not the case's
    release, as the line's comment says. A republish case is the stream with the option (`nats stream
    add`), which natscli sets only with both `--republish-source` and `--republish-destination`
    (natscli's cli/stream_command.go), so an option without one of them has no line."""
    if case.feature in NO_CLI_COUNTERPART or case.functions == "partition-op":
        return ""
    if case.feature != "republish":
        parts = ["nats", "server", "mapping", case.source, case.destination]
        line = shlex.join([*parts, case.subject] if case.subject else parts)
        engine = f"{case.implementation} {case.server_version}"
        return f"{line}  # natscli's own bundled transform engine, not {engine}"
    if not (case.source and case.destination):
        return ""
    parts = ["nats", "stream", "add", "REPLAY", "--storage", "memory", "--defaults"]
    parts += ["--subjects", ",".join(case.stream_subjects)]
    if case.headers_only:
        parts.append("--republish-headers")
    parts += ["--republish-source", case.source, "--republish-destination", case.destination]
    return shlex.join(parts)
