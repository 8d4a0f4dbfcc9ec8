"""The republish family (`suites.families.republish`) on a live JetStream server: a small budget of drawn
streams records cases that all agree (or diverge as the expectations list), and a recorded republished
message replays through the family registry."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.options import Target, build_run_config
from fixtures.servers.base import Backend
from fixtures.session import Session
from records.casefile import CaseFile, read_case_file
from records.expectations import Expectations
from records.schema import case_of
from records.writer import RecordWriter
from suites.differential import RunContext
from suites.engine.run import Progress, Sink, run_family
from suites.families import FAMILIES, family_of_feature
from suites.replay import replay_file_on_server

pytestmark = [pytest.mark.live, pytest.mark.republish, pytest.mark.min_server("2.8.3")]

BUDGET = 60


def test_republish_family_records_agreeing_cases_that_replay(
    target: Target,
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    tmp_path: Path,
) -> None:
    family = FAMILIES["republish"]
    assert family_of_feature("republish") is family
    server = server_factory()
    server.start(family.base_config(server))
    reason = family.unsupported(server.version, server.name)
    if reason:
        pytest.skip(reason)
    run_dir = tmp_path / "run"
    writer = RecordWriter(run_dir, run_id="family")
    context = RunContext.for_server(
        server, run_id=writer.run_id, expectations=expectations, next_case_id=writer.next_case_id
    )
    sink = Sink(writer, Progress(stream=io.StringIO()), [])
    try:
        session = Session.of(server, server.config)
        done = run_family(family, session, context, budget=BUDGET, seed=1, sink=sink)
    finally:
        writer.close()
    verdicts = writer.manifest()["verdicts"]
    assert done >= BUDGET
    assert verdicts["diverge"] == verdicts["unknown"] == 0, sink.diverged[:3]

    rows = pq.read_table(sorted((run_dir / "cases").glob("*.parquet"))).to_pylist()
    # A republished message's case (on 2.8 every one is a listed divergence: take what there is).
    message = min((row for row in rows if row["subject"]), key=lambda row: row["verdict"] != "agree")
    recorded = CaseFile.of(case_of(message))
    assert recorded.stream_subjects
    path = tmp_path / "case.json"
    path.write_text(recorded.to_json())
    run = build_run_config([target.spec.text], [target.backend], None, None)
    replayed = replay_file_on_server(read_case_file(path), run)
    # A replay judges without the expectations: the message shows the recorded difference again.
    assert len(replayed) == 2
    assert (replayed[1].subject, replayed[1].difference) == (message["subject"], message["difference"])
