"""The verdict core every family judges with: who is under test (`RunContext`), how a case gets its
verdict (`classify`) and its record (`make_case`), and the one judge of a published subject's delivery
(`judge_delivery`, naming a wrong subject with `wrong_subject`), so that a difference has one name
wherever it comes from. A case whose difference is empty agrees; one the expectations list is
`expected`; failures of the server or the network make it `unknown`, with the reason in `detail`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any, Final

import pyarrow as pa

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.unobserved import unobserved
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import CRASH_UNCONFIRMED, NOT_SUPPORTED, REFUSED, Case, CaseBlock, Texts
from nats_conformance.records.schema import case_class_of as class_text
from nats_conformance.records.unknowns import unstated
from nats_conformance.reference.channels import ServerSpec
from nats_conformance.reference.functions import canonical_functions
from nats_conformance.reference.transform import NOT_DELIVERED, Transform
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.expected import landing, partition_position
from nats_conformance.suites.oracle import EngineOracle, three_way


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


MAX_INT32 = 2**31 - 1
MAX_UINT32 = 2**32 - 1
"""A partition count above it cannot be a 32-bit number; the document states no limit, so the reference
takes it as written, and a wrong subject for such a count gets its own class, as does one for a count
past `MAX_INT32` (a negative 32-bit number to a signed reading)."""

PARTITION_COUNT = re.compile(r"\{\{\s*partition\s*\(\s*(-?\d+)", re.IGNORECASE)


def wrong_subject(source: str, destination: str, subject: str) -> str:
    """The difference of a subject mapped to the wrong subject, set apart where releases differ for a
    reason of their own: a source without wildcards (the server builds no transform), a source token
    that begins with `*` without being one (`*a`, a literal token to the reference; nats-server's
    transform matching looks at its first character) where `subject` has another token, and a
    partition count past 32 bits (cut to 32 bits) or past 31 (read as a negative number). A server's
    families and an adapter's questions name it alike, so one expectation covers a server and its
    transform engine."""
    if is_literal(source):
        return "wrong-subject-literal-source"
    tokens = subject.split(".")
    for position, token in enumerate(source.split(".")):
        if len(token) > 1 and token.startswith("*") and tokens[position : position + 1] != [token]:
            return "wrong-subject-star-prefixed-token"
    counts = [int(count) for count in PARTITION_COUNT.findall(destination)]
    if any(count > MAX_UINT32 for count in counts):
        return "wrong-subject-count-beyond-32-bits"
    if any(count > MAX_INT32 for count in counts):
        return "wrong-subject-count-beyond-31-bits"
    return "wrong-subject"


def is_literal(source: str) -> bool:
    """True iff a mapping source has no wildcard (an argument shape some releases treat apart)."""
    return not any(token in ("*", ">") for token in source.split("."))


def feature_of(transform: Transform) -> str:
    return "partition" if "partition" in transform.functions else "mapping"


def transform_columns(transform: Transform) -> dict[str, Any]:
    """The columns every case of a mapping shares (feature, functions, source, destination), as
    `make_case` and `agreeing_block` name them."""
    return {
        "feature": feature_of(transform),
        "functions": transform.functions,
        "source": transform.source,
        "destination": transform.destination,
    }


def case_class_of(feature: str, functions: Sequence[str], difference: str) -> str:
    """A divergence's class as text (records.schema.case_class_of), the functions as
    `canonical_functions` gives them."""
    return class_text(feature, "+".join(canonical_functions(functions)), difference)


@dataclass(frozen=True, slots=True)
class Classified:
    """A difference classified against the expectations: its `verdict`, the id of the `expectation`
    explaining it (``expected`` only) and the case's `detail` (an `unknown` one's stating why)."""

    verdict: str
    expectation: str
    detail: str


def classify(
    context: RunContext, feature: str, functions: Sequence[str], difference: str, *, detail: str, reason: str
) -> Classified:
    """The verdict of `difference` (`make_case`): none agrees; ``unknown``, a refusal, a feature not
    supported or a crash not confirmed is `unknown` (with the reason in `detail`); any other is
    `expected` when an entry of the expectations explains it, else `diverge`. Notes in
    `context.expectations` that the feature was checked, and which entries were."""
    context.expectations.note_feature(context.server_version, feature, "+".join(functions))
    if not difference:
        return Classified("agree", "", detail)
    if difference in ("unknown", REFUSED, NOT_SUPPORTED, CRASH_UNCONFIRMED):
        unstated = difference in ("unknown", CRASH_UNCONFIRMED)
        return Classified("unknown", "", unobserved(detail, reason) if unstated else detail)
    entry = context.expectations.classify(
        context.implementation,
        context.server_version,
        feature=feature,
        functions="+".join(functions),
        difference=difference,
    )
    return Classified("expected", entry.id, detail) if entry else Classified("diverge", "", detail)


def make_case(
    context: RunContext,
    *,
    feature: str,
    functions: Sequence[str],
    source: str,
    destination: str,
    expected: str,
    observed: str,
    difference: str,
    subject: str = "",
    detail: str = "",
    seed: int = 0,
    duration_us: int = 0,
    partitions: int = 0,
    bucket: int | None = None,
    outcome: str = "",
    kind: str = "case",
    stream_subjects: Sequence[str] = (),
    headers_only: bool = False,
    weights: Sequence[WeightedDestination] = (),
    layout: Sequence[ServerSpec] = (),
    oracle: str = "",
    command: str = "",
    case_id: int | None = None,
    reason: str = "",
) -> Case:
    """A case with its verdict: `difference` is empty when the server agreed, else what differed
    (the last part of its case class); a case without `subject` is one of a configuration, not of a
    message; `detail` with no observation makes it `unknown`. The `detail` of an `unknown` case states
    why (`fixtures.unobserved.unobserved`: `reason`, one of `records.unknowns.STATED`, or the one its
    failure's text tells). `oracle` says which of reference, server and engine agree (`suites.oracle`);
    `kind`, `bucket` and `outcome` are as `records.schema` has them. It gets the run's next case id
    unless `case_id` is given."""
    classified = classify(context, feature, functions, difference, detail=detail, reason=reason)
    return Case(
        run_id=context.run_id,
        case_id=context.next_case_id() if case_id is None else case_id,
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
        verdict=classified.verdict,
        kind=kind,
        detail=classified.detail,
        expectation=classified.expectation,
        difference=difference,
        partitions=partitions,
        bucket=bucket,
        outcome=outcome,
        seed=seed,
        duration_us=duration_us,
        stream_subjects=tuple(stream_subjects),
        headers_only=headers_only,
        weights=tuple(weights),
        layout=tuple(layout),
        oracle=oracle,
        command=command,
    )


def agreeing_block(
    context: RunContext,
    *,
    subjects: Texts,
    expected: Texts,
    observed: Texts | None = None,
    buckets: Sequence[int | None] | pa.Array | None = None,
    steps: tuple[str, ...] = (),
    **columns: Any,
) -> CaseBlock:
    """The agreeing cases of one transform, pattern or list as one block, each getting the next case id:
    each observed what it expected (`observed`, when given: what it observed that agrees). `columns` are
    those the block's cases share, as `make_case` takes them."""
    shared = make_case(context, subject="", expected="", observed="", difference="", case_id=-1, **columns)
    case_ids = list(islice(iter(context.next_case_id, None), len(subjects)))
    observed = expected if observed is None else observed
    return CaseBlock(replace(shared, steps=steps), case_ids, subjects, expected, observed, buckets)


@dataclass(frozen=True, slots=True)
class UnitCases:
    """What every case of one unit shares: the run, the feature, the functions, source and destination of
    its transform (a weighted list's entries), its seed and its steps (how replay runs the unit again).
    `case` makes one of its cases from what differs (`make_case`)."""

    context: RunContext
    feature: str
    functions: Sequence[str]
    source: str
    destination: str
    seed: int = 0
    steps: tuple[str, ...] = ()
    weights: Sequence[WeightedDestination] = ()

    def _shared(self) -> dict[str, Any]:
        """The columns every case of the unit has alike, as `make_case` and `agreeing_block` name them."""
        return {
            "feature": self.feature,
            "functions": self.functions,
            "source": self.source,
            "destination": self.destination,
            "seed": self.seed,
            "weights": self.weights,
        }

    def case(
        self,
        *,
        subject: str = "",
        expected: str,
        observed: str,
        difference: str,
        detail: str = "",
        duration_us: int = 0,
        bucket: int | None = None,
        outcome: str = "",
        kind: str = "case",
    ) -> Case:
        made = make_case(
            self.context,
            **self._shared(),
            subject=subject,
            expected=expected,
            observed=observed,
            difference=difference,
            detail=detail,
            duration_us=duration_us,
            bucket=bucket,
            outcome=outcome,
            kind=kind,
        )
        return replace(made, steps=self.steps)

    def block(self, *, subjects: Texts, expected: Texts, observed: Texts, **columns: Any) -> CaseBlock:
        """Its agreeing cases of one bucket and outcome as one block (`agreeing_block`; `columns`:
        `duration_us`, `bucket`, `outcome`)."""
        return agreeing_block(
            self.context,
            **self._shared(),
            **columns,
            subjects=subjects,
            expected=expected,
            observed=observed,
            steps=self.steps,
        )


def acceptance(refusal: str, server_message: str | None) -> tuple[str, str, str]:
    """The expected answer, the observed one and the difference of a configuration (a mapping, a weighted
    list, a stream, an import) that the reference refuses with `refusal` ('' when it takes it) and the
    server refused with `server_message` (None when it took it): one name wherever it was configured,
    ``reference-reject-<refusal>-server-accept``, ``reference-accept-server-reject`` (with
    `refusal_suffix`), or '' when both agree."""
    expected = f"reject:{refusal}" if refusal else "accept"
    if server_message is None:
        return expected, "accept", f"reference-reject-{refusal}-server-accept" if refusal else ""
    difference = "" if refusal else "reference-accept-server-reject" + refusal_suffix(server_message)
    return expected, "reject", difference


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
    expected, observed, difference = acceptance("", server_message)
    return make_case(
        context,
        feature="validation",
        functions=functions,
        source=source,
        destination=destination,
        expected=expected,
        observed=observed,
        difference=difference,
        detail=server_message,
        seed=seed,
        oracle=validation_oracle(context, source, destination, expected, observed),
    )


def judged_as(case: Case, judgement: Case) -> Case:
    """`case` with `judgement`'s difference, verdict, expectation and oracle: a subject that the server's
    refusal kept from being published takes the judgement of that refusal, which is what the server did
    with it (a listed refusal makes it `expected`, an unlisted one a divergence, as for the refusal
    itself; with an engine oracle, the engine's answer on that refusal). A detail stating why the case
    was unknown keeps what happened only."""
    return replace(
        case,
        detail=unstated(case.detail) if judgement.verdict != case.verdict == "unknown" else case.detail,
        difference=judgement.difference,
        verdict=judgement.verdict,
        expectation=judgement.expectation,
        oracle=judgement.oracle,
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


NOT_ARRIVED: Final = "not-delivered"
"""The difference of a message that should have arrived and did not, wherever it was published."""
DUPLICATED: Final = "duplicated"
"""The difference of a message that arrived more than once where it should have arrived once."""
UNEXPECTED: Final = "unexpected-delivery"
"""The difference of a message that arrived where nothing should have (a subscription it does not match)."""
CRASH: Final = "server-crash"
"""The difference of a case its target failed on: a server that died of it, a library that answered
`internal-error` (class names say `server` for the target, whatever it is)."""

HANG: Final = "server-hang"
"""The difference of a case whose request its target never answered, where the server then answered no
PING on a fresh connection and did nothing (`fixtures.session.Session.hang_of`): a deadlock, not a slow
wait."""

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
        difference = NOT_ARRIVED
    elif expected == NOT_DELIVERED:
        difference = NOT_A_SUBJECT
    elif len(arrived) > 1:
        difference = DUPLICATED
    else:
        difference = wrong_subject(transform.source, transform.destination, subject)
    detail = failure if difference == "unknown" else ""
    if expected == NOT_DELIVERED and difference != "unknown":
        detail = not_a_subject_note(written)
    feature = feature_of(transform)
    partitions, bucket, outcome = 0, None, ""
    if feature == "partition":
        position, partitions = partition_position(transform)
        bucket, outcome = landing(arrived, position)
    return make_case(
        context,
        **transform_columns(transform),
        subject=subject,
        expected=expected,
        observed=observed,
        difference=difference,
        detail=detail,
        seed=seed,
        duration_us=duration_us,
        partitions=partitions,
        bucket=bucket,
        outcome=outcome,
        oracle=""
        if context.oracle is None or difference == "unknown"
        else three_way(written, observed if difference else written, engine),
    )
