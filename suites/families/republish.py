"""RePublish family: a stream with a RePublish option republishes each stored message its source matches,
with the headers the stream model predicts, and refuses exactly the options the reference refuses.

docs.nats.io "Streams" (nats-concepts/jetstream/streams), RePublish: after a message is stored it is
republished on the destination the source maps it to; "Headers" (nats-concepts/jetstream/headers),
RePublish: ``Nats-Stream``, ``Nats-Subject``, ``Nats-Sequence``, ``Nats-Last-Sequence`` (and
``Nats-Time-Stamp``, ``Nats-Msg-Size`` with headers only). One unit is one stream: its subjects, storage
and per-subject limit, a RePublish option, and what is done to it as a drawn list (which
`suites.test_republish` runs through the registry too): publishes (application headers, message ids and so
duplicates), deletes, purges and option edits. Operations run only with an option the reference
accepts; the stream is deleted afterwards.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from fixtures.clients.jetstream import JetStreamClient, JsonObject, api_error
from fixtures.clients.wire import Message
from fixtures.session import Session
from records.casefile import CaseFile
from records.schema import Case
from reference.profiles import ReleaseProfile
from reference.republish import (
    HEADER_MSG_ID,
    RELEASE_RULES,
    RePublish,
    StreamModel,
    republish_violations,
    rules_for,
)
from reference.versions import Version
from suites.engine.family import JetStreamSlots, Judged
from suites.engine.verdicts import RunContext
from suites.republish import (
    FEATURE,
    MessageLedger,
    Window,
    is_republished,
    judge_configuration,
    judge_stream_reply,
    stream_config,
    timed_publish,
)
from suites.republish_strategies import (
    POOL,
    application_headers,
    options,
    payloads,
    published_subjects,
    stream_subject_layouts,
    valid_options,
)

STREAM = "RP"
NAMESPACE = "s"
DESTINATIONS = f"r{NAMESPACE}"
"""Every unit's stream subjects live under `NAMESPACE`, its destinations under `DESTINATIONS` (units run
one after the other, each stream deleted before the next is created)."""

MSG_IDS = ("", "", "", "id1", "id2")
"""Message ids of publishes (mostly none): two ids, so later publishes with one are duplicates."""

MAX_OPERATIONS = 20
SETTLE = 0.05
"""Quiet time (s) after the last operation, and before an edit, for republished messages still coming."""


@dataclass(frozen=True, slots=True)
class Publish:
    subject: str
    payload: bytes
    headers: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Delete:
    sequence: int


@dataclass(frozen=True, slots=True)
class Purge:
    subject: str | None


@dataclass(frozen=True, slots=True)
class Edit:
    option: RePublish


Operation = Publish | Delete | Purge | Edit


@dataclass(frozen=True, slots=True)
class RepublishScenario:
    """One stream and what is done to it (no operations when the reference refuses `option`)."""

    subjects: tuple[str, ...]
    option: RePublish
    storage: str = "memory"
    max_msgs_per_subject: int = -1
    operations: tuple[Operation, ...] = ()
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Reply:
    """An operation's reply, the publish window of a publish, and how many messages the tap held when
    the operation was sent (after settling, for an edit)."""

    body: JsonObject
    window: Window | None
    tapped: int


@dataclass(frozen=True, slots=True)
class RepublishObservation:
    created: JsonObject
    create_us: int
    replies: tuple[Reply, ...]
    tapped: tuple[Message, ...]


@st.composite
def operations(
    draw: st.DrawFn, subjects: tuple[str, ...], profile: ReleaseProfile, *, deletes: bool, limit: int = -1
) -> tuple[Operation, ...]:
    """What is done to the stream, as a list: mostly publishes, and deletes (mostly of a published
    sequence, often the newest), purges (all, a stream subject or a published one) and edits to another
    valid option. After a delete, a publish or purge often goes to the deleted message's subject: that
    is where ``Nats-Last-Sequence`` has to name a message that is gone ("or 0 if none or deleted") and
    where a subject's state has to follow its limit and the delete. Each scenario publishes on one, two
    or all tokens of the pool, so that subjects repeat (per-subject limits, last sequences); with a
    per-subject `limit`, an `evict` step publishes one subject once past it, deletes the newest message
    and purges the subject (the edge of a limit, then a delete, where a stream's state can go wrong)."""
    kinds = ["publish"] * 6 + ["purge", "edit"] + (["delete"] if deletes else [])
    kinds += ["evict"] if deletes and limit > 0 else []
    pool = POOL[: draw(st.sampled_from([len(POOL), 1, 2]), label="distinct tokens")]
    drawn: list[Operation] = []
    published: list[str] = []
    deleted: list[str] = []
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=MAX_OPERATIONS)):
        if kind == "evict":
            subject = draw(published_subjects(subjects, pool))
            drawn += [Publish(subject, draw(payloads()), ()) for _ in range(limit + 1)]
            published += [subject] * (limit + 1)
            deleted.append(subject)
            drawn += [Delete(len(published)), Purge(subject)]
        elif kind == "publish":
            headers = draw(application_headers())
            msg_id = draw(st.sampled_from(MSG_IDS))
            if msg_id:
                headers = (*headers, (HEADER_MSG_ID, msg_id))
            again = st.sampled_from(deleted[-1:]) if deleted else st.nothing()
            subject = draw(st.one_of(again, published_subjects(subjects, pool)))
            published.append(subject)
            drawn.append(Publish(subject, draw(payloads()), headers))
        elif kind == "delete":
            newest = st.just(len(published)) if published else st.nothing()
            sequence = draw(st.one_of(newest, st.integers(1, len(published) + 1)))
            deleted += published[sequence - 1 : sequence]
            drawn.append(Delete(sequence))
        elif kind == "purge":
            recent = st.sampled_from(deleted[-1:]) if deleted else st.nothing()
            drawn.append(Purge(draw(st.one_of(recent, st.sampled_from([None, *subjects, *published])))))
        else:
            drawn.append(Edit(draw(valid_options(subjects, DESTINATIONS, profile))))
    return tuple(drawn)


@st.composite
def scenarios(draw: st.DrawFn, profile: ReleaseProfile) -> RepublishScenario:
    """A stream, an option (mostly one the reference accepts, else any), and operations for it."""
    rules = rules_for(profile)
    subjects = draw(stream_subject_layouts(NAMESPACE))
    option = draw(
        st.one_of(valid_options(subjects, DESTINATIONS, profile), options(subjects, DESTINATIONS, profile))
    )
    storage = draw(st.sampled_from(["memory", "file"]))
    limit = draw(st.sampled_from([-1, 1, 2]))
    valid = not republish_violations(subjects, option, rules)
    ops = draw(operations(subjects, profile, deletes=True, limit=limit)) if valid else ()
    return RepublishScenario(subjects, option, storage, limit, ops, draw(st.integers(0, 2**32 - 1)))


@dataclass(frozen=True, slots=True)
class RepublishFamily(JetStreamSlots):
    name: str = "republish"
    summary: str = "a stream, a RePublish option, storage and limit, and up to 20 operations"
    features: tuple[str, ...] = (FEATURE,)
    budget: int = 1_500
    side_by_side: int = 8
    """Scenarios run at once (`JetStreamSlots`): a scenario waits `SETTLE` quietly for late republished
    messages after its operations and before each edit. Figures: docs/benchmarks.md, Families."""

    def unsupported(self, version: str, backend: str) -> str:
        if backend == "external":
            return "RePublish needs a JetStream server this suite starts (the external one may have none)"
        found = Version.search(version)
        if found is None or found < RELEASE_RULES["supported"]:
            return f"RePublish needs nats-server {RELEASE_RULES['supported']} or later"
        return ""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[RepublishScenario]:
        return scenarios(profile)

    def execute(self, session: Session, unit: RepublishScenario) -> RepublishObservation:
        """Create the stream (fresh: a unit cut short by a killed server leaves its stream in the
        restarted server's store, `JetStreamClient.create_fresh_stream`); when created, run the
        operations, settle, and delete it."""
        with JetStreamClient(session.url) as js:
            js.tap(">", is_republished)
            began = time.perf_counter()
            created = js.create_fresh_stream(_config(unit, unit.option))
            create_us = int((time.perf_counter() - began) * 1e6)
            replies: list[Reply] = []
            if api_error(created) is None:
                try:
                    for operation in unit.operations:
                        replies.append(_run(js, unit, operation))
                    if unit.operations:
                        js.settle(SETTLE)
                finally:
                    js.delete_stream(STREAM)
            return RepublishObservation(created, create_us, tuple(replies), tuple(js.tapped))

    def judge(
        self,
        context: RunContext,
        profile: ReleaseProfile,
        unit: RepublishScenario,
        observed: RepublishObservation,
    ) -> Judged:
        """The scenario's cases, each with the whole scenario as its `steps` (what a case shows may
        depend on every operation before it, and replay runs them all again)."""
        steps = steps_of(unit)
        return [replace(case, steps=steps) for case in self._cases(context, profile, unit, observed)]

    def _cases(
        self,
        context: RunContext,
        profile: ReleaseProfile,
        unit: RepublishScenario,
        observed: RepublishObservation,
    ) -> list[Case]:
        """The creation's verdict, then every reply that differs from the model's, every edit's
        verdict, and every republished message's. Once a delete or purge leaves the stream in another
        state than the model's, or the server takes an edit to an option the reference refuses (which
        the model cannot hold, as after such a create), the rest of the scenario cannot be judged: it
        ends there (the messages republished before the next operation are still judged)."""
        rules = rules_for(profile)
        subjects, option = unit.subjects, unit.option
        cases = [
            judge_configuration(
                context,
                rules,
                subjects,
                option,
                observed.created,
                seed=unit.seed,
                duration_us=observed.create_us,
            )
        ]
        if api_error(observed.created) is not None or republish_violations(subjects, option, rules):
            return cases
        model = StreamModel(STREAM, subjects, option, rules, max_msgs_per_subject=unit.max_msgs_per_subject)
        ledger = MessageLedger(subjects, option)

        def compare(what: str, expected: object, seen: object, state: str) -> bool:
            case = judge_stream_reply(
                context, subjects, ledger.republish, what, expected=expected, observed=seen, state=state
            )
            if case is not None:
                cases.append(case)
            return case is not None

        def end(index: int) -> list[Case]:
            """The cases when the scenario ends at operation `index`."""
            later = observed.replies[index + 1 : index + 2]
            tapped = observed.tapped[: later[0].tapped] if later else observed.tapped
            return cases + ledger.judge(context, model.republished, tapped, final=False, seed=unit.seed)

        for index, (operation, reply) in enumerate(zip(unit.operations, observed.replies, strict=False)):
            state = repr(model)
            if isinstance(operation, Publish):
                outcome = model.publish(operation.subject, operation.payload, operation.headers)
                if not outcome.duplicate and reply.window is not None:
                    ledger.windows[outcome.sequence] = reply.window
                ack = (reply.body.get("seq"), bool(reply.body.get("duplicate")))
                compare("ack", (outcome.sequence, outcome.duplicate), ack, state)
            elif isinstance(operation, Delete | Purge):
                if isinstance(operation, Delete):
                    diverged = compare(
                        "delete", model.delete(operation.sequence), bool(reply.body.get("success")), state
                    )
                else:
                    diverged = compare(
                        "purge", model.purge(operation.subject), reply.body.get("purged"), state
                    )
                if diverged:
                    return end(index)
            else:
                so_far = observed.tapped[: reply.tapped]
                cases += ledger.judge(context, model.republished, so_far, final=False, seed=unit.seed)
                update = judge_configuration(
                    context, rules, subjects, operation.option, reply.body, operation="update", seed=unit.seed
                )
                cases.append(update)
                if api_error(reply.body) is None:
                    if republish_violations(subjects, operation.option, rules):
                        return end(index)
                    model.reconfigure(operation.option)
                    ledger.republish = operation.option
        cases += ledger.judge(context, model.republished, observed.tapped, final=True, seed=unit.seed)
        return cases

    def unit_of(self, case: CaseFile) -> RepublishScenario:
        """The case's scenario from its `steps`; without them, the case's stream and option, with one
        publish on its subject when it has one (a stream recorded without subjects gets its source, or
        ``replay.>``, as its subjects)."""
        if case.steps:
            return scenario_of(case.steps)
        stream_subjects = case.stream_subjects or (case.source or "replay.>",)
        option = RePublish(case.source, case.destination, case.headers_only)
        publishes = (Publish(case.subject, b"replay", ()),) if case.subject else ()
        return RepublishScenario(stream_subjects, option, operations=publishes)


def _config(unit: RepublishScenario, option: RePublish) -> JsonObject:
    return stream_config(
        STREAM, unit.subjects, option, storage=unit.storage, max_msgs_per_subject=unit.max_msgs_per_subject
    )


def _run(js: JetStreamClient, unit: RepublishScenario, operation: Operation) -> Reply:
    """Send one operation and wait for its reply (an edit first lets earlier republishes arrive)."""
    if isinstance(operation, Edit):
        js.settle(SETTLE)
    tapped = len(js.tapped)
    if isinstance(operation, Publish):
        ack, window = timed_publish(js, operation.subject, operation.payload, operation.headers)
        return Reply(ack, window, tapped)
    if isinstance(operation, Delete):
        return Reply(js.delete_message(STREAM, operation.sequence), None, tapped)
    if isinstance(operation, Purge):
        return Reply(js.purge(STREAM, subject=operation.subject), None, tapped)
    return Reply(js.update_stream(_config(unit, operation.option)), None, tapped)


def steps_of(unit: RepublishScenario) -> tuple[str, ...]:
    """A scenario as `steps` (records.schema): the stream first, then one JSON object per operation."""
    stream = {
        "stream": list(unit.subjects),
        "storage": unit.storage,
        "max_msgs_per_subject": unit.max_msgs_per_subject,
        "option": _option_json(unit.option),
    }
    return (json.dumps(stream), *(json.dumps(_operation_json(op)) for op in unit.operations))


def scenario_of(steps: tuple[str, ...]) -> RepublishScenario:
    """The scenario `steps_of` wrote."""
    stream, *operations = (json.loads(step) for step in steps)
    return RepublishScenario(
        tuple(stream["stream"]),
        _option(stream["option"]),
        stream["storage"],
        int(stream["max_msgs_per_subject"]),
        tuple(_operation(item) for item in operations),
    )


def _option_json(option: RePublish) -> dict[str, Any]:
    return {"src": option.source, "dest": option.destination, "headers_only": option.headers_only}


def _option(item: dict[str, Any]) -> RePublish:
    return RePublish(str(item["src"]), str(item["dest"]), bool(item["headers_only"]))


def _operation_json(operation: Operation) -> dict[str, Any]:
    if isinstance(operation, Publish):
        headers = [list(pair) for pair in operation.headers]
        return {"publish": operation.subject, "payload": operation.payload.hex(), "headers": headers}
    if isinstance(operation, Delete):
        return {"delete": operation.sequence}
    if isinstance(operation, Purge):
        return {"purge": operation.subject}
    return {"edit": _option_json(operation.option)}


def _operation(item: dict[str, Any]) -> Operation:
    if "publish" in item:
        headers = tuple((str(name), str(value)) for name, value in item["headers"])
        return Publish(str(item["publish"]), bytes.fromhex(item["payload"]), headers)
    if "delete" in item:
        return Delete(int(item["delete"]))
    if "purge" in item:
        return Purge(item["purge"])
    return Edit(_option(item["edit"]))
