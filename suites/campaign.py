"""A campaign: many generated cases across releases outside pytest, recorded in one run directory.

Hypothesis draws the structure of each batch (mappings, templates, a seed); the bulk of each batch's
subjects comes from a seeded `random.Random`, so one configuration apply serves thousands of cases.
Divergences never stop a campaign: they are recorded, counted and shown at the end.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from fixtures.adapter import AdapterProcess
from fixtures.backends import open_backend
from fixtures.backends.base import Backend
from fixtures.config import ServerConfig
from fixtures.options import RunConfig, Target
from fixtures.provision import resolve_binary
from records.expectations import Expectations
from records.schema import Case
from records.writer import RecordsError, RecordWriter
from reference.profiles import ReleaseProfile, for_version
from reference.weighted import WeightedDestination
from suites.differential import BatchResult, MappingBatch, RunContext, run_mapping_batch, run_validation_case
from suites.library import BACKEND, run_library
from suites.strategies import (
    bulk_subjects,
    destination_templates,
    mapping_batches,
    matching_batches,
    run_batches,
    sources,
)
from suites.subscriptions import clear_mappings, judge_matching, observe_subscriptions
from suites.weighted import message_count, run_weighted, subjects_for, weighted_lists

TOKEN_POOL_SIZE = 512
KEPT_DIVERGENCES = 100
"""Unexpected divergences a campaign keeps in memory to show at the end (all are in the records)."""
BATCHES_PER_ROUND = 5
MAX_ROUNDS = 10_000


@dataclass(frozen=True, slots=True)
class CampaignPlan:
    """How many cases of each kind to run on every target."""

    mapping_cases: int = 20_000
    validation_cases: int = 100
    weighted_lists: int = 4
    matching_batches: int = 20
    mappings_per_batch: int = 20
    subjects_per_mapping: int = 1_000
    seed: int = 0


@dataclass(slots=True)
class Progress:
    """A one-line progress display on stderr (cases, rate, verdicts), refreshed a few times a second."""

    label: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)
    shown: float = 0.0
    stream: object = sys.stderr

    def add(self, verdicts: Counter[str]) -> None:
        self.counts.update(verdicts)
        now = time.monotonic()
        if now - self.shown > 0.25:
            self.shown = now
            self.show()

    def show(self, end: str = "") -> None:
        total = sum(self.counts.values())
        rate = total / max(time.monotonic() - self.started, 1e-9)
        verdicts = " ".join(
            f"{name}={self.counts[name]}" for name in ("agree", "diverge", "expected", "unknown")
        )
        print(
            f"\r{self.label} {total} cases, {rate:,.0f}/s, {verdicts}   ",
            end=end,
            file=self.stream,
            flush=True,
        )  # type: ignore[call-overload]


def token_pool(rng: random.Random) -> list[str]:
    """Tokens for bulk subjects: recommended characters, a few UTF-8 ones, lengths 1 to 20."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    pool = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20))) for _ in range(TOKEN_POOL_SIZE)]
    pool += ["ö", "日本", "a-b-c", "x_y", "1234567", "foo--bar"]
    return pool


def run_target(server: Backend, plan: CampaignPlan, sink: Sink) -> None:
    """All of the plan's cases on one started server."""
    context = sink.context
    profile = for_version(server.version)
    rng = random.Random(plan.seed)
    pool = token_pool(rng)
    done = Counter[str]()

    def mapping_batch(data: st.DataObject) -> MappingBatch:
        small = data.draw(mapping_batches(profile, max_mappings=plan.mappings_per_batch, max_subjects=1))
        batch_rng = random.Random(small.seed)
        subjects = tuple(
            tuple(bulk_subjects(source, batch_rng, plan.subjects_per_mapping, pool=pool))
            for source, _ in small.mappings
        )
        return MappingBatch(small.mappings, subjects, small.seed)

    def on_mapping_batch(batch: MappingBatch) -> None:
        if done["mapping"] >= plan.mapping_cases:
            return
        result = run_mapping_batch(server, profile, batch, context)
        sink.record_batch(result)
        done["mapping"] += len(result)

    for _ in range(MAX_ROUNDS):
        if done["mapping"] >= plan.mapping_cases:
            break
        run_batches(mapping_batch, BATCHES_PER_ROUND, rng.randrange(2**32), on_mapping_batch)

    def validation_pair(data: st.DataObject) -> MappingBatch:
        source = data.draw(sources(namespace="v"))
        return MappingBatch(((source, data.draw(destination_templates(source, profile))),), ((),))

    def on_validation(batch: MappingBatch) -> None:
        ((source, destination),) = batch.mappings
        sink.record([run_validation_case(server, profile, source, destination, context)])

    if plan.validation_cases:
        run_batches(validation_pair, plan.validation_cases, rng.randrange(2**32), on_validation)
    if plan.weighted_lists:
        run_weighted_lists(server, profile, plan.weighted_lists, rng.randrange(2**32), sink)
    if plan.matching_batches:
        run_matching(server, plan.matching_batches, rng.randrange(2**32), sink)
    server.apply(ServerConfig())


@dataclass(frozen=True, slots=True)
class Sink:
    """Where a target's cases go: its context (verdicts), the run's records, and the progress line."""

    context: RunContext
    writer: RecordWriter
    progress: Progress
    diverged: list[Case]

    def record(self, cases: Sequence[Case]) -> None:
        for case in cases:
            self.writer.add(case)
        self.progress.add(Counter(case.verdict for case in cases))
        self._keep(cases)

    def record_batch(self, result: BatchResult) -> None:
        result.record(self.writer)
        self.progress.add(result.verdicts())
        self._keep(result.cases)

    def _keep(self, cases: Sequence[Case]) -> None:
        room = KEPT_DIVERGENCES - len(self.diverged)
        if room > 0:
            self.diverged.extend([case for case in cases if case.verdict == "diverge"][:room])


def run_weighted_lists(server: Backend, profile: ReleaseProfile, lists: int, seed: int, sink: Sink) -> None:
    """`lists` generated weighted lists, each with enough messages to test its shares."""

    def draw(data: st.DataObject) -> tuple[str, tuple[WeightedDestination, ...], int]:
        source, entries = data.draw(weighted_lists(profile))
        return source, entries, data.draw(st.integers(0, 2**32 - 1))

    def run(drawn: tuple[str, tuple[WeightedDestination, ...], int]) -> None:
        source, entries, list_seed = drawn
        subjects = subjects_for(source, message_count(source, entries, profile), random.Random(list_seed))
        result = run_weighted(server, sink.context, source, entries, subjects, seed=list_seed)
        sink.record(result.all_cases)

    run_batches(draw, lists, seed, run)


def run_matching(server: Backend, batches: int, seed: int, sink: Sink) -> None:
    """`batches` generated sets of subscription patterns and subjects; one case per pair."""

    def draw(data: st.DataObject) -> tuple[list[str], list[str], int]:
        patterns, subjects = data.draw(matching_batches())
        return patterns, subjects, data.draw(st.integers(0, 2**31))

    def run(drawn: tuple[list[str], list[str], int]) -> None:
        patterns, subjects, batch_seed = drawn
        clear_mappings(server)
        observation = observe_subscriptions(server.url, patterns, subjects)
        sink.record(judge_matching(sink.context, patterns, subjects, observation, seed=batch_seed))

    run_batches(draw, batches, seed, run)


def run_campaign(
    run: RunConfig | None,
    plan: CampaignPlan,
    run_dir: Path,
    expectations: Expectations,
    *,
    adapters: Sequence[str] = (),
    profiles: Sequence[str] = (),
) -> tuple[RecordWriter, list[Case]]:
    """Every server target of `run`, then every adapter command asked under each release profile, one
    after the other, into one run directory; returns the closed writer and the first unexpected
    divergences (an adapter's minimal cases first).

    Records that cannot be written (a full disk) end the campaign with one line that still accounts
    for every case run: recorded plus lost.
    """
    settings_record = {
        "targets": [target.id for target in run.targets] if run else [],
        "adapters": list(adapters),
        "profiles": list(profiles),
        "plan": {name: getattr(plan, name) for name in plan.__slots__},
    }
    writer = RecordWriter(run_dir, run_id=run_dir.name, settings=settings_record)
    diverged: list[Case] = []
    try:
        try:
            for target in run.targets if run is not None else ():
                assert run is not None
                run_one(target, run, plan, writer, expectations, diverged=diverged)
            for command in adapters:
                for profile in profiles:
                    run_adapter(command, profile, plan, writer, expectations, diverged=diverged)
        finally:
            writer.close()
    except RecordsError as error:
        raise RecordsError(
            f"{error} ({writer.total} cases run: {writer.written} recorded, {writer.unwritten} lost)"
        ) from error
    return writer, diverged


def run_one(
    target: Target,
    run: RunConfig,
    plan: CampaignPlan,
    writer: RecordWriter,
    expectations: Expectations,
    *,
    diverged: list[Case],
) -> None:
    server = open_backend(target, run, binary_resolver=resolve_binary)
    progress = Progress(label=f"{target.id}:")
    try:
        server.start(ServerConfig())
        context = RunContext.for_server(
            server, run_id=writer.run_id, expectations=expectations, next_case_id=writer.next_case_id
        )
        run_target(server, plan, Sink(context, writer, progress, diverged))
    finally:
        progress.show(end="\n")
        server.cleanup()


def run_adapter(
    command: str,
    profile: str,
    plan: CampaignPlan,
    writer: RecordWriter,
    expectations: Expectations,
    *,
    diverged: list[Case],
) -> None:
    """`plan.mapping_cases` questions to one adapter under one release's rules, then its minimal cases."""
    with AdapterProcess(command) as adapter:
        version = for_version(profile).name
        expectations.note_run(adapter.implementation, version)
        context = RunContext(
            writer.run_id, adapter.implementation, version, BACKEND, expectations, writer.next_case_id
        )
        progress = Progress(label=f"{adapter.implementation}@{version}:")
        sink = Sink(context, writer, progress, [])
        try:
            minimal = run_library(adapter, context, sink.record, cases=plan.mapping_cases, seed=plan.seed)
        finally:
            progress.show(end="\n")
        diverged[:0] = [case for case in minimal if case.verdict == "diverge"]
