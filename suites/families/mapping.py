"""Mapping family: every published subject arrives on exactly the subject the reference maps it to.

"Subject Mapping and Partitioning" (docs.nats.io, nats-concepts): "Subject Token Reordering", "Splitting
Tokens", "Slicing Tokens", "Deterministic Subject token Partitioning". One unit is a batch of mappings
with disjoint sources; one configuration serves it, and in a campaign each mapping gets 25 bulk
subjects drawn from a seeded generator (Hypothesis draws the structure, the generator the volume).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import accumulate

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import strategies as st

from nats_conformance.fixtures.config import GLOBAL_ACCOUNT, Account, Mapping, Place, ServerConfig
from nats_conformance.fixtures.errors import ConfigRejectedError, ServerError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.operator import OperatorBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import DELIVERED, Case, CaseBlock, texts_of
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.transform import Transform, compile_transform
from nats_conformance.suites.engine.family import (
    Description,
    Judged,
    Schedule,
    TargetServer,
    beside,
    in_operator_mode,
)
from nats_conformance.suites.engine.verdicts import (
    CRASH,
    RunContext,
    agreeing_block,
    feature_of,
    judge_delivery,
    judged_as,
    make_case,
    rejection_case,
    transform_columns,
)
from nats_conformance.suites.expected import ExpectedSubjects, instance_of, partition_position
from nats_conformance.suites.harness import Observation, Observer, publish_and_observe
from nats_conformance.suites.strategies import MappingBatch, bulk_subjects, mapping_batches

TOKEN_POOL_SIZE = 512
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
TO_ALPHABET = bytes(ALPHABET[byte % len(ALPHABET)].encode()[0] for byte in range(256))
"""A random byte as a character of `ALPHABET`, each alike (64 characters: 256 is a multiple)."""


def random_tokens(rng: random.Random, size: int) -> list[str]:
    """`size` tokens of recommended characters, lengths 1 to 20, cut from one string of random bytes
    read as `ALPHABET` (a character per `random()` call took a fifth of a mapping unit's drawing)."""
    lengths = rng.choices(range(1, 21), k=size)
    text = rng.randbytes(sum(lengths)).translate(TO_ALPHABET).decode()
    return [text[end - length : end] for end, length in zip(accumulate(lengths), lengths, strict=True)]


def token_pool(rng: random.Random) -> list[str]:
    """Tokens for bulk subjects: `random_tokens`, then a few fixed ones (UTF-8, separators, digits)."""
    return [*random_tokens(rng, TOKEN_POOL_SIZE), "ö", "日本", "a-b-c", "x_y", "1234567", "foo--bar"]


@dataclass(frozen=True, slots=True)
class MappingFamily(TargetServer):
    """Batches of up to `mappings_per_batch` mappings; `subjects_per_mapping` bulk subjects each (0: only
    the few subjects Hypothesis draws, as a pytest property wants for shrinking). `functions` limits the
    destinations' functions (the partition family); `operator` runs them in operator (JWT) mode, and
    `leaf` then publishes every subject through a leaf node bound to the mappings' account (on the
    process backend). The documents do not say whether a mapping applies to a message that enters its
    account from a leaf node; every release from 2.2 maps it (a `LEAF` connection's publication goes
    through `selectMappedSubject` as a client's does), so here it is judged as a client's."""

    name: str = "mapping"
    description: Description = Description(
        "15 to 30 mappings with disjoint sources, 25 generated subjects for each mapping not drawn "
        "before in the run",
        20_000,
    )
    features: tuple[str, ...] = ("mapping", "partition")
    mappings_per_batch: int = 30
    subjects_per_mapping: int = 25
    functions: tuple[str, ...] = ()
    operator: bool = False
    leaf: bool = False

    @property
    def schedule(self) -> Schedule[Session]:
        """One unit at a time in the family's own runs; several at once (the `contexts` family's places)
        together (`execute_many`)."""
        return Schedule(beside, together=self.execute_many)

    def server_for(self, server: Backend) -> Backend:
        return in_operator_mode(server, self.operator, leaf=self.leaf)

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
            max_subjects=0 if bulk else 4,
            names=self.functions,
            account_functions=True,
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
        return execute_mapping_batch(session, compile_batch(unit, session.profile, session.mapping_account))

    def execute_many(
        self, session: Session, units: Sequence[MappingBatch]
    ) -> list[MappingObservation | ServerError]:
        """Several units at once (`contexts`; the family's own units run one at a time), on a server whose
        base configuration has accounts: each unit's mappings in an account of its own, all in one reload
        (`Session.apply_apart`: a mapping the server refuses goes to its unit, with the server's words),
        then each unit's subjects published side by side as its account's user. A unit the server cut
        short gets the error, and runs again alone (`check_many`), where a crash is found."""
        accounts = [Account(f"m{number}") for number in range(len(units))]
        compiled = [
            compile_batch(unit, session.profile, account.name)
            for unit, account in zip(units, accounts, strict=True)
        ]
        parts = [(number, item) for number, items in enumerate(compiled) for item in items]
        index_of = {
            (accounts[number].name, transform.source): index
            for index, (number, (transform, _)) in enumerate(parts)
        }

        def config_of(indices: list[int]) -> ServerConfig:
            mappings: dict[int, list[Mapping]] = {}
            for index in indices:
                number, (transform, _) = parts[index]
                mappings.setdefault(number, []).append(Mapping(transform.source, transform.destination))
            added = (replace(accounts[number], mappings=tuple(held)) for number, held in mappings.items())
            return replace(session.base, accounts=(*session.base.accounts, *added))

        def part_at(place: Place) -> int | None:
            name, mapping = place
            return None if mapping is None else index_of.get((name, mapping.source))

        try:
            refusals = session.apply_apart(len(parts), config_of, part_at)
            session.await_logins()
        except ServerError as error:
            return [error] * len(units)
        observed = [MappingObservation(expected=ExpectedSubjects(items)) for items in compiled]
        for (number, item), words in zip(parts, refusals, strict=True):
            if words:
                observed[number].rejected.append((*item, words))
            else:
                observed[number].accepted.append(item)

        def published(number: int) -> MappingObservation | ServerError:
            seen = observed[number]
            slot = replace(session.as_user(accounts[number].credentials), alongside=True)
            _deliver(seen, slot)
            try:
                slot.crash_of(seen.deliveries.failure if seen.deliveries else "")
            except ServerError as error:
                return error
            return seen

        with ThreadPoolExecutor(len(units), thread_name_prefix="mapping-unit") as pool:
            return list(pool.map(published, range(len(units))))

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: MappingBatch, observed: MappingObservation
    ) -> Judged:
        result = judge_mapping_batch(context, observed, unit.seed)
        return [*result.cases, *result.blocks]

    def unknown(
        self, context: RunContext, profile: ReleaseProfile, unit: MappingBatch, reason: str
    ) -> Judged:
        return unknown_batch(context, compile_batch(unit, profile, GLOBAL_ACCOUNT), reason, unit.seed)

    def unit_of(self, case: CaseFile) -> MappingBatch:
        """The case's mapping and subject; a validation case (no subject, e.g. a mapping the operator
        family's server did not install) publishes a subject of its source."""
        subject = case.subject or instance_of(case.source)
        return MappingBatch(((case.source, case.destination),), ((subject,),))


@dataclass(slots=True)
class BatchResult:
    """Cases judged one by one (every divergence is one) and blocks of agreeing cases."""

    cases: list[Case] = field(default_factory=list)
    blocks: list[CaseBlock] = field(default_factory=list)


def compile_batch(
    batch: MappingBatch, profile: ReleaseProfile, account: str
) -> list[tuple[Transform, tuple[str, ...]]]:
    """The batch's mappings the reference holds valid in `account`, compiled; invalid ones belong to the
    validation property and never become cases of this batch. An unknown unit's cases name their
    mappings only, so any account's name will do for them."""
    compiled: list[tuple[Transform, tuple[str, ...]]] = []
    for (source, destination), subjects in zip(batch.mappings, batch.subjects, strict=True):
        try:
            transform = compile_transform(source, destination, profile, account=account)
        except MappingError:
            continue
        compiled.append((transform, subjects))
    return compiled


@dataclass(slots=True)
class MappingObservation:
    """What a server did with a batch: the mappings it refused (with its message), the mappings whose
    first subject killed it (with the panic line), the mappings it took, and where their subjects
    arrived (None when none was published)."""

    rejected: list[tuple[Transform, tuple[str, ...], str]] = field(default_factory=list)
    crashed: list[tuple[Transform, str, str]] = field(default_factory=list)
    accepted: list[tuple[Transform, tuple[str, ...]]] = field(default_factory=list)
    deliveries: Observation | None = None
    duration_us: int = 0
    expected: ExpectedSubjects | None = None
    """The reference's subjects of the batch, started before publishing (a worker process computes
    them on the other core while the main one publishes); the judge reads them."""


def execute_mapping_batch(
    session: Session, compiled: Sequence[tuple[Transform, tuple[str, ...]]]
) -> MappingObservation:
    """Apply the mappings, publish every subject, and observe where each arrived.

    A server that dies of the batch (`Session.crash_of`) is restarted, the mappings that crash it are
    found one by one, and the rest of the batch runs again.
    """
    expected = ExpectedSubjects(compiled)
    observed = _publish(session, list(compiled))
    observed.expected = expected
    deliveries = observed.deliveries
    if not session.crash_of(deliveries.failure if deliveries else ""):
        return observed
    survivors = []
    crashed = []
    for item in observed.accepted:
        crash = _crash_probe(session, item)
        if crash is None:
            survivors.append(item)
        else:
            crashed.append(crash)
            session.restart()
    again = _publish(session, survivors) if survivors else MappingObservation()
    again.rejected[:0] = observed.rejected
    again.crashed = crashed
    again.expected = expected
    session.crash_of(again.deliveries.failure if again.deliveries else "")
    return again


def judge_mapping_batch(context: RunContext, observed: MappingObservation, seed: int) -> BatchResult:
    """Verdicts for a batch: a refused mapping the reference holds valid is a validation divergence, and
    its subjects, never published, take that refusal's judgement (`judged_as`); a mapping that killed
    the server is a `server-crash` divergence; every published subject is judged on where it arrived."""
    result = BatchResult()
    for transform, subjects, message in observed.rejected:
        rejected = rejection_case(
            context,
            functions=transform.functions,
            source=transform.source,
            destination=transform.destination,
            server_message=message,
            seed=seed,
        )
        result.cases.append(rejected)
        refused = f"not published: its mapping was refused (case {rejected.case_id}): {message}"
        why = (rejected.difference, refused)
        result.cases += [
            judged_as(_undelivered(context, transform, subject, why, seed), rejected) for subject in subjects
        ]
    for transform, subject, panic in observed.crashed:
        detail = f"the server died on this publish: {panic}"
        result.cases.append(_undelivered(context, transform, subject, (CRASH, detail), seed))
    deliveries = observed.deliveries
    if deliveries is None:
        return result
    computed = observed.expected or ExpectedSubjects(observed.accepted)
    offset = 0
    for transform, group in observed.accepted:
        _judge_group(
            context,
            transform,
            group,
            computed.of(transform),
            offset=offset,
            observation=deliveries,
            seed=seed,
            duration_us=observed.duration_us,
            result=result,
        )
        offset += len(group)
    return result


def unknown_batch(
    context: RunContext, compiled: Sequence[tuple[Transform, tuple[str, ...]]], reason: str, seed: int
) -> list[Case]:
    """Every subject of a batch `unknown`, with `reason`: the batch was cut short before it was observed."""
    return [
        _undelivered(context, transform, subject, ("unknown", reason), seed)
        for transform, subjects in compiled
        for subject in subjects
    ]


def _undelivered(
    context: RunContext, transform: Transform, subject: str, why: tuple[str, str], seed: int
) -> Case:
    """A published subject that could not arrive: its mapping was refused or killed the server (`why`
    is the difference and the detail)."""
    difference, detail = why
    return make_case(
        context,
        feature=feature_of(transform),
        functions=transform.functions,
        source=transform.source,
        destination=transform.destination,
        subject=subject,
        expected=transform.delivers(subject),
        observed="",
        difference=difference,
        detail=detail,
        seed=seed,
    )


def _crash_probe(
    session: Session, item: tuple[Transform, tuple[str, ...]]
) -> tuple[Transform, str, str] | None:
    """Publish the mapping's first subject alone: (transform, subject, panic line) if the server dies."""
    transform, subjects = item
    try:
        session.configure(Mapping(transform.source, transform.destination))
    except ConfigRejectedError:
        return None
    observation = publish_and_observe(
        session.url, [subjects[0]], timeout=5.0, publisher_url=session.publisher_url
    )
    if not session.has_died(observation.failure):
        return None
    return transform, subjects[0], session.panic_line() or "no panic line in its log"


def _publish(session: Session, compiled: list[tuple[Transform, tuple[str, ...]]]) -> MappingObservation:
    observed = MappingObservation()
    observed.accepted = _apply_bisecting(session, compiled, observed.rejected)
    kept = isinstance(session.server, OperatorBackend)
    _deliver(observed, session, publisher_url=session.publisher_url, kept=kept)
    return observed


def _deliver(
    observed: MappingObservation, session: Session, *, publisher_url: str = "", kept: bool = False
) -> None:
    """Publish the subjects of the accepted mappings (if any) as the session's user and note where each
    arrived and the time per subject. With `kept`, on the session's kept `Observer`: in operator mode,
    whose pushes change the test account while its users stay connected (as
    `fixtures.servers.probe.Prober` relies on). Else on connections of its own: how a configuration
    reload treats connected clients is no part of what a mapping unit checks."""
    subjects = [subject for _, group in observed.accepted for subject in group]
    if not subjects:
        return
    url = session.url
    began = time.perf_counter()
    if kept:
        observer = session.keep((Observer, url, publisher_url), lambda: Observer(url, publisher_url))
        observed.deliveries = observer.observe(subjects)
    else:
        observed.deliveries = publish_and_observe(url, subjects, publisher_url=publisher_url)
    observed.duration_us = int((time.perf_counter() - began) * 1e6 / len(subjects))


def _judge_group(
    context: RunContext,
    transform: Transform,
    subjects: Sequence[str],
    columns: tuple[pa.Array, pa.Array, pa.Array | None],
    *,
    offset: int,
    observation: Observation,
    seed: int,
    duration_us: int,
    result: BatchResult,
) -> None:
    """Verdicts for one mapping's subjects (case ids `offset`...; `columns` are they and the reference's
    subjects as `text_array`s): those that arrived once, exactly on the reference's subject, become one
    agreeing block, found by comparing whole columns; every other one is judged on its own."""
    count = len(subjects)
    subject_column, expected, buckets = columns
    observed = observation.first_subjects(offset, count)
    arrived = pc.fill_null(pc.equal(expected.cast(pa.binary()), observed), False)
    odd = {index - offset for index in observation.repeated if offset <= index < offset + count}
    odd.update(pc.indices_nonzero(pc.invert(arrived)).to_pylist())
    engine: list[str | None] = [None] * count
    if context.oracle is not None:
        engine = context.oracle.maps(transform.source, transform.destination, subjects)
        wanted = texts_of(expected)
        for index, (subject, want, got) in enumerate(zip(subjects, wanted, engine, strict=True)):
            if got is not None and got != want and transform.is_random and transform.accepts(subject, got):
                engine[index] = want  # another draw of the same random token
            elif got != want:
                odd.add(index)
    for index in sorted(odd):
        result.cases.append(
            judge_delivery(
                context,
                transform=transform,
                subject=subjects[index],
                arrived=observation.subjects_of(offset + index),
                failure=observation.failure,
                seed=seed,
                duration_us=duration_us,
                engine=engine[index],
            )
        )
    if odd:
        keep = [True] * count
        for index in odd:
            keep[index] = False
        subject_column, expected = subject_column.filter(keep), expected.filter(keep)
        buckets = None if buckets is None else buckets.filter(keep)
    feature = feature_of(transform)
    result.blocks.append(
        agreeing_block(
            context,
            **transform_columns(transform),
            subjects=subject_column,
            expected=expected,
            buckets=buckets,
            seed=seed,
            duration_us=duration_us,
            partitions=partition_position(transform)[1] if feature == "partition" else 0,
            outcome=DELIVERED if feature == "partition" else "",
            oracle="" if context.oracle is None else "all-agree",
        )
    )


def _apply_bisecting(
    session: Session,
    compiled: list[tuple[Transform, tuple[str, ...]]],
    rejected: list[tuple[Transform, tuple[str, ...], str]],
) -> list[tuple[Transform, tuple[str, ...]]]:
    """Apply all mappings in the default account, each a part of `Session.apply_apart` (one reload for
    all but those the server refuses, found from the lines it names, by halving where it names none: an
    account JWT's refusal); the refused ones go into `rejected` with the server's words about each, and
    the others are returned, in force."""
    index_of = {transform.source: index for index, (transform, _) in enumerate(compiled)}

    def config_of(indices: list[int]) -> ServerConfig:
        transforms = (compiled[index][0] for index in indices)
        return session.base.with_mappings(*(Mapping(t.source, t.destination) for t in transforms))

    def part_at(place: Place) -> int | None:
        _, mapping = place
        return None if mapping is None else index_of.get(mapping.source)

    refusals = session.apply_apart(len(compiled), config_of, part_at)
    rejected.extend((*item, words) for item, words in zip(compiled, refusals, strict=True) if words)
    return [item for item, words in zip(compiled, refusals, strict=True) if not words]
