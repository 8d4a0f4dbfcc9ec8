"""Stream transform family: the subject a message is stored under when a stream transforms it, in the
three JetStream places a transform applies from 2.10.

docs.nats.io, "Streams" (nats-concepts/jetstream/streams), "Subject Transforms": a stream's
``subject_transform`` (``src``, ``dest``) maps the subject of every message it stores whose subject
matches ``src``; a stream's sources and its mirror take ``subject_transforms`` of their own. The function
tokens are those of "Subject Mapping and Partitioning"; which validator each place runs is observed
(`reference.contexts`). One unit is one place, one drawn transform (sources and destinations from the
mapping strategies, so every boundary they reach), and subjects of its source: the streams are created,
the subjects published to the origin stream, and the subject of each stored message read back by
sequence; the streams are deleted afterwards.

Per unit: one case for the creation (the place accepts the transform iff the reference does), then one per
published subject: stored under the reference's subject agrees, else ``wrong-subject`` or
``not-stored``. In the ``stream`` place a subject its ``src`` does not match is stored unchanged; sources
and mirrors are given only subjects their ``src`` matches. A subject with a wildcard token is stored as
published in every place (`reference.contexts.jetstream_applies`). One unit in four also creates a
stream sourcing the origin from another domain, whose deliver prefix the server must take iff it is a
subject without wildcards (`deliver_prefix_of`): one case more; another one in four reads the stored
messages back through a push consumer (`consumer_of`), which must deliver them as stored: one case more.
A server that hangs during a unit (answers nothing and does nothing) is restarted and the unit's first
case is a `server-hang`.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from hypothesis import strategies as st

from nats_conformance.fixtures.clients.jetstream import JetStreamClient, JsonObject, WireError, api_error
from nats_conformance.fixtures.deadlines import within
from nats_conformance.fixtures.errors import ServerError
from nats_conformance.fixtures.layouts import NAMESPACE, ORIGIN, PLACES, TARGET
from nats_conformance.fixtures.layouts import stream_configs as layout_configs
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import Case
from nats_conformance.reference.contexts import compile_in, context_named, jetstream_applies
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.subjects import is_valid_publish_subject
from nats_conformance.reference.transform import Transform
from nats_conformance.reference.versions import Version
from nats_conformance.suites.engine.family import Description, JetStreamSlots, Judged, Schedule, account_slot
from nats_conformance.suites.engine.verdicts import (
    CRASH,
    HANG,
    RunContext,
    UnitCases,
    acceptance,
    wrong_subject,
)
from nats_conformance.suites.expected import functions_named
from nats_conformance.suites.families.mapping import random_tokens
from nats_conformance.suites.strategies import (
    bulk_subjects,
    destination_templates,
    mostly,
    sources,
    swarms,
    with_wildcard_token,
)

SUBJECTS = 6
ARRIVAL = 2.0
"""Seconds a source or mirror has to hold every message the origin stored."""
WHOLE_DESTINATIONS = mostly(
    st.just(">"), mostly(st.just(">u.>"), st.sampled_from(("*u.>", "u.>")), one_in=3), one_in=2
)
"""The destination of a source that takes every subject: `>` (every subject kept) half the time, else a
prefix before it (`>u.>` two times in three), whose first token may begin with a wildcard's character
(`>u` and `*u` are literal tokens to the server, `reference.subjects`): a check of the destination's
first character for `>` (mutant 416 of 2.14.10, in `subjectTransform.Match`) would take `>u.>` for
`>` and keep every subject."""
WILDCARD_SHARE = 0.25
"""The share of units that also publish a subject with a wildcard token (`with_wildcard_token`)."""
DELIVER_PREFIXES: Final = ("dp.x", "dp.*", "dp..x", "dp.>")
"""Deliver prefixes of an external source (`deliver_prefix_of`): a subject without wildcards, then a
wildcard token, an empty token and a final `>`."""
EXTERNAL_ONE_IN: Final = 4
EXTERNAL: Final = "EXTERNAL"
"""The stream that sources the origin through an `external` block (`_external`)."""
EXTERNAL_API: Final = "ext.API"
"""The API prefix of that block: another domain's, which no server here answers."""
DELIVER: Final = "deliver-prefix"
"""The `functions` of a deliver prefix's case."""
CONSUMED_ONE_IN: Final = 4
CONSUMER_FORMS: Final = ("named", "durable")
"""How a unit's consumer is created (`JetStreamClient.create_consumer`): on the subject that names it, or
on the durable form of clients before 2.9."""
CONSUMER: Final = "consumer"
"""The `functions` of a consumer's case, and its name."""
DELIVERY_WAIT = 5.0
"""Seconds a push consumer has to deliver every message the stream holds."""


@dataclass(frozen=True, slots=True)
class TransformRun:
    """One place, one transform, the subjects published to the origin stream."""

    place: str
    source: str
    destination: str
    subjects: tuple[str, ...]
    seed: int = 0
    deliver_prefix: str = ""
    """The deliver prefix of a stream sourcing the origin from another domain ('' none)."""
    consumer: str = ""
    """How a push consumer of the stored messages is created (one of `CONSUMER_FORMS`; '' none)."""

    def to_json(self) -> str:
        step: dict[str, object] = {
            "place": self.place,
            "source": self.source,
            "destination": self.destination,
        }
        if self.deliver_prefix:
            step["deliver_prefix"] = self.deliver_prefix
        if self.consumer:  # its case replays every subject of the unit
            step |= {"consumer": self.consumer, "subjects": list(self.subjects)}
        return json.dumps(step)


@dataclass(frozen=True, slots=True)
class TransformObservation:
    """The creation's reply, the subject each publication was stored under ('' when not stored), and the
    reply to the creation of the external source (`_external`; None when not asked)."""

    created: JsonObject
    stored: tuple[str, ...] = ()
    duration_us: int = 0
    failure: str = ""
    """Why the unit stopped early: the server's panic line when it died (then restarted), else the
    connection's error."""
    crashed: bool = False
    hung: bool = False
    """Whether the server hung during the unit (`Session.hang_of`; `failure` says on what request)."""
    external: JsonObject | None = None
    consumed: Consumed | None = None


@dataclass(frozen=True, slots=True)
class Consumed:
    """What a push consumer of the stream delivered: the subjects, in order, and the server's refusal of
    the consumer ('' none)."""

    subjects: tuple[str, ...] = ()
    refusal: str = ""


def feature_of(place: str) -> str:
    return f"{place}-transform"


@st.composite
def transform_runs(draw: st.DrawFn, profile: ReleaseProfile) -> TransformRun:
    """A place, a transform for it (a source under `t.`, a destination of a swarm of functions from the
    mapping strategies) and subjects its source matches (plus, in the stream place, one it does not, and in
    `WILDCARD_SHARE` of the units one with a wildcard token where the source has one); one transform in
    ten is `>` or the empty source (which stands for `>`, `reference.contexts`) to one of
    `WHOLE_DESTINATIONS` (the origin's subjects are under `t.`)."""
    place = draw(st.sampled_from(PLACES))
    source = draw(mostly(sources(namespace=NAMESPACE), st.sampled_from((">", "")), one_in=10))
    whole = source in (">", "")
    swarm = draw(swarms())
    templates = destination_templates(source, profile, swarm, account_functions=True)
    destination = draw(WHOLE_DESTINATIONS) if whole else draw(templates)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    pattern = f"{NAMESPACE}.>" if whole else source
    subjects = bulk_subjects(pattern, rng, SUBJECTS, pool=random_tokens(rng, 40))
    if place == "stream":
        subjects.append(f"{NAMESPACE}.unmatched.by.{len(source)}.tokens.x.y")
    near_miss = with_wildcard_token(subjects[0], pattern, rng) if rng.random() < WILDCARD_SHARE else None
    if near_miss is not None:
        subjects.append(near_miss)
    prefix, consumer = deliver_prefix_of(seed), consumer_of(seed)
    return TransformRun(place, source, destination, tuple(dict.fromkeys(subjects)), seed, prefix, consumer)


def consumer_of(seed: int) -> str:
    """One unit in `CONSUMED_ONE_IN` also reads the stored messages back through a push consumer
    (docs.nats.io, "Consumers": a consumer delivers the stream's messages, each under the subject it is
    stored with), created in the form of `CONSUMER_FORMS` its seed picks, without a draw of its own
    ('' for the other units)."""
    if seed % CONSUMED_ONE_IN != 1:
        return ""
    return CONSUMER_FORMS[seed // CONSUMED_ONE_IN % len(CONSUMER_FORMS)]


def deliver_prefix_of(seed: int) -> str:
    """One unit in `EXTERNAL_ONE_IN` also creates a stream that sources the origin from another domain
    (docs.nats.io, "Streams", sources: `external`, an `api` prefix and a `deliver` prefix), whose deliver
    prefix its seed picks from `DELIVER_PREFIXES`, without a draw of its own ('' for the other units)."""
    if seed % EXTERNAL_ONE_IN:
        return ""
    return DELIVER_PREFIXES[seed // EXTERNAL_ONE_IN % len(DELIVER_PREFIXES)]


def stream_configs(run: TransformRun) -> list[JsonObject]:
    """The streams of a unit, origin first (`fixtures.layouts`)."""
    return layout_configs(run.place, run.source, run.destination)


@dataclass(frozen=True, slots=True)
class StreamTransformFamily(JetStreamSlots):
    name: str = "stream-transform"
    description: Description = Description(
        "one transform in a stream's `subject_transform`, a source's or a mirror's "
        "`subject_transforms` (2.10 and later), and subjects of its source published to the origin "
        "stream",
        1_000,
    )
    features: tuple[str, ...] = tuple(feature_of(place) for place in PLACES)

    @property
    def schedule(self) -> Schedule[Session]:
        """32 units at once (`JetStreamSlots`): a source or mirror copies asynchronously (100-200 ms on
        2.14.5), and a unit waits for its copies (`_stored`); a source the server never starts holds its
        batch for `ARRIVAL`. Figures: docs/benchmarks.md, Families."""
        return Schedule(account_slot, 32)

    def unsupported(self, version: str, backend: str) -> str:
        if backend == "external":
            return (
                "stream transforms need a JetStream server this suite starts (an external one may have none)"
            )
        since = context_named("stream").since
        found = Version.search(version)
        if found is None or found.line < since.line:  # a line (2.10) or a release of it
            return f"stream subject transforms need nats-server {since} or later"
        return ""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[TransformRun]:
        return transform_runs(profile)

    def execute(self, session: Session, unit: TransformRun) -> TransformObservation:
        """Create the streams; when created, publish every subject and read back where each is stored. A
        server that dies meanwhile is restarted, its panic line kept; one that hangs is restarted too,
        and the unit judged hung (`Session.hang_of`)."""
        try:
            return self._execute(session, unit)
        except (ServerError, WireError) as error:
            panic = session.crash_of(str(error))
            if panic:
                return TransformObservation({}, failure=panic, crashed=True)
            hung = session.hang_of(str(error))
            return TransformObservation({}, failure=hung or str(error), hung=bool(hung))

    def _execute(self, session: Session, unit: TransformRun) -> TransformObservation:
        configs = stream_configs(unit)
        with JetStreamClient(session.url) as js:
            for name in (EXTERNAL, TARGET, ORIGIN):  # left by a unit cut short (a hung server, a timeout)
                js.delete_stream(name)
            began = time.perf_counter()
            created: JsonObject = {}
            made: list[str] = []
            try:
                for config in configs:
                    created = js.create_stream(config)
                    if api_error(created) is not None:
                        break
                    made.append(str(config["name"]))
                if len(made) < len(configs):
                    return TransformObservation(created)
                for subject in unit.subjects:
                    js.publish(subject, b"t")
                stored = _stored(js, made[-1], len(unit.subjects))
                duration = int((time.perf_counter() - began) * 1e6 / max(1, len(unit.subjects)))
                external = _external(js, unit.deliver_prefix) if unit.deliver_prefix else None
                consumed = None
                if unit.consumer:
                    consumed = _consumed(js, made[-1], stored, unit.consumer)
                return TransformObservation(created, stored, duration, external=external, consumed=consumed)
            except (ServerError, WireError):
                made.clear()  # a request went unanswered: the next unit deletes what is left
                raise
            finally:
                for name in reversed(made):
                    js.delete_stream(name)

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: TransformRun, observed: TransformObservation
    ) -> Judged:
        """The creation's case, then one per published subject; every case carries the unit's step."""
        try:
            transform: Transform | None = compile_in(unit.place, unit.source, unit.destination, profile)
            refusal = ""
        except MappingError as refused:
            transform, refusal = None, refused.kind
        functions = transform.functions if transform else functions_named(unit.destination)
        cases = UnitCases(
            context,
            feature_of(unit.place),
            functions,
            unit.source,
            unit.destination,
            unit.seed,
            (unit.to_json(),),
        )
        if observed.failure:
            return _stopped_cases(cases, unit, transform, observed)
        error = api_error(observed.created)
        expected, answered, difference = acceptance(refusal, None if error is None else str(error))
        created = cases.case(
            expected=expected,
            observed=answered,
            difference=difference,
            detail=str(error) if error is not None else "",
        )
        if transform is None or error is not None:
            return [created]
        judged = [created]
        for subject, stored in zip(unit.subjects, observed.stored, strict=False):
            matched = jetstream_applies(transform, subject)
            if not stored:
                difference = "not-stored"
            elif transform.accepts(subject, stored) if matched else stored == subject:
                difference = ""
            else:
                difference = wrong_subject(unit.source, unit.destination, subject)
            judged.append(
                cases.case(
                    subject=subject,
                    expected=transform.apply(subject) if matched else subject,
                    observed=stored,
                    difference=difference,
                    duration_us=observed.duration_us,
                )
            )
        if observed.external is not None:
            judged.append(_prefix_case(cases, unit, observed.external))
        if observed.consumed is not None:
            judged.append(_consumer_case(cases, observed.stored, observed.consumed))
        return judged

    def unknown(
        self, context: RunContext, profile: ReleaseProfile, unit: TransformRun, reason: str
    ) -> Judged:
        return self.judge(context, profile, unit, TransformObservation({}, failure=reason))

    def unit_of(self, case: CaseFile) -> TransformRun:
        """The case's place (from its step, else its feature) and transform, publishing its subject."""
        step = json.loads(case.steps[0]) if case.steps else {}
        place = step.get("place") or case.feature.removesuffix("-transform")
        prefix, consumer = str(step.get("deliver_prefix", "")), str(step.get("consumer", ""))
        if case.functions == CONSUMER:
            subjects = tuple(str(subject) for subject in step.get("subjects", ()))
        else:
            subjects = (case.subject,) if case.subject and case.functions != DELIVER else ()
        return TransformRun(
            place, case.source, case.destination, subjects, deliver_prefix=prefix, consumer=consumer
        )


def _external(js: JetStreamClient, prefix: str) -> JsonObject:
    """The reply to creating `EXTERNAL`, a stream sourcing the origin through an `external` block with
    `EXTERNAL_API` and the deliver prefix `prefix`; the stream is deleted once created."""
    source = {"name": ORIGIN, "external": {"api": EXTERNAL_API, "deliver": prefix}}
    created = js.create_stream({"name": EXTERNAL, "storage": "memory", "sources": [source]})
    if api_error(created) is None:
        js.delete_stream(EXTERNAL)
    return created


def _stopped_cases(
    cases: UnitCases, unit: TransformRun, transform: Transform | None, observed: TransformObservation
) -> list[Case]:
    """The cases of a unit that stopped early: the creation's case stands for the unit (a crash, a hang
    or unknown), and each case the reference would have judged is one of its own, none observed."""
    stopped = replace(cases, functions=functions_named(unit.destination)).case(
        subject=unit.subjects[0] if unit.subjects else "",
        expected="stored",
        observed="",
        difference=CRASH if observed.crashed else HANG if observed.hung else "unknown",
        detail=observed.failure,
    )
    if transform is None:
        return [stopped]
    unobserved = [_prefix_case(cases, unit, None, observed.failure)] if unit.deliver_prefix else []
    if unit.consumer:
        unobserved.append(
            replace(cases, functions=(CONSUMER,)).case(
                expected="", observed="", difference="unknown", detail=observed.failure
            )
        )
    return [stopped, *unobserved] + [
        cases.case(
            subject=subject,
            expected=transform.apply(subject) if jetstream_applies(transform, subject) else subject,
            observed="",
            difference="unknown",
            detail=observed.failure,
        )
        for subject in unit.subjects
    ]


def _consumed(js: JetStreamClient, stream: str, stored: Sequence[str], form: str) -> Consumed:
    """Create a push consumer of `stream` (acknowledging nothing, from its first message) in `form` and
    read what it delivers, until it has delivered as many messages as `stored` holds or `DELIVERY_WAIT`
    passes."""
    deliver = f"_nc_deliver.{stream}"
    config: dict[str, object] = {"deliver_subject": deliver, "ack_policy": "none", "deliver_policy": "all"}
    config |= {"durable_name": CONSUMER} if form == "durable" else {"name": CONSUMER}
    tap = js.tap(deliver)
    created = js.create_consumer(stream, config, durable_form=form == "durable")
    refused = api_error(created)
    if refused is not None:
        return Consumed(refusal=str(refused))
    count = sum(1 for subject in stored if subject)
    js.wait_until(lambda: sum(1 for m in js.tapped if m.sid == tap) >= count, within(DELIVERY_WAIT))
    return Consumed(tuple(m.subject for m in js.tapped if m.sid == tap)[:count])


def _consumer_case(cases: UnitCases, stored: Sequence[str], consumed: Consumed) -> Case:
    """The case of the unit's push consumer: it delivers the stream's messages in order, each under the
    subject it is stored with (read back by sequence, `_stored`), so what the stream holds is what it
    expects; ``consumer-refused`` when the server refused it, ``consumer-differs`` when it delivered
    other subjects."""
    expected = "|".join(subject for subject in stored if subject)
    observed = "|".join(consumed.subjects)
    if consumed.refusal:
        difference, detail = "consumer-refused", consumed.refusal
    else:
        difference, detail = ("" if observed == expected else "consumer-differs"), ""
    return replace(cases, functions=(CONSUMER,)).case(
        expected=expected, observed=observed, difference=difference, detail=detail
    )


def _prefix_case(cases: UnitCases, unit: TransformRun, created: JsonObject | None, failure: str = "") -> Case:
    """The case of the unit's deliver prefix: the server must take it iff it is a subject without
    wildcards (`is_valid_publish_subject`), since the source's messages are published under it
    ("Subject-Based Messaging": publishers use a fully specified subject); `unknown` when not asked."""
    refusal = "" if is_valid_publish_subject(unit.deliver_prefix) else "invalid-deliver-prefix"
    prefixed = replace(cases, feature=feature_of("source"), functions=(DELIVER,))
    if created is None:
        expected = f"reject:{refusal}" if refusal else "accept"
        return prefixed.case(
            subject=unit.deliver_prefix, expected=expected, observed="", difference="unknown", detail=failure
        )
    error = api_error(created)
    expected, answered, difference = acceptance(refusal, None if error is None else str(error))
    detail = str(error) if error is not None else ""
    return prefixed.case(
        subject=unit.deliver_prefix,
        expected=expected,
        observed=answered,
        difference=difference,
        detail=detail,
    )


def _stored(js: JetStreamClient, stream: str, count: int) -> tuple[str, ...]:
    """The subjects of messages 1..count of `stream` ('' for one not there), once the stream holds
    `count` messages or `ARRIVAL` seconds have passed (a source or mirror copies asynchronously)."""
    deadline = time.monotonic() + ARRIVAL
    while time.monotonic() < deadline:
        state = js.stream_info(stream).get("state")
        if isinstance(state, dict) and int(state.get("messages", 0)) >= count:
            break
        time.sleep(0.01)
    subjects = []
    for sequence in range(1, count + 1):
        message = js.get_message(stream, sequence).get("message")
        subjects.append(str(message.get("subject", "")) if isinstance(message, dict) else "")
    return tuple(subjects)
