"""RePublish family: a stream with a RePublish option republishes each stored message its source matches,
with the headers the stream model predicts, and refuses exactly the options the reference refuses.

ADR-28 (https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-28.md), modelled in
``reference.republish``, and docs.nats.io "Streams" (nats-concepts/jetstream/streams), RePublish: after a
message is stored it is republished on the destination the source maps it to; "Headers"
(nats-concepts/jetstream/headers), RePublish: ``Nats-Stream``, ``Nats-Subject``, ``Nats-Sequence``,
``Nats-Last-Sequence`` (and ``Nats-Time-Stamp``, ``Nats-Msg-Size`` with headers only). One unit is one
stream: its subjects, storage and per-subject limit, a RePublish option, and what is done to it as a
drawn list (which `suites.test_republish` runs through the registry too): publishes (application
headers, message ids and so duplicates), deletes, purges and option edits. Operations run only with a
stream and an option the reference accepts (one stream in four has two subjects near each other that
may overlap, `crossed_layouts`); the stream is deleted afterwards.

Drawing: a unit's stream subjects live under one namespace token (`NAMESPACE`) and its republish
destinations under another (`DESTINATIONS`), so a stream never shares subjects with its destinations
unless a strategy makes them overlap on purpose. Tokens come from a pool of four, so publishes hit the
same subjects again and again (``Nats-Last-Sequence`` needs repeats). Which options are valid is not
decided here but by ``reference.republish``; `valid_options` filters with it for the family's scenarios
and edits, `options` does not. Everything shrinks towards one subject pattern, the default source,
``r.>``-like destinations, empty payloads and no headers.

Judging: two kinds of case, both with feature ``republish`` so reports show RePublish as one row:

* validation: a stream create (or update) with a RePublish option; the server must accept it iff the
  reference finds no broken rule, and a refusal must name one of the broken rules. ``expected`` is
  ``accept`` or ``reject:<kind>+<kind>``, ``observed`` is ``accept`` or ``reject:<kind>`` and ``detail``
  keeps the server's ``err_code``, ``code`` and description.
* message: one republished message; subject, body and every header must be what the model predicts.
  A message has one verdict: its differences are listed in ``detail``, and the case class names the
  first difference no expectation explains (so a listed divergence cannot hide another).

A scenario's judgement ends where the model stops following the stream: a create or an edit the server
takes to an option the reference refuses, a delete or a purge whose reply is not the model's.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from nats_conformance.fixtures.clients.jetstream import ApiError, JetStreamClient, JsonObject, api_error
from nats_conformance.fixtures.clients.wire import Message
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import Case
from nats_conformance.records.unknowns import SERVER_ERROR
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.functions import canonical_functions
from nats_conformance.reference.profiles import ReleaseProfile, nearest_profile
from nats_conformance.reference.republish import (
    HEADER_LAST_SEQUENCE,
    HEADER_MSG_ID,
    HEADER_SEQUENCE,
    HEADER_STREAM,
    HEADER_SUBJECT,
    RELEASE_RULES,
    SERVER_KINDS,
    STORE_TIME,
    DestinationOverlapsStreamError,
    InvalidTransformError,
    RePublish,
    RePublishedMessage,
    RePublishRules,
    StreamModel,
    StreamSubjectsOverlapError,
    configuration_violations,
    parse_time_stamp,
    reportable_by,
    republish_violations,
    rules_for,
)
from nats_conformance.reference.transform import compile_transform
from nats_conformance.reference.versions import Version
from nats_conformance.suites.engine.family import Description, JetStreamSlots, Judged, Schedule, account_slot
from nats_conformance.suites.engine.verdicts import (
    NOT_ARRIVED,
    RunContext,
    is_literal,
    make_case,
    wrong_subject,
)
from nats_conformance.suites.expected import functions_named
from nats_conformance.suites.strategies import below, destination_templates, mostly, pick, weighted

FEATURE = "republish"
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

POOL = ("a", "b", "x", "q1")
"""Tokens of published subjects and of patterns."""

APP_HEADERS = ("X-Trace", "X-Tenant", "Nats-Stream", "Nats-Subject")
"""Application header names: two of the application's own and two that repeat names the server adds
(the ADR preserves application headers, so both values must arrive). Names with a meaning on ingest
(``Nats-Expected-*``, ``Nats-Rollup``, ``Nats-TTL``...) are excluded: they change what is stored, which
is not what RePublish specifies; ``Nats-Msg-Id`` is drawn separately."""

HEADER_VALUE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_./:", min_size=1, max_size=12)

WEIRD_DESTINATIONS = (
    "",
    ">",
    "*.>",
    "$1",
    "{{wildcard(1)}}",
    "R x.>",
    "R..>",
    "R.*",
    "R.>.x",
    "R.{{nosuch(1)}}",
)
"""Destinations breaking one rule each (``R`` stands for the draw's destination namespace)."""

SPACES = (" x", "\tx", " ")
"""Whitespace a destination literal ends with (a subject may not hold it)."""

TAP_IGNORED_PREFIXES = ("$JS.", "_INBOX.", "$SYS.", "_nc_")
"""Subjects a `>` tap sees that are not republished messages: API traffic, replies, advisories, probes."""

STORE_FAILURES = frozenset({10049})
"""JetStream error codes that say the server failed, not that it judged the option: "error creating
store for stream" (seen once in many runs on 2.14.5 with file storage; not reproduced)."""

STAMP_SLACK_NS = 2_000_000
"""Allowance for the time stamp (ns): the server's clock is read between our send and the ack's arrival;
its text has nanoseconds, ours are read with `time.time_ns` on the same machine."""


# ---------------------------------------------------------------------------------------------------
# Units: a stream and what is done to it, and the `steps` a case keeps of them


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


# ---------------------------------------------------------------------------------------------------
# Strategies: stream layouts, RePublish options, publishes, operations, scenarios


@functools.cache
def stream_subject_layouts(namespace: str) -> st.SearchStrategy[tuple[str, ...]]:
    """The subjects of one stream: one or two patterns under ``namespace`` (``*`` and ``>`` mixed)."""
    n = namespace
    return st.sampled_from(
        [
            (f"{n}.*",),
            (f"{n}.*.*",),
            (f"{n}.a.*", f"{n}.b.>"),
            (f"{n}.*.x", f"{n}.y"),
            (f"{n}.a", f"{n}.b.*"),
            (f"{n}.>",),
        ]
    )


@functools.cache
def crossed_layouts(namespace: str) -> st.SearchStrategy[tuple[str, ...]]:
    """Two subjects with `*` and no `>` that share a subject at the same length (refused:
    `reference.republish.StreamSubjectsOverlapError`), or that share none by their lengths (`*` on
    both sides; `>` on the longer only, before or after the shorter) or by one token alone (the last,
    or a literal one character from a `>`), or a shorter one with `>` before a longer one of `*` alone
    (refused: they share a subject). The server compares the later subject first
    (``SubjectsCollide(tsubj, subj)``, stream.go). Of 2.14.10's ``SubjectsCollide``, mutant 1309 takes
    two filters of `*` alone for disjoint whatever their lengths, mutant 1313 the pair with `>` first for
    disjoint, mutant 1341, which compares one token less, the pair that differs in its last token alone
    for overlapping; mutant 1329, which looks only at whether the first is longer, takes the shorter
    after the longer for overlapping; mutants 1274, 1270, 1272 and 1446, which take a token starting
    with `>` or `*` for that wildcard, the pairs with `>a` and `*a` (on either side, and beside a
    literal subject); mutants 1286 and 1293, which take a subject of `*` for a literal, a literal before
    a `*` in its place for disjoint, and mutant 1294 the `*` before the literal; mutant 1262, which
    forgets a `>` in the earlier subject, a `>` before a subject of a literal and a `*`. `s.*a.*` before
    the literal `s.*a.b`, which it holds, and before `s.b.c`, which it does not, were drawn for mutants
    1478, 1483 and 1513 of ``isSubsetMatchTokenized`` (a literal `*a` read as `*`): 1478 and 1483
    survive them (seed 0), so the server's check of a stream's own subjects does not answer them
    through that function alone. `s.>a` and `s.>a.b`, two literal subjects of different lengths, share
    none, where mutants 1233 and 1238 of ``analyzeTokens``, which take a token that begins with `>` for
    `>`, see two filters with `>`, the one a prefix of the other."""
    n = namespace
    return st.sampled_from(
        [
            (f"{n}.a.*", f"{n}.*.b"),
            (f"{n}.a.*", f"{n}.*.b.*"),
            (f"{n}.*", f"{n}.*.>"),
            (f"{n}.>", f"{n}.*.*"),
            (f"{n}.*.a", f"{n}.*.b"),
            (f"{n}.*.>", f"{n}.*"),
            (f"{n}.>a.*", f"{n}.b.*"),
            (f"{n}.*a.*", f"{n}.b.*"),
            (f"{n}.b.*", f"{n}.>a.*"),
            (f"{n}.>a.*", f"{n}.b.c"),
            (f"{n}.a", f"{n}.*"),
            (f"{n}.*", f"{n}.a"),
            (f"{n}.>", f"{n}.a.*"),
            (f"{n}.*a.*", f"{n}.*a.b"),
            (f"{n}.*a.*", f"{n}.b.c"),
            (f"{n}.>a", f"{n}.>a.b"),
        ]
    )


@functools.cache
def invalid_layouts(namespace: str) -> st.SearchStrategy[tuple[str, ...]]:
    """One subject with `>` before its last token, which is no subject (refused:
    `reference.republish.InvalidStreamSubjectError`): a stream's subjects are checked as subjects."""
    n = namespace
    return st.sampled_from([(f"{n}.>.x",), (f"{n}.>.*",), (f"{n}.*.>.>",)])


LAYOUTS = mostly(
    mostly(stream_subject_layouts(NAMESPACE), crossed_layouts(NAMESPACE), one_in=4),
    invalid_layouts(NAMESPACE),
    one_in=32,
)
"""A scenario's stream subjects: one stream in four crossed (`crossed_layouts`), one in 32 no subject
(`invalid_layouts`). A stream refused for its subjects costs one case of the family's budget, so the
crossed layouts, which `SubjectsCollide`'s mutants answer wrongly one pair each, are drawn often: one
in sixteen left most of 2.14.10's mutants there alive under the default plan's 1,500 cases (some 100
streams)."""


def _refinements(pattern: str) -> list[str]:
    """``pattern`` and narrower forms (a ``*`` or ``>`` replaced by a pool token)."""
    tokens = pattern.split(".")
    found = [pattern]
    for index, token in enumerate(tokens):
        if token in ("*", ">"):
            found.append(".".join([*tokens[:index], "a", *tokens[index + 1 :]]))
    return found


SOURCE_KINDS = ("stream", "stream", "narrower", "default", "all", "broader", "outside")
OPTION_KINDS = (
    "shaped",
    "template",
    "overlap",
    "overlap",
    "bare",
    "spaced",
    "weird",
    "shadow",
    "shadow",
    "shadow",
    "hollow",
)
HOLLOW_TOKENS = ("", ">")
"""Tokens a `hollow` source gets before one of its own: empty, or `>` before the end; either makes it no
subject ("Subject-Based Messaging"), which only the transform's check of its source refuses."""
SHADOW_TOKENS = weighted(("", "*a"), (">a", "a*", "a>"), one_in=3)
"""Tokens a `shadows` destination puts after the stream's namespace: mostly empty or `*a` (which a
check of the first character takes for `*`), else another token one character from a wildcard."""
TRIES = 3
"""Draws of an option before the example is rejected, as `SearchStrategy.filter` does."""
PAYLOADS = st.binary(max_size=48)
"""Message bodies: empty, short binary."""
HEADER_NAMES = st.lists(st.sampled_from(APP_HEADERS), max_size=3, unique=True)
"""The application headers of a publish: zero to three distinct names of `APP_HEADERS`."""
POOL_SIZES = st.sampled_from([len(POOL), 1, 2])
STORAGES = st.sampled_from(["memory", "file"])
LIMITS = st.sampled_from([-1, 1, 2])
SEEDS = st.integers(0, 2**32 - 1)
# The strategies a scenario draws from are built once, here, with `below` or cached per argument: a
# strategy built on every draw costs more to build and validate than to draw from (a RePublish
# campaign, profiled). They stay composites, so that Hypothesis can copy a drawn source or destination
# from one place of a scenario to another.


@functools.cache
@st.composite
def sources_for(draw: st.DrawFn, subjects: tuple[str, ...]) -> str:
    """A RePublish source: mostly one of the stream's subjects (shrinks to the first), else a narrower
    form of one, the default (empty), ``>``, a broader one (``ns.>``), or one outside the stream
    (valid from 2.10 only)."""
    namespace = subjects[0].split(".")[0]
    kind = pick(draw, SOURCE_KINDS)
    if kind == "stream":
        return pick(draw, subjects)
    if kind == "narrower":
        return pick(draw, [r for s in subjects for r in _refinements(s)[1:]] or subjects)
    return {"default": "", "all": ">", "broader": f"{namespace}.>", "outside": "elsewhere.*"}[kind]


@functools.cache
@st.composite
def placeholder(draw: st.DrawFn, index: int, profile: ReleaseProfile) -> str:
    """A destination token standing for the source's ``index``-th ``*``, in a form the release has."""
    forms = ["$", "wildcard"]
    if "partition" in profile.functions:
        forms.append("partition")
    if "left" in profile.functions:
        forms += ["left", "right"]
    form = pick(draw, forms)
    if form == "$":
        return f"${index}"
    if form == "wildcard":
        return pick(draw, [f"{{{{wildcard({index})}}}}", f"{{{{ wildcard({index}) }}}}"])
    if form == "partition":
        return f"{{{{partition({1 + draw(below(5))},{index})}}}}"
    return f"{{{{{form}({index},{1 + draw(below(3))})}}}}"


@functools.cache
def _orders(stars: int) -> st.SearchStrategy[list[int]]:
    return st.permutations(list(range(1, stars + 1)))


@functools.cache
@st.composite
def destinations_for(
    draw: st.DrawFn, source: str, namespace: str, profile: ReleaseProfile, *, literal: bool = True
) -> str:
    """A destination for ``source``: the literal ``namespace`` (unless not `literal`) and a placeholder
    for each ``*`` in some order (rarely one left out, now and then a ``random`` token from 2.12), ``>``
    last when the source has it. Excluded: ``split`` and the ``sliceFrom*``/``splitFrom*`` functions,
    whose outputs can hold empty tokens that no subscriber can receive (the validation property still
    draws them)."""
    stars = source.split(".").count("*") if source else 0
    indexes = draw(_orders(stars)) if stars else []
    if indexes and draw(below(10)) == 0:
        indexes = indexes[:-1]
    tokens = [draw(placeholder(i, profile)) for i in indexes]
    if "random" in profile.functions and draw(below(6)) == 0:
        tokens.append(f"{{{{random({1 + draw(below(4))})}}}}")
    if literal:
        tokens.insert(draw(below(len(tokens) + 1)), namespace)
    if not source or source.endswith(">"):
        tokens.append(">")
    return ".".join(tokens)


@functools.cache
@st.composite
def shadows(draw: st.DrawFn, subjects: tuple[str, ...]) -> str:
    """A destination in the stream's own subject space that overlaps its subjects, or just misses them,
    by the count of its tokens or by one odd token: a prefix of one of them then `>`, one of them one
    token longer then `>`, or the namespace, one of `SHADOW_TOKENS` and `>` (``s..>``, ``s.*a.>``: an
    empty token under a subject's wildcard, a token one character from one). ADR-28's "must not match
    or subset" the stream's subjects where a token-by-token check can go wrong (mutants 1248, 1268,
    1285, 1326, 1334 and 1437 of 2.14.10's ``SubjectsCollide``)."""
    tokens = pick(draw, subjects).split(".")
    shape = draw(below(4))
    if shape == 0:
        return ".".join([*tokens[: max(1, draw(below(len(tokens))))], ">"])
    if shape == 1:
        return ".".join([*tokens, POOL[2], ">"])
    return ".".join([tokens[0], pick(draw, SHADOW_TOKENS), ">"])


@functools.cache
@st.composite
def valid_options(
    draw: st.DrawFn, subjects: tuple[str, ...], namespace: str, profile: ReleaseProfile
) -> RePublish:
    """A RePublish option the reference accepts for a stream with ``subjects`` on this release: a
    source of ``subjects`` and a destination for it, drawn again while the reference refuses it (at
    most `TRIES` times, then the example is rejected).

    Excluded on 2.8: the default (empty) source, which 2.8 refuses (divergence
    ``republish-source-required``); a scenario needs its stream created."""
    rules = rules_for(profile)
    needs_source = not rules.headers_only  # 2.8, the release without a default source
    for _ in range(TRIES):
        source = draw(sources_for(subjects))
        if needs_source and not source:
            continue
        option = RePublish(source, draw(destinations_for(source, namespace, profile)), draw(st.booleans()))
        if not republish_violations(subjects, option, rules):
            return option
    return reject()


@functools.cache
@st.composite
def options(draw: st.DrawFn, subjects: tuple[str, ...], namespace: str, profile: ReleaseProfile) -> RePublish:
    """Any RePublish option, valid or not: mostly `valid_options`-like draws, plus destinations from the
    mapping strategies (functions of every release, odd casings, bad arguments), destinations that
    overlap the stream (its own namespace), placeholders alone ("at least 1 non-wildcard token" is the
    rule they break), a literal with whitespace, the odd shapes of `WEIRD_DESTINATIONS`, and `shadows`
    of the stream's own subjects, or a `hollow` source that is no subject."""
    source = draw(sources_for(subjects))
    kind = pick(draw, OPTION_KINDS)
    if kind == "hollow":
        destination = draw(destinations_for(source, namespace, profile))
        tokens = (source or subjects[0]).split(".")
        tokens.insert(draw(below(len(tokens))), pick(draw, HOLLOW_TOKENS))
        source = ".".join(tokens)
    elif kind == "shaped":
        destination = draw(destinations_for(source, namespace, profile))
    elif kind == "bare":
        destination = draw(destinations_for(source, namespace, profile, literal=False))
    elif kind == "spaced":
        destination = draw(destinations_for(source, namespace + pick(draw, SPACES), profile))
    elif kind == "template":
        destination = namespace + "." + draw(destination_templates(source or ">", profile))
    elif kind == "overlap":
        own = subjects[0].split(".")[0]
        destination = draw(destinations_for(source, own, profile))
    elif kind == "shadow":
        destination = draw(shadows(subjects))
    else:
        destination = pick(draw, WEIRD_DESTINATIONS).replace("R", namespace)
    return RePublish(source, destination, draw(st.booleans()))


@functools.cache
@st.composite
def published_subjects(draw: st.DrawFn, subjects: tuple[str, ...], pool: tuple[str, ...] = POOL) -> str:
    """A subject one of the stream's patterns matches (``*`` and ``>`` filled from ``pool``)."""
    out: list[str] = []
    for token in pick(draw, subjects).split("."):
        if token == "*":
            out.append(pick(draw, pool))
        elif token == ">":
            out += [pick(draw, pool) for _ in range(1 + draw(below(2)))]
        else:
            out.append(token)
    return ".".join(out)


@functools.cache
@st.composite
def application_headers(draw: st.DrawFn) -> tuple[tuple[str, str], ...]:
    """Zero to three application headers with distinct names from `APP_HEADERS`."""
    return tuple((name, draw(HEADER_VALUE)) for name in draw(HEADER_NAMES))


@functools.cache
def _kinds(*, deletes: bool, evicts: bool) -> st.SearchStrategy[list[str]]:
    kinds = (
        ["publish"] * 6 + ["purge", "edit"] + (["delete"] if deletes else []) + (["evict"] if evicts else [])
    )
    return st.lists(st.sampled_from(kinds), min_size=1, max_size=MAX_OPERATIONS)


@functools.cache
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
    pool = POOL[: draw(POOL_SIZES, label="distinct tokens")]
    drawn: list[Operation] = []
    published: list[str] = []
    deleted: list[str] = []
    for kind in draw(_kinds(deletes=deletes, evicts=deletes and limit > 0)):
        if kind == "evict":
            subject = draw(published_subjects(subjects, pool))
            drawn += [Publish(subject, draw(PAYLOADS), ()) for _ in range(limit + 1)]
            published += [subject] * (limit + 1)
            deleted.append(subject)
            drawn += [Delete(len(published)), Purge(subject)]
        elif kind == "publish":
            headers = draw(application_headers())
            msg_id = pick(draw, MSG_IDS)
            if msg_id:
                headers = (*headers, (HEADER_MSG_ID, msg_id))
            again = deleted and draw(below(2)) == 0
            subject = deleted[-1] if again else draw(published_subjects(subjects, pool))
            published.append(subject)
            drawn.append(Publish(subject, draw(PAYLOADS), headers))
        elif kind == "delete":
            newest = published and draw(below(2)) == 0
            sequence = len(published) if newest else 1 + draw(below(len(published) + 1))
            deleted += published[sequence - 1 : sequence]
            drawn.append(Delete(sequence))
        elif kind == "purge":
            recent = deleted and draw(below(2)) == 0
            drawn.append(Purge(deleted[-1] if recent else pick(draw, [None, *subjects, *published])))
        else:
            drawn.append(Edit(draw(valid_options(subjects, DESTINATIONS, profile))))
    return tuple(drawn)


@st.composite
def scenarios(draw: st.DrawFn, profile: ReleaseProfile) -> RepublishScenario:
    """A stream (`LAYOUTS`), an option (mostly one the reference accepts, else any), and operations
    for it when the reference takes both."""
    rules = rules_for(profile)
    subjects = draw(LAYOUTS)
    any_option = draw(below(2)) == 1
    option = draw((options if any_option else valid_options)(subjects, DESTINATIONS, profile))
    storage = draw(STORAGES)
    limit = draw(LIMITS)
    valid = not configuration_violations(subjects, option, rules)
    ops = draw(operations(subjects, profile, deletes=True, limit=limit)) if valid else ()
    return RepublishScenario(subjects, option, storage, limit, ops, draw(SEEDS))


# ---------------------------------------------------------------------------------------------------
# Execution: the stream, its operations, and a `>` tap for republished messages


@dataclass(frozen=True, slots=True)
class Window:
    """When a publish was sent and its ack came back (ns since the epoch): the store time lies inside."""

    sent_ns: int
    acked_ns: int


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


def is_republished(message: Message) -> bool:
    """True iff a message seen by a `>` tap can be a republished one: republished messages have no reply
    subject (every publish of these suites asks for an ack, so its echo has one)."""
    return message.reply is None and not message.subject.startswith(TAP_IGNORED_PREFIXES)


def stream_config(
    name: str,
    subjects: Sequence[str],
    republish: RePublish | None,
    *,
    storage: str = "memory",
    max_msgs_per_subject: int = -1,
) -> JsonObject:
    """The JSON of a limits stream with an optional RePublish option."""
    config: JsonObject = {
        "name": name,
        "subjects": list(subjects),
        "storage": storage,
        "retention": "limits",
        "max_msgs_per_subject": max_msgs_per_subject,
    }
    if republish is not None:
        config["republish"] = republish.to_json()
    return config


def _config(unit: RepublishScenario, option: RePublish) -> JsonObject:
    return stream_config(
        STREAM, unit.subjects, option, storage=unit.storage, max_msgs_per_subject=unit.max_msgs_per_subject
    )


def headers_of(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Headers for ``WireConnection.publish`` (names are unique in what the suites publish)."""
    return dict(pairs)


def timed_publish(
    js: JetStreamClient, subject: str, payload: bytes = b"", headers: Sequence[tuple[str, str]] = ()
) -> tuple[JsonObject, Window]:
    """Publish with an ack; the stream's acknowledgement and the window its store time lies in."""
    sent = time.time_ns()
    ack = js.publish(subject, payload, headers=headers_of(headers) or None)
    return ack, Window(sent, time.time_ns())


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


# ---------------------------------------------------------------------------------------------------
# Judging: a create's or an update's reply, a stream operation's reply


def refusal_kind(error: ApiError) -> str:
    """The rule a server's refusal names (see ``reference.republish.SERVER_KINDS``), or ``other``."""
    text = error.description.lower()
    return next((kind for needle, kind in SERVER_KINDS if needle in text), "other")


def refused_as(error: ApiError, destination: str, subjects: Sequence[str]) -> str:
    """`refusal_kind` as a difference names it: an overlap found with a token that begins with `*` or `>`
    without being one (``s.*a.>``, a literal token to the reference), in the destination or the stream's
    subjects for a cycle, or in the stream's subjects for their own overlap, is set apart
    (``-wildcard-prefixed-token``), since releases up to 2.14.9 and 2.15.2 compare such a token by its
    first character (nats-server's ``tokensCanMatch``)."""
    kind = refusal_kind(error)
    overlapping = {
        DestinationOverlapsStreamError.kind: [destination, *subjects],
        StreamSubjectsOverlapError.kind: subjects,
    }
    if any(
        len(token) > 1 and token[0] in "*>"
        for subject in overlapping.get(kind, ())
        for token in subject.split(".")
    ):
        return f"{kind}-wildcard-prefixed-token"
    return kind


def expected_outcome(subjects: Sequence[str], republish: RePublish, rules: RePublishRules) -> tuple[str, ...]:
    """The kinds of rule the configuration breaks (empty: the server must accept it)."""
    return tuple(error.kind for error in configuration_violations(subjects, republish, rules))


def accepted_difference(subjects: Sequence[str], republish: RePublish, rules: RePublishRules) -> str:
    """The difference of an option the server accepts against the reference: the first rule broken,
    with the transform engine's cause for an invalid transform, told apart for a source without
    wildcards (``...-server-accept-literal-source``), as the mapping validation family does."""
    first = configuration_violations(subjects, republish, rules)[0]
    rule = f"{first.kind}-{first.cause}" if isinstance(first, InvalidTransformError) else first.kind
    suffix = "-literal-source" if is_literal(republish.effective_source) else ""
    return f"reference-reject-{rule}-server-accept{suffix}"


def judge_configuration(
    context: RunContext,
    rules: RePublishRules,
    subjects: Sequence[str],
    republish: RePublish,
    reply: Mapping[str, object],
    *,
    operation: str = "create",
    seed: int = 0,
    duration_us: int = 0,
) -> Case:
    """The verdict on a create/update reply for a stream with ``subjects`` and ``republish``.

    The reference's expectation is the ADR's: a RePublish option may be edited after creation, so an
    update is judged by the new option alone.
    """
    kinds = expected_outcome(subjects, republish, rules)
    error = api_error(reply)
    expected = "reject:" + "+".join(kinds) if kinds else "accept"
    observed = f"reject:{refusal_kind(error)}" if error else "accept"
    reason = ""
    if error is not None and error.err_code in STORE_FAILURES:
        difference, reason = (
            "unknown",
            SERVER_ERROR,
        )  # it could not store the stream: no verdict on the option
    elif error is None and not kinds:
        difference = ""
    elif error is None:
        difference = accepted_difference(subjects, republish, rules)
    elif not kinds:
        difference = f"reference-accept-server-reject-{refused_as(error, republish.destination, subjects)}"
    elif refusal_kind(error) in reportable_by(kinds):
        difference = ""
    else:
        difference = (
            f"reference-reject-{kinds[0]}-server-reject-{refused_as(error, republish.destination, subjects)}"
        )
    server = f"err_code {error.err_code} (code {error.code}): {error.description}" if error else "accepted"
    detail = f"{operation}: {server}"
    return make_case(
        context,
        feature=FEATURE,
        functions=functions_named(republish.destination),
        source=republish.source,
        destination=republish.destination,
        expected=expected,
        observed=observed,
        difference=difference,
        detail=detail,
        seed=seed,
        duration_us=duration_us,
        stream_subjects=subjects,
        headers_only=republish.headers_only,
        reason=reason,
    )


def judge_stream_reply(
    context: RunContext,
    subjects: Sequence[str],
    republish: RePublish,
    what: str,
    *,
    expected: object,
    observed: object,
    state: str,
) -> Case | None:
    """A stream operation's reply (an ack's sequence, a delete's success, a purge's count) that differs
    from the model's (``wrong-<what>``); None when they agree. `state` describes the model."""
    if expected == observed:
        return None
    return make_case(
        context,
        feature=FEATURE,
        functions=(),
        source=republish.source,
        destination=republish.destination,
        expected=f"{what}: {expected}",
        observed=f"{what}: {observed}",
        difference=f"wrong-{what}",
        detail=state,
        stream_subjects=tuple(subjects),
        headers_only=republish.headers_only,
    )


# ---------------------------------------------------------------------------------------------------
# Judging: republished messages


def describe_message(message: Message, headers: Mapping[str, list[str]] | None = None) -> str:
    """Compact text of an observed message, in the form of ``RePublishedMessage.describe``."""
    parsed = message.header_map() if headers is None else headers
    text = " ".join(f"{name}={value}" for name, values in parsed.items() for value in values)
    return f"{message.subject} body={len(message.payload)}B {text}".rstrip()


def message_differences(
    expected: RePublishedMessage,
    observed: Message,
    window: Window | None,
    headers: Mapping[str, list[str]] | None = None,
) -> list[str]:
    """What differs between a predicted and an observed republished message, as short kebab-case names
    (empty when they agree); a wrong subject is named as in every family (`wrong_subject`). `window`
    bounds the time stamp when known."""
    found: list[str] = []
    if not expected.accepts_subject(observed.subject):
        transform = expected.transform
        wrong = wrong_subject(transform.source, transform.destination, expected.original_subject)
        found.append("original-subject" if observed.subject == expected.original_subject else wrong)
    if observed.payload != expected.payload:
        found.append("wrong-body")
    want = expected.header_lists()
    got = observed.header_map() if headers is None else headers
    for name, values in want.items():
        seen = got.get(name, [])
        if STORE_TIME in values:
            found += _stamp_differences(values, seen, window)
        elif seen != values:
            if name == HEADER_LAST_SEQUENCE and seen == [str(expected.last_sequence_remaining)]:
                found.append("last-sequence-of-remaining")
            else:
                found.append(f"header-{name.lower()}")
    found += [f"extra-header-{name.lower()}" for name in got if name not in want]
    return found


def _stamp_differences(want: list[str], seen: list[str], window: Window | None) -> list[str]:
    """Time stamps: as many as predicted, each RFC 3339 UTC, and the one this republish added (the
    last) inside the publish window."""
    if len(seen) != len(want):
        return ["header-nats-time-stamp"]
    stamps = [parse_time_stamp(value) for value in seen]
    for wanted, value, stamp in zip(want, seen, stamps, strict=True):
        if wanted == STORE_TIME and stamp is None:
            return ["time-stamp-format"]
        if wanted not in (STORE_TIME, value):
            return ["header-nats-time-stamp"]
    last = stamps[-1]
    if window is not None and last is not None:
        low, high = window.sent_ns - STAMP_SLACK_NS, window.acked_ns + STAMP_SLACK_NS
        if not low <= last <= high:
            return ["time-stamp-outside-publish"]
    return []


def _original_subject(observed: Message | None) -> str:
    """The ingested subject an unpredicted message names in its last ``Nats-Subject`` (2.9+), if any."""
    subjects = observed.header_map().get(HEADER_SUBJECT, []) if observed else []
    return subjects[-1] if subjects else ""


def functions_of(republish: RePublish, version: str) -> tuple[str, ...]:
    """Canonical names of the functions the option's transform uses on this release (as message cases
    name them), or the names its destination spells when the transform does not compile."""
    try:
        profile = rules_for(nearest_profile(version)).profile
        transform = compile_transform(
            republish.effective_source, republish.destination, profile, engine_only=True
        )
    except ConformanceError:
        return functions_named(republish.destination)
    return transform.functions


def choose_difference(context: RunContext, functions: Sequence[str], differences: Sequence[str]) -> str:
    """The first difference no expectation explains (so the case diverges), else the first one."""
    names = "+".join(canonical_functions(functions))
    for difference in differences:
        found = context.expectations.classify(
            context.implementation,
            context.server_version,
            feature=FEATURE,
            functions=names,
            difference=difference,
        )
        if found is None:
            return difference
    return differences[0] if differences else ""


def judge_message(
    context: RunContext,
    subjects: Sequence[str],
    republish: RePublish,
    expected: RePublishedMessage | None,
    observed: Message | None,
    *,
    window: Window | None = None,
    seed: int = 0,
    headers: Mapping[str, list[str]] | None = None,
) -> Case:
    """One republished message's verdict: predicted and delivered, predicted only, or delivered only
    (`headers`: the observed message's parsed headers, when the caller has them)."""
    functions = expected.transform.functions if expected else functions_of(republish, context.server_version)
    if observed is not None and headers is None:
        headers = observed.header_map()
    if expected is not None and observed is not None:
        differences = message_differences(expected, observed, window, headers)
    elif expected is not None:
        differences = [NOT_ARRIVED]
    else:
        differences = ["unexpected-message"]
    difference = choose_difference(context, functions, differences)
    detail = f"differences: {', '.join(differences) or 'none'}"
    return make_case(
        context,
        feature=FEATURE,
        functions=functions,
        source=republish.source,
        destination=republish.destination,
        subject=expected.original_subject if expected else _original_subject(observed),
        expected=expected.describe() if expected else "(nothing)",
        observed=describe_message(observed, headers) if observed else "",
        difference=difference,
        detail=detail,
        seed=seed,
        stream_subjects=subjects,
        headers_only=republish.headers_only,
    )


def republish_key(message: Message, headers: Mapping[str, list[str]] | None = None) -> tuple[str, int] | None:
    """(stream, sequence) of a republished message: the last ``Nats-Stream`` and ``Nats-Sequence``
    values (earlier ones are application headers, e.g. from another stream's republish)."""
    headers = message.header_map() if headers is None else headers
    streams, sequences = headers.get(HEADER_STREAM), headers.get(HEADER_SEQUENCE)
    if not streams or not sequences or not sequences[-1].isdigit():
        return None
    return streams[-1], int(sequences[-1])


@dataclass(slots=True)
class MessageLedger:
    """Pairs the tap's messages with the model's predictions by (stream, sequence) and judges each pair
    once: a delivery nobody predicted is an `unexpected-message` case at once, a prediction nothing
    answered a `not-delivered` case at the end."""

    subjects: Sequence[str]
    republish: RePublish
    windows: dict[int, Window] = field(default_factory=dict)
    seen: int = 0
    matched: set[int] = field(default_factory=set)
    cases: list[Case] = field(default_factory=list)

    def complete(self, predicted: Sequence[RePublishedMessage], tapped: Sequence[Message]) -> bool:
        """True iff every prediction has a delivery with its key among `tapped`."""
        keys = {republish_key(message) for message in tapped}
        return all((p.stream, p.sequence) in keys for p in predicted)

    def judge(
        self,
        context: RunContext,
        predicted: Sequence[RePublishedMessage],
        tapped: Sequence[Message],
        *,
        final: bool,
        seed: int = 0,
    ) -> list[Case]:
        """Judge the deliveries not judged yet, and (when ``final``) the predictions never delivered."""
        new: list[Case] = []
        index_of = {(p.stream, p.sequence): i for i, p in enumerate(predicted)}
        for message in tapped[self.seen :]:
            headers = message.header_map()
            index = index_of.get(republish_key(message, headers) or ("", -1))
            want = predicted[index] if index is not None and index not in self.matched else None
            if index is not None and want is not None:
                self.matched.add(index)
            window = self.windows.get(want.sequence) if want else None
            new.append(
                judge_message(
                    context,
                    self.subjects,
                    self.republish,
                    want,
                    message,
                    window=window,
                    seed=seed,
                    headers=headers,
                )
            )
        self.seen = len(tapped)
        if final:
            for index, want in enumerate(predicted):
                if index not in self.matched:
                    self.matched.add(index)
                    new.append(judge_message(context, self.subjects, self.republish, want, None, seed=seed))
        self.cases += new
        return new


# ---------------------------------------------------------------------------------------------------
# The family


@dataclass(frozen=True, slots=True)
class RepublishFamily(JetStreamSlots):
    name: str = "republish"
    description: Description = Description(
        "a stream, a RePublish option, storage and limit, and up to 20 operations",
        1_500,
    )
    features: tuple[str, ...] = (FEATURE,)

    @property
    def schedule(self) -> Schedule[Session]:
        """8 scenarios at once (`JetStreamSlots`): a scenario waits `SETTLE` quietly for late republished
        messages after its operations and before each edit. Figures: docs/benchmarks.md, Families."""
        return Schedule(account_slot, 8)

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
        if api_error(observed.created) is not None or configuration_violations(subjects, option, rules):
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
