"""Mapping family: every published subject arrives on exactly the subject the reference maps it to.

"Subject Mapping and Partitioning" (docs.nats.io, nats-concepts): "Subject Token Reordering", "Splitting
Tokens", "Slicing Tokens", "Deterministic Subject token Partitioning". One unit is a batch of mappings
with disjoint sources; one configuration serves it, and in a campaign each mapping gets 25 bulk
subjects drawn from a seeded generator (Hypothesis draws the structure, the generator the volume).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import strategies as st

from fixtures.servers.base import Backend
from fixtures.session import Session
from records.casefile import CaseFile
from reference.profiles import ReleaseProfile
from suites.differential import (
    MappingObservation,
    RunContext,
    compile_batch,
    execute_mapping_batch,
    instance_of,
    judge_mapping_batch,
    unknown_batch,
)
from suites.engine.family import Judged, TargetServer, in_operator_mode
from suites.strategies import MappingBatch, bulk_subjects, mapping_batches

TOKEN_POOL_SIZE = 512
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


def token_pool(rng: random.Random) -> list[str]:
    """Tokens for bulk subjects: recommended characters, a few UTF-8 ones, lengths 1 to 20."""
    pool = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 20))) for _ in range(TOKEN_POOL_SIZE)]
    return [*pool, "ö", "日本", "a-b-c", "x_y", "1234567", "foo--bar"]


@dataclass(frozen=True, slots=True)
class MappingFamily(TargetServer):
    """Batches of up to `mappings_per_batch` mappings; `subjects_per_mapping` bulk subjects each (0: only
    the few subjects Hypothesis draws, as a pytest property wants for shrinking). `functions` limits the
    destinations' functions (the partition family); `operator` runs them in operator (JWT) mode."""

    name: str = "mapping"
    features: tuple[str, ...] = ("mapping", "partition")
    budget: int = 20_000
    mappings_per_batch: int = 30
    subjects_per_mapping: int = 25
    functions: tuple[str, ...] = ()
    operator: bool = False

    def server_for(self, server: Backend) -> Backend:
        return in_operator_mode(server, self.operator)

    def unsupported(self, version: str, backend: str) -> str:
        if self.operator and backend == "external":
            return "operator mode needs a server this suite starts with its own operator"
        return ""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[MappingBatch]:
        bulk = self.subjects_per_mapping
        drawn = mapping_batches(
            profile,
            max_mappings=self.mappings_per_batch,
            min_mappings=self.mappings_per_batch // 2 if bulk else 1,
            max_subjects=1 if bulk else 4,
            names=self.functions,
        )
        if not bulk:
            return drawn
        seen: set[tuple[str, str]] = set()

        def with_bulk(batch: MappingBatch) -> MappingBatch:
            """Bulk subjects for the batch's mappings not drawn before in this run (Hypothesis draws
            simple mappings again and again; the budget goes to new ones instead)."""
            fresh = tuple(mapping for mapping in batch.mappings if mapping not in seen) or batch.mappings
            seen.update(fresh)
            rng = random.Random(batch.seed)
            pool = token_pool(rng)
            subjects = tuple(tuple(bulk_subjects(source, rng, bulk, pool=pool)) for source, _ in fresh)
            return MappingBatch(fresh, subjects, batch.seed)

        return drawn.map(with_bulk)

    def execute(self, session: Session, unit: MappingBatch) -> MappingObservation:
        return execute_mapping_batch(session, compile_batch(unit, session.profile))

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: MappingBatch, observed: MappingObservation
    ) -> Judged:
        result = judge_mapping_batch(context, observed, unit.seed)
        return [*result.cases, *result.blocks]

    def unknown(
        self, context: RunContext, profile: ReleaseProfile, unit: MappingBatch, reason: str
    ) -> Judged:
        return unknown_batch(context, compile_batch(unit, profile), reason, unit.seed)

    def unit_of(self, case: CaseFile) -> MappingBatch:
        """The case's mapping and subject; a validation case (no subject, e.g. a mapping the operator
        family's server did not install) publishes a subject of its source."""
        subject = case.subject or instance_of(case.source)
        return MappingBatch(((case.source, case.destination),), ((subject,),))
