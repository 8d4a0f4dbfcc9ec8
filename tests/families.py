"""A family's small run on a live server of the current target, as the campaign runs it, for the tests of
single families: its records' rows; and a family's judging of one observation, without a server."""

from __future__ import annotations

import contextlib
import io
import itertools
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.profiles import for_version
from nats_conformance.suites.engine.family import cases_of
from nats_conformance.suites.engine.progress import Progress
from nats_conformance.suites.engine.run import Sink, run_family
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES


def judged_offline(name: str, unit: Any, observed: Any, version: str, backend: str = "process") -> list[Case]:
    """The cases the registered family `name` judges `observed` of `unit` into on `version`'s rules."""
    counter = itertools.count()
    context = RunContext("run", "nats-server", version, backend, Expectations(), lambda: next(counter))
    return cases_of(FAMILIES[name].judge(context, for_version(version), unit, observed))


@contextlib.contextmanager
def live_session(
    name: str, *, server_factory: Callable[[], Backend], expectations: Expectations, run_dir: Path
) -> Iterator[tuple[Session, RunContext, RecordWriter]]:
    """A session on a fresh server for the registered family `name` (the family's server and
    configuration) and a run context recording into `run_dir`; skips a target the family says it cannot
    run on. The writer is closed and the server stopped on the way out."""
    family = FAMILIES[name]
    server = family.placement.server_for(server_factory())
    server.start(family.placement.base_config(server))
    reason = family.placement.unsupported(server.version, server.name)
    if reason:
        server.stop()
        pytest.skip(reason)
    writer = RecordWriter(run_dir, run_id="family")
    context = RunContext.for_server(
        server, run_id=writer.run_id, expectations=expectations, next_case_id=writer.next_case_id
    )
    try:
        yield Session.of(server, server.config), context, writer
    finally:
        writer.close()
        server.stop()


def run_agreeing(
    name: str,
    budget: int,
    *,
    server_factory: Callable[[], Backend],
    expectations: Expectations,
    run_dir: Path,
) -> list[dict[str, Any]]:
    """The registered family `name` for `budget` cases on a fresh server (`live_session`), asserting
    that the budget was spent and no case diverged or was left unknown, save the subjects of a mapping
    whose crash or refusal is a listed divergence (nothing went through it). A run whose only fault is
    unknown cases (a unit its server cut short: on a loaded machine, a request's deadline can pass) runs
    once more, afresh in `run_dir`, and that run must have none."""
    rows, diverged, unknown = _run_once(name, budget, server_factory, expectations, run_dir)
    if unknown and not diverged:
        shutil.rmtree(run_dir)
        rows, diverged, unknown = _run_once(name, budget, server_factory, expectations, run_dir)
    assert not diverged, diverged
    assert not unknown, sorted(unknown)[:3]
    return rows


def _run_once(
    name: str, budget: int, server_factory: Callable[[], Backend], expectations: Expectations, run_dir: Path
) -> tuple[list[dict[str, Any]], list[Case], set[tuple[str, str, str]]]:
    """One run of `run_agreeing`: its rows, the first of its diverging cases (`Sink.diverged`: none
    when none diverged), and its unknown cases that no listed crash or refusal explains (source,
    destination, detail)."""
    with live_session(name, server_factory=server_factory, expectations=expectations, run_dir=run_dir) as (
        session,
        context,
        writer,
    ):
        sink = Sink(writer, Progress(stream=io.StringIO()), [])
        done = run_family(FAMILIES[name], session, context, budget=budget, seed=1, sink=sink)
    verdicts = writer.manifest()["verdicts"]
    rows = pq.read_table(sorted((run_dir / "cases").glob("*.parquet"))).to_pylist()
    assert done >= budget
    assert bool(verdicts["diverge"]) == bool(sink.diverged)

    # A listed crash of a mapping (an `expected` case) leaves its subjects unknown: nothing went through
    # it (a refused mapping's subjects take the refusal's judgement). Any other unknown case fails the run.
    expected = [row for row in rows if row["verdict"] == "expected"]
    crashed = {
        (row["source"], row["destination"])
        for row in expected
        if row["difference"].startswith("server-crash")
    }
    unknown = {
        (row["source"], row["destination"], row["detail"])
        for row in rows
        if row["verdict"] == "unknown" and (row["source"], row["destination"]) not in crashed
    }
    return rows, sink.diverged, unknown
