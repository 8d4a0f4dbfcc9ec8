"""The republish family (`suites.families.republish`) on a live JetStream server: a small budget of drawn
streams records cases that all agree (or diverge as the expectations list), and a recorded republished
message replays through the family registry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fixtures.options import Target, build_run_config
from fixtures.servers.base import Backend
from records.casefile import CaseFile, read_case_file
from records.expectations import Expectations
from records.schema import case_of
from suites.families import FAMILIES, family_of_feature
from suites.replay import replay_file_on_server
from tests.families import run_agreeing

pytestmark = [pytest.mark.live, pytest.mark.republish, pytest.mark.min_server("2.8.3")]

BUDGET = 60


def test_republish_family_records_agreeing_cases_that_replay(
    target: Target,
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    assert family_of_feature("republish") is FAMILIES["republish"]
    rows = run_agreeing(
        "republish",
        BUDGET,
        server_factory=server_factory,
        expectations=expectations,
        run_dir=tmp_path / "run",
    )
    # A republished message's case (on 2.8 every one is a listed divergence: take what there is).
    message = min((row for row in rows if row["subject"]), key=lambda row: row["verdict"] != "agree")
    recorded = CaseFile.of(case_of(message))
    assert recorded.stream_subjects
    assert recorded.steps  # the whole scenario: replay runs every operation again
    path = tmp_path / "case.json"
    path.write_text(recorded.to_json())
    run = build_run_config([target.spec.text], [target.backend], None, None)
    replayed = replay_file_on_server(read_case_file(path), run)
    # A replay judges without the expectations: the message shows the recorded difference again.
    assert replayed[0].subject == ""  # the stream's creation first
    assert (message["subject"], message["difference"]) in {(c.subject, c.difference) for c in replayed}
