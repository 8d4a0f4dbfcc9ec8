"""The commands that run one recorded case again, derived from the record alone: what the suites print
for a divergence and what the reports show beside its smallest case.

`nats-conformance replay` (the same as `python -m nats_conformance.suites replay`) takes the case's columns as
options, whatever its feature: each column the case has a value in (stream subjects, headers-only, weights,
steps, partitions) gives its option, so the line spells the whole case file (`records.casefile.CaseFile`). A
case with a layout of servers (streaming) has it in `--source`, as JSON; a release of another
implementation than nats-server (nats-streaming-server's) is not a `--server-version`, so the NATS
server it joins is left to the default; an adapter case is asked again of the adapter command it was
asked of, kept in its `detail`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Final

from nats_conformance.records.schema import FEATURES, Case
from nats_conformance.reference.channels import ServerSpec
from nats_conformance.reference.weighted import WeightedDestination

SERVER: Final = "nats-server"
"""The implementation whose release a replay's `--server-version` names."""
REPLAY: Final = ("nats-conformance", "replay")
"""How every printed replay line begins: the installed command, not the module path."""
LAYOUTS: Final = ("operator", "cluster", "leaf")
"""How a family may lay out the target's servers: `operator` mode (mappings pushed in account JWTs), a
`cluster` of servers, a hub with a `leaf` node. The backend of its records is the target's with
``-<layout>`` after it (``process-operator``, ``process-cluster``); replay's ``--layout`` brings the
layout back."""
OPERATOR_SUFFIX: Final = f"-{LAYOUTS[0]}"
CLUSTER_SUFFIX: Final = f"-{LAYOUTS[1]}"
LEAF_SUFFIX: Final = f"-{LAYOUTS[2]}"


def layout_of(backend: str) -> tuple[str, str]:
    """(the target's backend, the layout or '') of a recorded backend."""
    for layout in LAYOUTS:
        if backend.endswith(f"-{layout}"):
            return backend.removesuffix(f"-{layout}"), layout
    return backend, ""


def layout_json(layout: Sequence[ServerSpec]) -> str:
    """A streaming layout's JSON form (what `--source` of a streaming replay reads): one item per server,
    its channel list, or `{"channels": [...], "clustered": true}` for a server with clustering."""
    items: list[object] = [
        {"channels": list(spec.channels), "clustered": True} if spec.clustered else list(spec.channels)
        for spec in layout
    ]
    return json.dumps(items, separators=(",", ":"))


def replay_command(case: Case) -> str:
    """The command that runs this one case again on a fresh server of the same release and backend, or
    of the same adapter: the case's columns as options (see the module docstring)."""
    if case.backend == "adapter":  # a transform library: the question again, to the same command
        parts = [*REPLAY, "--target", f"adapter:{case.command}", "--profile", case.server_version]
        parts += ["--feature", case.feature, "--functions", case.functions]
    else:
        backend, layout = layout_of(case.backend)
        parts = [*REPLAY]
        if case.implementation == SERVER:
            parts += ["--server-version", case.server_version]
        parts += ["--backend", backend, *(["--layout", layout] if layout else []), "--feature", case.feature]
    parts += ["--source", layout_json(case.layout) if case.layout else case.source]
    options = (
        ("--destination", case.destination),
        ("--stream-subjects", ",".join(case.stream_subjects)),
        ("--weights", weights_json(case.weights)),
        ("--steps", json.dumps(list(case.steps)) if case.steps else ""),
        ("--partitions", str(case.partitions) if case.partitions else ""),
        ("--subject", case.subject),
    )
    parts += [word for option, value in options if value for word in (option, value)]
    if case.headers_only:
        parts.append("--headers-only")
    return shlex.join(parts)


def weights_json(weights: Sequence[WeightedDestination]) -> str:
    """A weighted list's JSON form (what `--weights` of a replay reads): one object per entry, with its
    cluster when it has one ('' for no entry)."""
    if not weights:
        return ""
    entries = [
        {"destination": w.destination, "weight": w.weight, **({"cluster": w.cluster} if w.cluster else {})}
        for w in weights
    ]
    return json.dumps(entries, separators=(",", ":"))


NO_CLI_COUNTERPART: Final = ("streaming", "matching", "subjects", "overlap", "weighted", "leaf-deny")
"""Features natscli has no command for: `nats server mapping` maps one subject through one destination
(no weighted list, no subscription, no NATS Streaming layout, no leaf node)."""
# The nats CLI lines use the commands and flags of natscli v0.5.0 (github.com/nats-io/natscli:
# `cli/server_mapping_command.go`, `cli/stream_command.go`, `cli/pub_command.go`; its `nats server mapping`
# runs the transform engine of nats-server v2.15.0, which it is built with). tests/live/test_natscli_lines.py
# runs them with that release (`fixtures.provision.NATSCLI_VERSION`), provisioned like the servers.
IMPORTS: Final = ("stream-import", "service-import")
"""Features natscli cannot configure (account imports live in the server's configuration or an account
JWT): their cases get the server configuration instead (`server_config`)."""
NO_IMPORTS_NOTE: Final = "natscli cannot configure account imports; run nats-server -c FILE with FILE:"


def nats_cli_command(case: Case) -> str:
    """The equivalent nats CLI invocation, for people who have it, or '' where natscli cannot express
    the case (`NO_CLI_COUNTERPART`, `IMPORTS`). `nats server mapping` runs the transform engine natscli
    was built with, not the case's release, as the line's comment says. A republish case is the stream
    with the option (`nats stream add`), which natscli sets only with both `--republish-source` and
    `--republish-destination`, so an option without one of them has no line. A stream transform is the
    stream's `--transform-source`/`--transform-destination`; a source's or a mirror's is not a flag, so
    its stream is added from its JSON configuration (`--config FILE`, the configuration the family
    creates, `fixtures.layouts`). A case with a subject publishes it and reads the stored message back;
    a republish case with a subject ends in a comment naming the `nats sub`/`nats pub` commands that show
    the republished message. `nats server mapping` without a subject prompts for one (and fails without a
    terminal), so a case without one (validation) maps a subject of its source (`subject_of`): the line
    exits 0 when natscli's engine takes the mapping, 1 with its error when it refuses it."""
    if case.feature in (*NO_CLI_COUNTERPART, *IMPORTS) or case.functions == "partition-op":
        return ""
    if case.feature in TRANSFORM_PLACES:
        return _stream_transform_line(case)
    if case.feature != "republish":
        parts = ["nats", "server", "mapping", case.source, case.destination]
        line = shlex.join([*parts, case.subject or subject_of(case.source)])
        engine = f"{case.implementation} {case.server_version}"
        return f"{line}  # natscli's own bundled transform engine, not {engine}"
    if not (case.source and case.destination):
        return ""
    parts = ["nats", "stream", "add", "REPLAY", "--storage", "memory", "--defaults"]
    parts += ["--subjects", ",".join(case.stream_subjects)]
    if case.headers_only:
        parts.append("--republish-headers")
    parts += ["--republish-source", case.source, "--republish-destination", case.destination]
    if not case.subject:
        return shlex.join(parts)
    steps = [shlex.join(["nats", "sub", ">"]), shlex.join(["nats", "pub", case.subject, ""])]
    return f"{shlex.join(parts)}  # then, each in its own shell: {' ; '.join(steps)}"


def subject_of(source: str) -> str:
    """A subject the source pattern matches: each wildcard token (`*`, `>`) as `x`."""
    return ".".join("x" if token in ("*", ">") else token for token in source.split("."))


TRANSFORM_PLACES: Final = {
    feature: feature.removesuffix("-transform") for feature in FEATURES if feature.endswith("-transform")
}
"""The stream-transform features and the place of each (`fixtures.layouts.PLACES`)."""


def _stream_transform_line(case: Case) -> str:
    """`nats stream add` of a stream transform case's streams, then its subject published and read back."""
    from nats_conformance.fixtures.layouts import (
        stream_configs,  # here: the reports import this module, never the fixtures
    )

    origin, *taking = stream_configs(TRANSFORM_PLACES[case.feature], case.source, case.destination)
    add = ["nats", "stream", "add", origin["name"], "--storage", "memory", "--defaults"]
    add += ["--subjects", ",".join(origin["subjects"])]
    if not taking:
        transform = origin["subject_transform"]
        add += ["--transform-source", transform["src"], "--transform-destination", transform["dest"]]
    lines = [shlex.join(add)]
    stored = origin["name"]
    for config in taking:
        stored = config["name"]
        file = f"{stored}.json"
        lines.append(f"printf '%s\\n' {shlex.quote(json.dumps(config))} > {file}")
        lines.append(shlex.join(["nats", "stream", "add", "--config", file]))
    if case.subject:
        lines.append(shlex.join(["nats", "pub", case.subject, ""]))
        lines += ["sleep 1"] if taking else []  # a source or mirror copies asynchronously
        lines.append(shlex.join(["nats", "stream", "get", stored, "1"]))
    return " && ".join(lines)


def server_config(case: Case) -> str:
    """For a case natscli cannot configure (an account import), the nats-server configuration the case
    ran with (`fixtures.layouts`), after a comment line saying so; '' for any other case."""
    if case.feature not in IMPORTS:
        return ""
    from nats_conformance.fixtures.config import (  # here: as in `_stream_transform_line`
        ServerConfig,
        render_config,
    )
    from nats_conformance.fixtures.layouts import import_accounts, import_chain

    kind = case.feature.removesuffix("-import")
    step = json.loads(case.steps[0]) if case.steps else {}
    accounts = import_accounts(kind, case.source, case.destination, **import_chain(step))
    exporter = accounts[1]
    config = render_config(ServerConfig(accounts=accounts))
    user, password = exporter.credentials
    as_exporter = ["nats", "--user", user, "--password", password]
    if kind == "stream":  # published in the exporter, seen mapped by a subscriber in the importer
        steps = [shlex.join(["nats", "sub", ">"]), shlex.join([*as_exporter, "pub", case.subject or ">", ""])]
    else:  # requested in the importer, seen mapped by a responder in the exporter
        steps = [
            shlex.join([*as_exporter, "reply", ">", "ok"]),
            shlex.join(["nats", "req", case.subject or ">", ""]),
        ]
    then = f"# then, each in its own shell: {' ; '.join(steps)}\n" if case.subject else ""
    return f"# {NO_IMPORTS_NOTE}\n{config}{then}"
