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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from fixtures.backends import open_backend
from fixtures.backends.base import Backend
from fixtures.config import ServerConfig
from fixtures.options import RunConfig, Target
from fixtures.provision import resolve_binary
from records.writer import RecordWriter
from reference.profiles import for_version
from suites.differential import MappingBatch, RunContext, run_mapping_batch, run_validation_case
from suites.expectations import Expectations
from suites.strategies import bulk_subjects, destination_templates, mapping_batches, sources

TOKEN_POOL_SIZE = 512
BATCHES_PER_ROUND = 5
MAX_ROUNDS = 10_000


@dataclass(frozen=True, slots=True)
class CampaignPlan:
    """How many cases of each kind to run on every target."""

    mapping_cases: int = 20_000
    validation_cases: int = 100
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


def run_batches(
    draw_batch: Callable[[st.DataObject], MappingBatch],
    examples: int,
    seed: int,
    on_batch: Callable[[MappingBatch], None],
) -> None:
    """Run `examples` Hypothesis-generated batches, without shrinking (a campaign records, never fails)."""

    @settings(
        max_examples=examples,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(data=st.data())
    def body(data: st.DataObject) -> None:
        on_batch(draw_batch(data))

    hypothesis_seed(seed)(body)()


def run_target(
    server: Backend,
    plan: CampaignPlan,
    context: RunContext,
    writer: RecordWriter,
    progress: Progress,
) -> None:
    """All of the plan's cases on one started server."""
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
        result.record(writer)
        progress.add(result.verdicts())
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
        case = run_validation_case(server, profile, source, destination, context)
        writer.add(case)
        progress.add(Counter([case.verdict]))

    if plan.validation_cases:
        run_batches(validation_pair, plan.validation_cases, rng.randrange(2**32), on_validation)
    server.apply(ServerConfig())


def run_campaign(
    run: RunConfig,
    plan: CampaignPlan,
    run_dir: Path,
    expectations: Expectations,
) -> RecordWriter:
    """Every target of `run`, one after the other, into one run directory; returns the closed writer."""
    settings_record = {
        "targets": [target.id for target in run.targets],
        "plan": {name: getattr(plan, name) for name in plan.__slots__},
    }
    writer = RecordWriter(run_dir, settings=settings_record)
    try:
        for target in run.targets:
            run_one(target, run, plan, writer, expectations)
    finally:
        writer.close()
    return writer


def run_one(
    target: Target,
    run: RunConfig,
    plan: CampaignPlan,
    writer: RecordWriter,
    expectations: Expectations,
) -> None:
    server = open_backend(target, run, binary_resolver=resolve_binary)
    progress = Progress(label=f"{target.id}:")
    try:
        server.start(ServerConfig())
        context = RunContext.for_server(
            server, run_id=writer.run_id, expectations=expectations, next_case_id=writer.next_case_id
        )
        run_target(server, plan, context, writer, progress)
    finally:
        progress.show(end="\n")
        server.cleanup()
