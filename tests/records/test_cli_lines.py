"""The `nats` CLI lines printed beside a case: natscli's own flags, or none where it cannot say it."""

from __future__ import annotations

from dataclasses import replace

from records.replay import nats_cli_command
from records.schema import Case
from reference.weighted import WeightedDestination
from suites.reproduce import describe_case

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


def test_republish_takes_natscli_s_source_and_destination_flags() -> None:
    assert nats_cli_command(REPUBLISH) == (
        "nats stream add REPLAY --storage memory --defaults --subjects 'one.>,four.>' --republish-headers "
        "--republish-source 'one.>' --republish-destination 'uno.>'"
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
