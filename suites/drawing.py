"""The questions of the library family (`suites.families.library`), drawn family by family.

Hypothesis draws each family's structure (a mapping, a pattern, a partition count, a subject rule) and a
generator it seeds draws the family's questions (`family_of`), kept as a template question and the
values its questions differ in (`QuestionFamily`). A seed names the same questions in any process
(the engine draws them in a copy of the process beside the asking, `suites.engine.prefetch`):
`draw_families` depends on the seed alone.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from hypothesis import strategies as st

from nats_conformance.fixtures.clients.adapter import TEMPLATES
from nats_conformance.reference.functions import MAPPING_FUNCTIONS
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.protocol import (
    ContainsQuestion,
    MatchQuestion,
    PartitionQuestion,
    Question,
    TransformQuestion,
    ValidMappingQuestion,
    ValidSubjectQuestion,
    WeightedEntry,
)
from nats_conformance.suites.strategies import (
    ODD_SOURCES,
    Enough,
    bulk_subjects,
    destination_templates,
    odd_destinations,
    patterns,
    run_batches,
    sources,
)

FAMILY = (25, 200)
"""Questions per Hypothesis example (one drawn structure, many inputs from a generator it seeds): one
per 800 questions of the run, at least 25 and at most 200, so that a short run still draws many
structures and a long one spends its time on questions; fewer when a structure has fewer distinct
inputs (a mapping source without wildcards has one)."""
FAMILY_SCALE = {
    "transform": 1,
    "partition": 4,
    "match": 2,
    "valid_subject": 4,
    "contains": 2,
    "valid_mapping": 1,
}
"""How many times more questions a family of each kind has than a family of transforms."""


SPECIAL_TOKENS = ("", " ", "*", ">", "a b", "\t", "é")
"""Token texts at the edge of subject validity ("Subject-Based Messaging",
https://docs.nats.io/nats-concepts/subjects)."""


@functools.cache
def wildcard_sources() -> st.SearchStrategy[str]:
    """Mapping sources with one to three `*` (what most functions need), sometimes none."""
    return sources(max_tokens=4).filter(lambda source: 1 <= source.count("*") <= 3) | sources(max_tokens=3)


def no_random(destination: str) -> bool:
    return "random" not in destination.lower()


FOCUS = (
    "wildcard",
    *(f.name for f in MAPPING_FUNCTIONS if f.scope == "message" and f.name not in ("wildcard", "random")),
)
"""Functions a family of questions may focus on (one or two at a time, so each meets its edge cases);
not ``random``, whose output no answer can be compared with. ``wildcard`` comes first, as it always
has, so that a seed still draws the questions it drew before."""

EDGES = ("edges",)
"""The focus of transform families at the edges of the mapping rules: sources that are no subjects or
hold odd wildcards (`ODD_SOURCES`), destinations with malformed calls, `>` alone, empty tokens
(`odd_destinations`); each mapping is asked of a few subjects, as most are refused."""
EDGE_FAMILY = 5
LENIENT = ("lenient",)
"""The focus of subject-rule families that ask a library's lenient check (protocol version 2)."""

STRATA: tuple[tuple[str, tuple[str, ...], int], ...] = (
    *(("transform", (name,), 1) for name in FOCUS),
    ("transform", (), 2),
    ("partition", (), 2),
    ("match", (), 3),
    ("valid_subject", (), 2),
    ("transform", EDGES, 1),
    ("contains", (), 1),
    ("valid_mapping", (), 1),
    ("valid_subject", LENIENT, 1),
)
"""How a run's families are shared out: (kind of question, functions in focus, share). Each stratum is
its own Hypothesis run, so every kind and every function gets its share of a short run (within one run,
Hypothesis's draws cluster around earlier examples: a function could go unasked in 5,000 questions).
The last two are the operations of protocol version 2 (`strata_of`)."""


def strata_of(
    protocol: int, ops: frozenset[str] = frozenset()
) -> tuple[tuple[str, tuple[str, ...], int], ...]:
    """The strata an adapter of protocol `protocol` is asked: version 1 has neither `contains` nor
    `valid_mapping`, and every other stratum, so that a seed draws for it the very questions it drew
    before version 2; from version 2 only those of the operations its hello lists in `ops` (all when
    it lists none), so that a library with a few operations spends the whole budget on them."""
    if protocol < 2:
        return tuple(s for s in STRATA if s[0] not in ("contains", "valid_mapping") and s[1] != LENIENT)
    return tuple(s for s in STRATA if not ops or s[0] in ops) or STRATA


def boundary(subject: str, kind: str, extra: str) -> str:
    """A subject next to a matching one: its last token dropped, one token more, or itself."""
    if kind == "shorter":
        return ".".join(subject.split(".")[:-1]) or subject
    if kind == "longer":
        return f"{subject}.{extra}"
    return subject


@dataclass(frozen=True, slots=True, eq=False)
class QuestionFamily:
    """A family of questions as drawn: a template question (the fields its questions share; its value of
    the one they differ in, `fixtures.clients.adapter.TEMPLATES`, is never read) and each question's value
    of that field.
    This is what crosses the drawing pipe: pickling the questions themselves costs about five times as
    much. Each is drawn once, so two are told apart by identity (questions are not hashable)."""

    template: Question
    values: tuple[Any, ...]

    @classmethod
    def alone(cls, question: Question) -> QuestionFamily:
        """The family of one question."""
        shape = TEMPLATES[type(question)]
        assert shape is not None, f"{question.op} questions form no family"
        return cls(question, (getattr(question, shape[0]),))


def questions_of(family: QuestionFamily) -> list[Question]:
    """A family's questions: its template with each of its values in the field they differ in."""
    template, values = family.template, family.values
    kind = type(template)
    names = [field.name for field in fields(kind)]
    shape = TEMPLATES[kind]
    assert shape is not None, f"{kind.op} questions form no family"
    at = names.index(shape[0])
    arguments = [getattr(template, name) for name in names]
    questions = []
    for value in values:
        arguments[at] = value
        questions.append(kind(*arguments))
    return questions


TOKENS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
POOL = 48
"""Drawn tokens in a family's pool, at least (a mapping's: as many as its family has questions, so that
a source with one wildcard still has as many distinct subjects)."""


def token_pool(rng: random.Random, count: int = POOL) -> list[str]:
    """`count` short tokens for bulk questions (short, so that cuts and hashes meet their boundaries),
    and a few fixed ones."""
    lengths = rng.choices(range(1, 9), k=count)
    return [
        *("".join(rng.choices(TOKENS, k=length)) for length in lengths),
        "a",
        "aa",
        "ab",
        "é",
        "日本",
        "a-b",
    ]


Structure = tuple[int, tuple[Any, ...]]
"""What Hypothesis draws for a family: a seed for its bulk, and the mapping (source, destination),
pattern, partition count or subject rule its questions share."""


@st.composite
def structures(draw: st.DrawFn, profile: ReleaseProfile, op: str, focus: Sequence[str]) -> Structure:
    """The structure of a family of questions of kind `op` (a mapping's functions are those of `focus`
    when given)."""
    seed = draw(st.integers(0, 2**32 - 1))
    if op == "transform" and tuple(focus) == EDGES:
        source = draw(st.sampled_from(ODD_SOURCES) | wildcard_sources())
        return seed, (source, draw(odd_destinations(source, profile).filter(no_random)))
    if op == "transform":
        source = draw(wildcard_sources())
        return seed, (source, draw(without_random(destination_templates(source, profile, focus))))
    if op == "partition":
        return seed, (draw(st.integers(1, 16)),)
    if op in ("match", "contains"):
        return seed, (draw(_patterns()),)
    if op == "valid_subject" and tuple(focus) == LENIENT:
        return seed, (draw(st.booleans()), True)
    if op == "valid_mapping":
        source = draw(wildcard_sources())
        destinations = without_random(destination_templates(source, profile, focus))
        listed = st.lists(destinations, min_size=1, max_size=3)
        return seed, (source, tuple(draw(listed)))
    return seed, (draw(st.booleans()),)


@functools.cache
def without_random(destinations: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return destinations.filter(no_random)


@functools.cache
def _patterns() -> st.SearchStrategy[str]:
    return patterns(max_tokens=4)


def family_size(op: str, cases: int, focus: Sequence[str] = ()) -> int:
    """The questions of a family of kind `op` in a run of `cases` questions (`FAMILY`; `EDGE_FAMILY`
    at the edges of the rules)."""
    if tuple(focus) == EDGES:
        return EDGE_FAMILY
    return min(max(cases // 800, FAMILY[0]), FAMILY[1]) * FAMILY_SCALE[op]


def family_of(op: str, structure: Structure, profile: ReleaseProfile, size: int) -> QuestionFamily:
    """Up to `size` distinct questions sharing a drawn structure, from a generator its seed seeds
    (so a run's seed names the same questions in any process)."""
    seed, drawn = structure
    rng = random.Random(seed)
    if op == "transform":
        source, destination = drawn
        pool = token_pool(rng, max(POOL, size))
        found = dict.fromkeys(bulk_subjects(source, rng, size, pool=pool))
        return QuestionFamily(TransformQuestion(source, destination, "", profile.name), tuple(found))
    pool = token_pool(rng)
    if op == "partition":
        keys = tuple(rng.choices(pool, k=rng.randint(1, 4)) for _ in range(size))
        return QuestionFamily(PartitionQuestion([], drawn[0]), keys)
    if op == "match":
        (pattern,) = drawn
        kinds = ("match", "shorter", "longer")
        matching = bulk_subjects(pattern, rng, size, pool=pool[:8])
        subjects = dict.fromkeys(boundary(s, rng.choice(kinds), rng.choice(pool)) for s in matching)
        return QuestionFamily(MatchQuestion(pattern, ""), tuple(subjects))
    if op == "contains":
        (within,) = drawn
        filters = dict.fromkeys(near_filter(within, rng, pool[:4]) for _ in range(size))
        return QuestionFamily(ContainsQuestion("", within), tuple(filters))
    if op == "valid_mapping":
        source, destinations = drawn
        lists = (weighted_list(destinations, rng) for _ in range(size))
        return QuestionFamily(ValidMappingQuestion(source, [], profile.name), tuple(lists))
    choices = [*pool[:8], *SPECIAL_TOKENS]
    parts = [rng.choices(choices, k=rng.randint(1, 4)) for _ in range(size)]
    lenient = len(drawn) > 1 and bool(drawn[1])
    texts = tuple(".".join(chosen) for chosen in parts)
    return QuestionFamily(ValidSubjectQuestion("", drawn[0], lenient), texts)


def near_filter(within: str, rng: random.Random, pool: Sequence[str]) -> str:
    """A subscription filter near `within`, so that containment goes either way: each token kept, made
    `*` or another literal, the end cut, made `>` or longer."""
    out = []
    for token in within.split("."):
        roll = rng.random()
        out.append(token if roll < 0.6 else "*" if roll < 0.8 else rng.choice(pool))
    ending = rng.random()
    if ending < 0.15 and len(out) > 1:
        out.pop()
    elif ending < 0.3:
        out[-1] = ">"
    elif ending < 0.45:
        out.append(rng.choice([*pool, "*", ">"]))
    return ".".join(out)


WEIGHT_EDGES = (0, 1, 50, 99, 100, 101, 120)


def weighted_list(destinations: Sequence[str], rng: random.Random) -> list[WeightedEntry]:
    """Some of `destinations` with weights: mostly adding up to 100 or less, sometimes more, some at the
    edges (0, 100, over 100); now and then a destination twice or entries scoped to a cluster."""
    chosen = rng.sample(list(destinations), rng.randint(1, len(destinations)))
    if rng.random() < 0.1:
        chosen.append(chosen[0])
    left = 100
    entries = []
    for destination in chosen:
        weight = rng.choice(WEIGHT_EDGES) if rng.random() < 0.5 else rng.randint(0, max(left, 0) + 10)
        left -= weight
        cluster = rng.choice(("c1", "c2")) if rng.random() < 0.15 else None
        entries.append(WeightedEntry(destination, weight, cluster))
    return entries


def _draw(strategy: st.SearchStrategy[Structure], data: st.DataObject) -> Structure:
    return data.draw(strategy)


def _shares(cases: int, strata: Sequence[tuple[str, tuple[str, ...], int]] = STRATA) -> list[int]:
    """`cases` shared out over the strata in proportion to their shares (largest remainder)."""
    total = sum(share for _op, _focus, share in strata)
    exact = [cases * share / total for _op, _focus, share in strata]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: counts[i] - exact[i])
    for i in by_remainder[: cases - sum(counts)]:
        counts[i] += 1
    return counts


def draw_families(
    profile: ReleaseProfile,
    cases: int,
    seed: int,
    ask: Callable[[QuestionFamily], float],
    *,
    protocol: int = 2,
    ops: frozenset[str] = frozenset(),
) -> None:
    """`cases` questions under `profile`'s rules, in families drawn stratum by stratum (`STRATA`), each
    handed to `ask`, whose score (the code a family ran that none before had, in a coverage-guided run)
    Hypothesis's target phase climbs: later draws mutate the structures that scored best, as HypoFuzz
    rewards new coverage."""
    strata = strata_of(protocol, ops)
    for stratum, share in zip(strata, _shares(cases, strata), strict=True):
        draw_stratum(profile, stratum, share, cases=cases, seed=seed, ask=ask)


def draw_stratum(
    profile: ReleaseProfile,
    stratum: tuple[str, tuple[str, ...], int],
    questions: int,
    *,
    cases: int,
    seed: int,
    ask: Callable[[QuestionFamily], float],
) -> None:
    """Up to `questions` questions of one stratum, family by family (the families of a run of `cases`),
    each handed to `ask`, whose score Hypothesis's target phase climbs."""
    op, focus, _share = stratum
    left = [questions]

    def collect(structure: Structure) -> float:
        if left[0] <= 0:
            raise Enough
        family = family_of(op, structure, profile, family_size(op, cases, focus))
        values = family.values[: left[0]]
        left[0] -= len(values)
        return ask(QuestionFamily(family.template, values))

    if questions:
        run_batches(functools.partial(_draw, structures(profile, op, focus)), questions, seed, collect)
