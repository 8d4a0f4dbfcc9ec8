"""Run batches of mapping cases on a live server and give every case exactly one verdict.

A batch is a set of mappings with disjoint sources and, for each, subjects that match it. One
configuration apply serves the whole batch; one wire tap observes every delivery. The reference says
where each subject must arrive; `expectations` turns listed divergences into `expected`; failures of
the server or the network make the affected cases `unknown`, with the reason in `detail`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice

import pyarrow as pa
import pyarrow.compute as pc

from fixtures.config import Mapping
from fixtures.errors import ConfigRejectedError, ServerDiedError, ServerError, ServerStoppedError
from fixtures.servers.base import Backend
from fixtures.session import Session
from records.expectations import Expectations
from records.schema import CRASH_UNCONFIRMED, NOT_SUPPORTED, REFUSED, Case, CaseBlock, texts_of
from records.schema import case_class_of as class_text
from reference.channels import ServerSpec
from reference.errors import MappingError
from reference.functions import LEGACY_WILDCARD, canonical_functions
from reference.profiles import ReleaseProfile
from reference.transform import NOT_DELIVERED, Transform, compile_transform
from reference.weighted import WeightedDestination
from suites.expected import FUNCTION_NAME, ExpectedSubjects, bucket_of, partition_position
from suites.harness import Observation, publish_and_observe
from suites.oracle import EngineOracle, three_way
from suites.strategies import MappingBatch


@dataclass(frozen=True, slots=True)
class RunContext:
    """Who is being tested, and where verdicts go."""

    run_id: str
    implementation: str
    server_version: str
    backend: str
    expectations: Expectations
    next_case_id: Callable[[], int]
    oracle: EngineOracle | None = None
    """The engine of the server's release, asked every mapping and validation case too (`--oracle`)."""

    @classmethod
    def for_server(
        cls,
        server: Backend,
        *,
        run_id: str,
        expectations: Expectations,
        next_case_id: Callable[[], int],
        implementation: str = "nats-server",
        oracle: EngineOracle | None = None,
    ) -> RunContext:
        """The context of a started server; its release is noted for the staleness of expectations."""
        expectations.note_run(implementation, server.version)
        return cls(run_id, implementation, server.version, server.name, expectations, next_case_id, oracle)


@dataclass(slots=True)
class BatchResult:
    """Cases judged one by one (every divergence is one) and blocks of agreeing cases."""

    cases: list[Case] = field(default_factory=list)
    blocks: list[CaseBlock] = field(default_factory=list)


MAX_UINT32 = 2**32 - 1
"""A partition count above it cannot be a 32-bit number; the document states no limit, so the reference
takes it as written, and a wrong subject for such a count gets its own class."""


PARTITION_COUNT = re.compile(r"\{\{\s*partition\s*\(\s*(-?\d+)", re.IGNORECASE)


def wrong_subject(source: str, destination: str) -> str:
    """The difference of a subject mapped to the wrong subject, set apart where releases differ for a
    reason of their own: a source without wildcards (the server builds no transform), a source token
    that begins with `*` without being one (`*a`, a literal token to the reference; nats-server's
    transform matching looks at its first character), and a partition count past 32 bits (cut to 32
    bits). A server's families and an adapter's questions name it alike, so one expectation covers a
    server and its transform engine."""
    if is_literal(source):
        return "wrong-subject-literal-source"
    if any(len(token) > 1 and token.startswith("*") for token in source.split(".")):
        return "wrong-subject-star-prefixed-token"
    if any(int(count) > MAX_UINT32 for count in PARTITION_COUNT.findall(destination)):
        return "wrong-subject-count-beyond-32-bits"
    return "wrong-subject"


def feature_of(transform: Transform) -> str:
    return "partition" if "partition" in transform.functions else "mapping"


def case_class_of(feature: str, functions: Sequence[str], difference: str) -> str:
    """A divergence's class as text (records.schema.case_class_of), the functions as
    `canonical_functions` gives them."""
    return class_text(feature, "+".join(canonical_functions(functions)), difference)


def make_case(
    context: RunContext,
    *,
    feature: str,
    functions: Sequence[str],
    source: str,
    destination: str,
    subject: str,
    expected: str,
    observed: str,
    difference: str,
    detail: str = "",
    seed: int = 0,
    duration_us: int = 0,
    partitions: int = 0,
    bucket: int = -1,
    stream_subjects: Sequence[str] = (),
    headers_only: bool = False,
    weights: Sequence[WeightedDestination] = (),
    layout: Sequence[ServerSpec] = (),
    oracle: str = "",
) -> Case:
    """A case with its verdict: `difference` is empty when the server agreed, else what differed
    (the last part of its case class); `detail` with no observation makes it `unknown`. `oracle` says
    which of reference, server and engine agree (`suites.oracle`)."""
    context.expectations.note_feature(context.server_version, feature, "+".join(functions))
    expectation = ""
    if not difference:
        verdict = "agree"
    elif difference in ("unknown", REFUSED, NOT_SUPPORTED, CRASH_UNCONFIRMED):
        verdict = "unknown"
    else:
        entry = context.expectations.classify(
            context.implementation,
            context.server_version,
            feature=feature,
            functions="+".join(functions),
            difference=difference,
        )
        verdict = "expected" if entry else "diverge"
        expectation = entry.id if entry else ""
    return Case(
        run_id=context.run_id,
        case_id=context.next_case_id(),
        implementation=context.implementation,
        server_version=context.server_version,
        backend=context.backend,
        feature=feature,
        functions="+".join(canonical_functions(functions)),
        source=source,
        destination=destination,
        subject=subject,
        expected=expected,
        observed=observed,
        verdict=verdict,
        detail=detail,
        expectation=expectation,
        difference=difference,
        partitions=partitions,
        bucket=bucket,
        seed=seed,
        duration_us=duration_us,
        stream_subjects=tuple(stream_subjects),
        headers_only=headers_only,
        weights=tuple(weights),
        layout=tuple(layout),
        oracle=oracle,
    )


def rejection_case(
    context: RunContext,
    *,
    functions: Sequence[str],
    source: str,
    destination: str,
    server_message: str,
    seed: int,
) -> Case:
    """A validation divergence: the server refused a mapping the reference holds valid."""
    return make_case(
        context,
        feature="validation",
        functions=functions,
        source=source,
        destination=destination,
        subject="",
        expected="accept",
        observed="reject",
        difference="reference-accept-server-reject" + refusal_suffix(server_message),
        detail=server_message,
        seed=seed,
        oracle=validation_oracle(context, source, destination, "accept", "reject"),
    )


def validation_oracle(context: RunContext, source: str, destination: str, reference: str, server: str) -> str:
    """Which of reference, server and engine agree on a mapping's acceptance ('' without an engine or
    an observation)."""
    if context.oracle is None or server not in ("accept", "reject"):
        return ""
    return three_way(reference, server, context.oracle.validation(source, destination))


JWT_REFUSAL = "jwt validation failed"
"""How a server in operator mode answers a pushed account JWT that its claims library refuses."""


def refusal_suffix(server_message: str) -> str:
    """``-jwt-validation`` when the refusal came from the account JWT's own validation (operator mode),
    which has rules of its own (no spaces in a subject), else nothing."""
    return "-jwt-validation" if JWT_REFUSAL in server_message else ""


def compile_batch(batch: MappingBatch, profile: ReleaseProfile) -> list[tuple[Transform, tuple[str, ...]]]:
    """The batch's mappings the reference holds valid, compiled; invalid ones belong to the validation
    property and never become cases of this batch."""
    compiled: list[tuple[Transform, tuple[str, ...]]] = []
    for (source, destination), subjects in zip(batch.mappings, batch.subjects, strict=True):
        try:
            transform = compile_transform(source, destination, profile)
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

    A server that dies of the batch (`crash_of`) is restarted, the mappings that crash it are found one
    by one, and the rest of the batch runs again.
    """
    expected = ExpectedSubjects(compiled)
    observed = _publish(session, list(compiled))
    observed.expected = expected
    deliveries = observed.deliveries
    if not crash_of(session, deliveries.failure if deliveries else ""):
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
    crash_of(session, again.deliveries.failure if again.deliveries else "")
    return again


def judge_mapping_batch(context: RunContext, observed: MappingObservation, seed: int) -> BatchResult:
    """Verdicts for a batch: a refused mapping the reference holds valid is a validation divergence and
    its subjects are `unknown`; a mapping that killed the server is a `server-crash` divergence; every
    published subject is judged on where it arrived."""
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
        reason = f"mapping rejected by the server (case {rejected.case_id}): {message}"
        result.cases += [
            _undelivered(context, transform, subject, (REFUSED, reason), seed) for subject in subjects
        ]
    for transform, subject, panic in observed.crashed:
        detail = f"the server died on this publish: {panic}"
        result.cases.append(_undelivered(context, transform, subject, ("server-crash", detail), seed))
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
    observation = publish_and_observe(session.url, [subjects[0]], timeout=5.0)
    if not session.has_died(observation.failure):
        return None
    return transform, subjects[0], panic_line(session) or "no panic line in its log"


def _publish(session: Session, compiled: list[tuple[Transform, tuple[str, ...]]]) -> MappingObservation:
    observed = MappingObservation()
    observed.accepted = _apply_bisecting(session, compiled, observed.rejected)
    subjects = [subject for _, group in observed.accepted for subject in group]
    if not subjects:
        return observed
    began = time.perf_counter()
    observed.deliveries = publish_and_observe(session.url, subjects)
    observed.duration_us = int((time.perf_counter() - began) * 1e6 / len(subjects))
    return observed


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
    context.expectations.note_feature(context.server_version, feature, "+".join(transform.functions))
    partitions = partition_position(transform)[1] if feature == "partition" else 0
    shared = Case(
        run_id=context.run_id,
        case_id=-1,
        implementation=context.implementation,
        server_version=context.server_version,
        backend=context.backend,
        feature=feature,
        functions="+".join(canonical_functions(transform.functions)),
        source=transform.source,
        destination=transform.destination,
        subject="",
        expected="",
        observed="",
        verdict="agree",
        partitions=partitions,
        seed=seed,
        duration_us=duration_us,
        oracle="" if context.oracle is None else "all-agree",
    )
    case_ids = list(islice(iter(context.next_case_id, None), len(expected)))
    result.blocks.append(CaseBlock(shared, case_ids, subject_column, expected, expected, buckets))


def is_literal(source: str) -> bool:
    """True iff a mapping source has no wildcard (an argument shape some releases treat apart)."""
    return not any(token in ("*", ">") for token in source.split("."))


NOT_A_SUBJECT = "delivered-not-a-subject"
"""The difference of a message that arrived although the reference's transform writes no subject."""


def not_a_subject_note(written: str) -> str:
    """The detail of a case whose transform writes `written`, which is not a subject."""
    return f"the transform writes {written!r}, not a subject: the reference delivers it to no subscriber"


def judge_delivery(
    context: RunContext,
    *,
    transform: Transform,
    subject: str,
    arrived: list[str],
    failure: str,
    seed: int,
    duration_us: int,
    engine: str | None = None,
) -> Case:
    """The verdict for one published subject given the subjects it arrived on (and, with an engine
    oracle, the subject the engine maps it to: `engine`). Where the transform writes no subject
    (`Transform.delivers` is `NOT_DELIVERED`), the reference's outcome is that no subscriber receives
    the message: the case agrees when nothing arrived and the publication did not fail, and an arrival
    is a divergence (`NOT_A_SUBJECT`)."""
    written = transform.apply(subject)
    expected = transform.delivers(subject)
    observed = "|".join(arrived)
    if engine is not None and transform.is_random and transform.accepts(subject, engine):
        engine = written  # another draw of the same random token
    if expected == NOT_DELIVERED:
        agreed = not arrived and not failure
    else:
        agreed = len(arrived) == 1 and transform.accepts(subject, arrived[0])
    if agreed:
        difference = ""
    elif not arrived and failure:
        difference = "unknown"
    elif not arrived:
        difference = "not-delivered"
    elif expected == NOT_DELIVERED:
        difference = NOT_A_SUBJECT
    elif len(arrived) > 1:
        difference = "duplicated"
    else:
        difference = wrong_subject(transform.source, transform.destination)
    detail = failure if difference == "unknown" else ""
    if expected == NOT_DELIVERED and difference != "unknown":
        detail = not_a_subject_note(written)
    feature = feature_of(transform)
    partitions, bucket = 0, -1
    if feature == "partition":
        position, partitions = partition_position(transform)
        bucket = bucket_of(arrived[0], position) if len(arrived) == 1 else -1
    return make_case(
        context,
        feature=feature,
        functions=transform.functions,
        source=transform.source,
        destination=transform.destination,
        subject=subject,
        expected=expected,
        observed=observed,
        difference=difference,
        detail=detail,
        seed=seed,
        duration_us=duration_us,
        partitions=partitions,
        bucket=bucket,
        oracle=""
        if context.oracle is None or difference == "unknown"
        else three_way(written, observed if difference else written, engine),
    )


def _apply_bisecting(
    session: Session,
    compiled: list[tuple[Transform, tuple[str, ...]]],
    rejected: list[tuple[Transform, tuple[str, ...], str]],
) -> list[tuple[Transform, tuple[str, ...]]]:
    """Apply all mappings; if the server refuses, find the refused ones one by one (into `rejected`,
    with the server's message) and apply the rest."""

    def configure(items: list[tuple[Transform, tuple[str, ...]]]) -> None:
        session.configure(*(Mapping(t.source, t.destination) for t, _ in items))

    try:
        configure(compiled)
        return compiled
    except ConfigRejectedError:
        pass
    accepted: list[tuple[Transform, tuple[str, ...]]] = []
    for item in compiled:
        try:
            configure([item])
            accepted.append(item)
        except ConfigRejectedError as error:
            rejected.append((*item, error.server_message))
    try:
        configure(accepted)
    except ServerError as error:
        raise ServerError(f"the server refused mappings it accepted one by one: {error}") from error
    return accepted


def functions_named(destination: str) -> tuple[str, ...]:
    """Function names a destination spells, valid or not, as `canonical_functions` gives them (`$n` for
    a `$` placeholder)."""
    names = FUNCTION_NAME.findall(destination)
    return canonical_functions([LEGACY_WILDCARD, *names] if "$" in destination else names)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A server's answer to one configuration: `accept`, `reject` (with its message) or '' when the
    server could not be asked (with why); `crashed` when an accepted mapping killed the server on the
    first message published through it (`detail` is then the panic line)."""

    observed: str
    detail: str = ""
    duration_us: int = 0
    crashed: bool = False


def instance_of(source: str) -> str:
    """A subject the source matches: each wildcard token as the token ``a``."""
    return ".".join("a" if token in ("*", ">") else token for token in source.split("."))


def execute_validation(session: Session, source: str, destination: str) -> Verdict:
    """Apply one mapping, note whether the server took it and, if it did, whether one message published
    through it leaves the server running (a server that dies is restarted)."""
    began = time.perf_counter()
    try:
        session.configure(Mapping(source, destination))
    except ConfigRejectedError as error:
        return Verdict("reject", error.server_message, _since(began))
    session.save_counters()  # the probe may crash the server (an empty destination from 2.10)
    observation = publish_and_observe(session.url, [instance_of(source)], timeout=5.0)
    panic = crash_of(session, observation.failure)
    if not panic:
        return Verdict("accept", "", _since(began))
    detail = f"the server died on a message to {instance_of(source)}: {panic}"
    return Verdict("accept", detail, _since(began), crashed=True)


def _since(began: float) -> int:
    return int((time.perf_counter() - began) * 1e6)


def panic_line(session: Session) -> str:
    """The first line of a dead server's log that names a panic or a Go runtime `fatal error` ('' when
    none does)."""
    lines = session.server.logs().splitlines()
    return next((line for line in lines if "panic" in line.lower() or line.startswith("fatal error:")), "")


def crash_of(session: Session, failure: str) -> str:
    """After `failure` ('' for none) during a unit: '' when the server still runs; the panic line when it
    died of the unit (a crash the unit caused: the server is restarted). A server that died with no
    panic in its log was ended from outside: `ServerDiedError`, for the engine to restart it and judge
    the unit's cases `unknown` (`suites.engine.family.check`); a server at a URL, whose log is not ours,
    `ServerStoppedError`."""
    if not session.has_died(failure):
        return ""
    if session.server.name == "external":
        raise ServerStoppedError(f"the server stopped answering ({failure or 'no failure seen'})")
    panic = panic_line(session)
    if not panic:
        raise ServerDiedError(f"the server died with no panic in its log ({failure or 'no failure seen'})")
    session.restart()
    return panic


def unknown_batch(
    context: RunContext, compiled: Sequence[tuple[Transform, tuple[str, ...]]], reason: str, seed: int
) -> list[Case]:
    """Every subject of a batch `unknown`, with `reason`: the batch was cut short before it was observed."""
    return [
        _undelivered(context, transform, subject, ("unknown", reason), seed)
        for transform, subjects in compiled
        for subject in subjects
    ]


def judge_validation(
    context: RunContext,
    profile: ReleaseProfile,
    source: str,
    destination: str,
    verdict: Verdict,
    *,
    seed: int = 0,
) -> Case:
    """The server must accept a mapping iff the reference compiles it for this release, and survive a
    message through a mapping it accepted. A mapping of a source without wildcards the reference
    rejects and the server accepts is told apart (``...-server-accept-literal-source``)."""
    try:
        compile_transform(source, destination, profile)
        expected = "accept"
    except MappingError as error:
        expected = f"reject:{error.kind}"
    if verdict.crashed:
        difference = "server-crash"
    elif not verdict.observed:
        difference = "unknown"
    elif expected.split(":")[0] == verdict.observed:
        difference = ""
    else:
        difference = f"reference-{expected.replace(':', '-')}-server-{verdict.observed}"
        if verdict.observed == "accept" and is_literal(source):
            difference += "-literal-source"
        if verdict.observed == "reject":
            difference += refusal_suffix(verdict.detail)
    return make_case(
        context,
        feature="validation",
        functions=functions_named(destination),
        source=source,
        destination=destination,
        subject="",
        expected=expected,
        observed=verdict.observed,
        difference=difference,
        detail=verdict.detail,
        seed=seed,
        duration_us=verdict.duration_us,
        oracle=validation_oracle(context, source, destination, expected.split(":")[0], verdict.observed),
    )
