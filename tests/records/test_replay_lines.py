"""A case's replay line spells the whole case, whatever its feature: read back by the replay command's
options it gives the same question as the case's file (`records.casefile.CaseFile`), so a weighted list,
a stream's subjects, steps or a streaming layout are not lost on the way."""

from __future__ import annotations

import shlex
from dataclasses import replace

import pytest

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.replay import REPLAY, layout_json, replay_command
from nats_conformance.records.schema import FEATURES, Case
from nats_conformance.reference.channels import ServerSpec
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.commands import _question, build_parser

BACKENDS = ("process", "container-operator", "process-cluster", "adapter")


def rich_case(feature: str, backend: str) -> Case:
    """A case of `feature` with a value in every column a replay needs (more than any one family fills:
    the line is built from the columns, not from the feature)."""
    return Case(
        run_id="r",
        case_id=7,
        implementation="nats-server" if backend != "adapter" else "some-library",
        server_version="2.14.5",
        backend=backend,
        feature=feature,
        functions="partition-op" if backend == "adapter" else "$n",
        source="wt.s.*",
        destination="wt.d0.$1",
        subject="wt.s.a b",
        expected="x",
        observed="y",
        verdict="diverge",
        command="python lib.py --fast" if backend == "adapter" else "",
        partitions=3,
        stream_subjects=("s.>", "t.*"),
        headers_only=True,
        weights=(WeightedDestination("wt.d0.$1", 60, "east"), WeightedDestination("wt.s.$1", 40)),
        steps=('{"how": "reload"}', '{"published-on": "west"}'),
    )


def replayed(case: Case) -> tuple[CaseFile, list[str]]:
    """The question the case's replay line asks, and the line's words."""
    words = shlex.split(replay_command(case))
    assert tuple(words[: len(REPLAY)]) == REPLAY
    arguments = build_parser().parse_args(words[len(REPLAY) - 1 :])
    return _question(arguments), words


def question_of(case: CaseFile) -> tuple[object, ...]:
    return (
        case.feature,
        layout_json(case.layout) if case.layout else case.source,
        case.destination,
        case.subject,
        case.partitions,
        case.stream_subjects,
        case.headers_only,
        case.weights,
        case.steps,
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("feature", FEATURES)
def test_a_replay_line_spells_the_whole_case(feature: str, backend: str) -> None:
    case = rich_case(feature, backend)
    question, words = replayed(case)
    assert question_of(question) == question_of(CaseFile.of(case))
    if backend == "adapter":
        assert words[words.index("--target") + 1] == "adapter:python lib.py --fast"
        assert question.functions == case.functions
    else:
        assert words[words.index("--server-version") + 1] == "2.14.5"
        target = backend.split("-")
        assert words[words.index("--backend") + 1 :][: 1 + 2 * (len(target) - 1)] == [
            target[0],
            *(["--layout", target[1]] if len(target) > 1 else []),
        ]


def test_a_streaming_layout_goes_in_the_source_and_its_release_is_not_a_server_version() -> None:
    layout = (ServerSpec(("a.*",)), ServerSpec(("b",), clustered=True))
    case = replace(
        rich_case("streaming", "process"),
        implementation="nats-streaming-server",
        server_version="0.25.6",
        **dict.fromkeys(("stream_subjects", "weights", "steps"), ()),
        partitions=0,
        headers_only=False,
        layout=layout,
    )
    question, words = replayed(case)
    assert question.source == layout_json(layout)
    assert "--server-version" not in words
    assert question_of(question)[2:] == question_of(CaseFile.of(case))[2:]


@pytest.mark.parametrize(
    "weights", ["[1]", '[{"destination": "a"}]', '[{"destination": "a", "weight": "5"}]', "{", '{"a": 1}']
)
def test_a_malformed_weighted_list_is_a_one_line_error(
    weights: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["replay", "--server-version", "2.14.5", "--feature", "weighted", "--weights", weights])
    error = capsys.readouterr().err.strip()
    assert status == 2
    assert error.startswith("nats-conformance: error: --weights takes a JSON array of")
    assert "\n" not in error
