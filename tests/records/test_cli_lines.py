"""The `nats` CLI lines printed beside a case: natscli's own flags (v0.5.0), the server configuration
where natscli cannot configure the case (account imports), or none where it cannot say it."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from nats_conformance.fixtures.layouts import stream_configs
from nats_conformance.fixtures.provision import resolve_binary
from nats_conformance.records.replay import (
    NO_CLI_COUNTERPART,
    NO_IMPORTS_NOTE,
    nats_cli_command,
    server_config,
)
from nats_conformance.records.schema import FEATURES, Case
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.reproduce import describe_case

MAPPING = Case(
    run_id="r",
    case_id=0,
    implementation="nats-server",
    server_version="2.9.25",
    backend="process",
    feature="mapping",
    functions="wildcard",
    source="m.*",
    destination="n.{{wildcard(1)}}",
    subject="m.a",
    expected="n.a",
    observed="n.b",
    verdict="diverge",
    difference="wrong-subject",
)
REPUBLISH = replace(
    MAPPING,
    feature="republish",
    functions="",
    source="one.>",
    destination="uno.>",
    subject="one.x",
    stream_subjects=("one.>", "four.>"),
    headers_only=True,
)


def test_a_mapping_line_says_natscli_runs_its_own_engine() -> None:
    assert nats_cli_command(MAPPING) == (
        "nats server mapping 'm.*' 'n.{{wildcard(1)}}' m.a"
        "  # natscli's own bundled transform engine, not nats-server 2.9.25"
    )


def test_a_mapping_line_without_a_subject_maps_one_of_its_source() -> None:
    """`nats server mapping` prompts for a subject it is not given (and fails without a terminal)."""
    validation = replace(MAPPING, feature="validation", source="m.*.b.>", subject="")
    assert nats_cli_command(validation).startswith(
        "nats server mapping 'm.*.b.>' 'n.{{wildcard(1)}}' m.x.b.x  #"
    )


def test_republish_takes_natscli_s_source_and_destination_flags() -> None:
    add = (
        "nats stream add REPLAY --storage memory --defaults --subjects 'one.>,four.>' --republish-headers "
        "--republish-source 'one.>' --republish-destination 'uno.>'"
    )
    assert nats_cli_command(replace(REPUBLISH, subject="")) == add
    assert (
        nats_cli_command(REPUBLISH)
        == f"{add}  # then, each in its own shell: nats sub '>' ; nats pub one.x ''"
    )


def test_no_line_where_natscli_cannot_express_the_case() -> None:
    weighted = replace(
        MAPPING,
        feature="weighted",
        destination='[{"destination": "w.a", "weight": 60}]',
        weights=(WeightedDestination("w.a", 60),),
    )
    for case in (
        weighted,
        replace(REPUBLISH, source=""),  # natscli sets RePublish only with both flags
        replace(REPUBLISH, destination=""),
        replace(MAPPING, feature="matching"),
    ):
        assert nats_cli_command(case) == ""
        assert "nats CLI:" not in describe_case(case)
    assert "  nats CLI:    nats server mapping 'm.*' " in describe_case(MAPPING)


# natscli v0.5.0 (fixtures.provision.NATSCLI_VERSION): each command the lines use and the flags it takes there
# (github.com/nats-io/natscli: cli/server_mapping_command.go, cli/stream_command.go, cli/pub_command.go;
# the global --user/--password in nats/main.go).
NATSCLI_FLAGS = {
    ("server", "mapping"): set(),
    ("stream", "add"): {
        "--storage",
        "--defaults",
        "--subjects",
        "--config",
        "--transform-source",
        "--transform-destination",
        "--republish-source",
        "--republish-destination",
        "--republish-headers",
    },
    ("stream", "get"): set(),
    ("pub",): set(),
    ("sub",): set(),
    ("req",): set(),
    ("reply",): set(),
}
GLOBAL_FLAGS = {"--user", "--password"}
VALUED = {"--storage", "--subjects", "--config", "--user", "--password"} | {
    f"--{kind}-{end}" for kind in ("transform", "republish") for end in ("source", "destination")
}
STREAM_KEYS = {"name", "subjects", "storage", "subject_transform", "sources", "mirror", "subject_transforms"}
"""The JetStream stream configuration fields the printed JSON may use (docs.nats.io, "Streams")."""


def natscli_commands(line: str) -> list[list[str]]:
    """The commands of a printed line (`&&`-joined), each checked to parse with natscli's flags; a
    `printf ... > FILE` step's JSON is checked to be a stream configuration."""
    words = shlex.split(line.split("  # ", 1)[0])
    commands: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            commands.append([])
        else:
            commands[-1].append(word)
    for command in commands:
        if command[0] == "printf":
            assert command[1] == "%s\\n"
            assert command[3] == ">"
            config = json.loads(command[2])
            assert set(config) <= STREAM_KEYS
            assert command[4] == f"{config['name']}.json"
            continue
        if command[0] == "sleep":
            continue
        assert command[0] == "nats"
        rest = command[1:]
        while rest[0] in GLOBAL_FLAGS:
            rest = rest[2:]
        verb = tuple(rest[:2]) if tuple(rest[:2]) in NATSCLI_FLAGS else tuple(rest[:1])
        allowed = NATSCLI_FLAGS[verb]
        words = iter(rest[len(verb) :])
        for word in words:
            if word.startswith("--"):
                assert word in allowed, (word, verb)
                if word in VALUED:
                    assert next(words, None) is not None, word
        if "--storage" in rest:
            assert rest[rest.index("--storage") + 1] in ("file", "memory")
    return commands


STREAMED = replace(
    MAPPING, feature="stream-transform", source="t.*", destination="u.{{wildcard(1)}}", subject="t.a"
)


@pytest.mark.parametrize("feature", [f for f in FEATURES if f not in NO_CLI_COUNTERPART])
def test_every_feature_natscli_can_express_gets_a_line_that_parses(feature: str) -> None:
    case = replace(STREAMED, feature=feature, stream_subjects=("t.>",) if feature == "republish" else ())
    line, config = nats_cli_command(case), server_config(case)
    assert bool(line) != bool(config), (feature, line, config)  # a line, or the configuration instead
    if line:
        commands = natscli_commands(line)
        assert commands[0][:2] == [
            "nats",
            "server" if feature in ("mapping", "validation", "partition") else "stream",
        ]
        assert f"  nats CLI:    {line}" in describe_case(case)


@pytest.mark.parametrize("place", ["stream", "source", "mirror"])
def test_a_stream_transform_line_creates_the_family_s_streams_and_reads_the_subject_back(place: str) -> None:
    case = replace(STREAMED, feature=f"{place}-transform")
    commands = natscli_commands(nats_cli_command(case))
    origin, *taking = stream_configs(place, case.source, case.destination)
    assert commands[0][:4] == ["nats", "stream", "add", origin["name"]]
    assert commands[0][commands[0].index("--subjects") + 1] == ",".join(origin["subjects"])
    if place == "stream":
        flags = commands[0]
        assert flags[flags.index("--transform-source") + 1] == case.source
        assert flags[flags.index("--transform-destination") + 1] == case.destination
    else:
        (config,) = taking
        assert json.loads(commands[1][2]) == config  # the configuration the family creates
        assert commands[2] == ["nats", "stream", "add", "--config", f"{config['name']}.json"]
    run = [command for command in commands if command[0] != "sleep"]  # a source or mirror copies later
    assert run[-2:] == [
        ["nats", "pub", "t.a", ""],
        ["nats", "stream", "get", (taking or [origin])[-1]["name"], "1"],
    ]
    assert natscli_commands(nats_cli_command(replace(case, subject="")))[-1][:3] == ["nats", "stream", "add"]


@pytest.mark.parametrize("kind", ["stream", "service"])
def test_an_import_case_prints_a_server_configuration_nats_server_takes(kind: str, tmp_path: Path) -> None:
    """natscli cannot configure account imports: the configuration is printed instead, and the real
    nats-server's configuration check (`-t`) takes it as printed."""
    case = replace(
        STREAMED, feature=f"{kind}-import", source="e.*", destination="i.{{wildcard(1)}}", subject="e.a"
    )
    config = server_config(case)
    assert config.startswith(f"# {NO_IMPORTS_NOTE}\n")
    assert "  server config:\n    # natscli cannot configure account imports" in describe_case(case)
    steps = config.splitlines()[-1].removeprefix("# then, each in its own shell: ").split(" ; ")
    for step in steps:
        natscli_commands(step)
    path = tmp_path / "import.conf"
    path.write_text(config)
    checked = subprocess.run(
        [str(resolve_binary("2.14.5")), "-t", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr + checked.stdout
    assert f'{{{kind}: {{account: "EXP", subject: "e.*"}}, to: "i.{{{{wildcard(1)}}}}"}}' in config
