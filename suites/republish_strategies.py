"""Hypothesis strategies for JetStream RePublish: stream layouts, RePublish options, publishes.

Every stream of a draw lives under its own namespace token (``s3``), and its republish destinations
under another (``r3``), so streams of one server never share subjects unless a strategy makes them
overlap on purpose. Tokens come from a pool of four, so publishes hit the same subjects again and
again (``Nats-Last-Sequence`` needs repeats). Which options are valid is not decided here but by
``reference.republish``; `valid_options` filters with it for the family's scenarios and edits,
`options` does not. Everything shrinks towards one subject pattern, the default source, ``r.>``-like
destinations, empty payloads and no headers.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from reference.profiles import ReleaseProfile
from reference.republish import RePublish, republish_violations, rules_for
from suites.strategies import destination_templates

POOL = ("a", "b", "x", "q1")
"""Tokens of published subjects and of patterns."""

APP_HEADERS = ("X-Trace", "X-Tenant", "Nats-Stream", "Nats-Subject")
"""Application header names: two of the application's own and two that repeat names the server adds
(the ADR preserves application headers, so both values must arrive). Names with a meaning on ingest
(``Nats-Expected-*``, ``Nats-Rollup``, ``Nats-TTL``...) are excluded: they change what is stored, which
is not what RePublish specifies; ``Nats-Msg-Id`` is drawn separately."""

HEADER_VALUE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_./:", min_size=1, max_size=12)


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


def _refinements(pattern: str) -> list[str]:
    """``pattern`` and narrower forms (a ``*`` or ``>`` replaced by a pool token)."""
    tokens = pattern.split(".")
    found = [pattern]
    for index, token in enumerate(tokens):
        if token in ("*", ">"):
            found.append(".".join([*tokens[:index], "a", *tokens[index + 1 :]]))
    return found


@st.composite
def sources_for(draw: st.DrawFn, subjects: Sequence[str]) -> str:
    """A RePublish source: mostly one of the stream's subjects (shrinks to the first), else a narrower
    form of one, the default (empty), ``>``, a broader one (``ns.>``), or one outside the stream
    (valid from 2.10 only)."""
    namespace = subjects[0].split(".")[0]
    kind = draw(st.sampled_from(["stream", "stream", "narrower", "default", "all", "broader", "outside"]))
    if kind == "stream":
        return draw(st.sampled_from(list(subjects)))
    if kind == "narrower":
        return draw(st.sampled_from([r for s in subjects for r in _refinements(s)[1:]] or list(subjects)))
    return {"default": "", "all": ">", "broader": f"{namespace}.>", "outside": "elsewhere.*"}[kind]


@st.composite
def placeholder(draw: st.DrawFn, index: int, profile: ReleaseProfile) -> str:
    """A destination token standing for the source's ``index``-th ``*``, in a form the release has."""
    forms = ["$", "wildcard"]
    if "partition" in profile.functions:
        forms.append("partition")
    if "left" in profile.functions:
        forms += ["left", "right"]
    form = draw(st.sampled_from(forms))
    if form == "$":
        return f"${index}"
    if form == "wildcard":
        return draw(st.sampled_from([f"{{{{wildcard({index})}}}}", f"{{{{ wildcard({index}) }}}}"]))
    if form == "partition":
        return f"{{{{partition({draw(st.integers(1, 5))},{index})}}}}"
    return f"{{{{{form}({index},{draw(st.integers(1, 3))})}}}}"


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
    indexes = draw(st.permutations(list(range(1, stars + 1)))) if stars else []
    if indexes and draw(st.integers(0, 9)) == 0:
        indexes = indexes[:-1]
    tokens = [draw(placeholder(i, profile)) for i in indexes]
    if "random" in profile.functions and draw(st.integers(0, 5)) == 0:
        tokens.append(f"{{{{random({draw(st.integers(1, 4))})}}}}")
    if literal:
        tokens.insert(draw(st.integers(0, len(tokens))), namespace)
    if not source or source.endswith(">"):
        tokens.append(">")
    return ".".join(tokens)


@st.composite
def valid_options(
    draw: st.DrawFn, subjects: Sequence[str], namespace: str, profile: ReleaseProfile
) -> RePublish:
    """A RePublish option the reference accepts for a stream with ``subjects`` on this release.

    Excluded on 2.8: the default (empty) source, which 2.8 refuses (divergence
    ``republish-source-required``); a scenario needs its stream created."""
    rules = rules_for(profile)
    needs_source = not rules.headers_only  # 2.8, the release without a default source
    drawn = candidate_options(subjects, namespace, profile, needs_source=needs_source)
    return draw(drawn.filter(lambda option: not republish_violations(subjects, option, rules)))


@st.composite
def candidate_options(
    draw: st.DrawFn, subjects: Sequence[str], namespace: str, profile: ReleaseProfile, *, needs_source: bool
) -> RePublish:
    """A RePublish option of a source of ``subjects`` (not the empty one where `needs_source`) and a
    destination for it (`valid_options` keeps those the reference accepts). Defined once, not per draw:
    Hypothesis reads the source of every function `st.composite` decorates."""
    source = draw(sources_for(subjects).filter(lambda s: bool(s) or not needs_source))
    destination = draw(destinations_for(source, namespace, profile))
    return RePublish(source, destination, draw(st.booleans()))


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


@st.composite
def options(draw: st.DrawFn, subjects: Sequence[str], namespace: str, profile: ReleaseProfile) -> RePublish:
    """Any RePublish option, valid or not: mostly `valid_options`-like draws, plus destinations from the
    mapping strategies (functions of every release, odd casings, bad arguments), destinations that
    overlap the stream (its own namespace), placeholders alone ("at least 1 non-wildcard token" is the
    rule they break), a literal with whitespace, and the odd shapes of `WEIRD_DESTINATIONS`."""
    source = draw(sources_for(subjects))
    kind = draw(st.sampled_from(["shaped", "template", "overlap", "overlap", "bare", "spaced", "weird"]))
    if kind == "shaped":
        destination = draw(destinations_for(source, namespace, profile))
    elif kind == "bare":
        destination = draw(destinations_for(source, namespace, profile, literal=False))
    elif kind == "spaced":
        destination = draw(destinations_for(source, namespace + draw(st.sampled_from(SPACES)), profile))
    elif kind == "template":
        destination = namespace + "." + draw(destination_templates(source or ">", profile))
    elif kind == "overlap":
        own = subjects[0].split(".")[0]
        destination = draw(destinations_for(source, own, profile))
    else:
        destination = draw(st.sampled_from(WEIRD_DESTINATIONS)).replace("R", namespace)
    return RePublish(source, destination, draw(st.booleans()))


@st.composite
def published_subjects(draw: st.DrawFn, subjects: Sequence[str], pool: Sequence[str] = POOL) -> str:
    """A subject one of the stream's patterns matches (``*`` and ``>`` filled from ``pool``)."""
    pattern = draw(st.sampled_from(list(subjects)))
    out: list[str] = []
    for token in pattern.split("."):
        if token == "*":
            out.append(draw(st.sampled_from(pool)))
        elif token == ">":
            out += draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2))
        else:
            out.append(token)
    return ".".join(out)


def application_headers() -> st.SearchStrategy[tuple[tuple[str, str], ...]]:
    """Zero to three application headers with distinct names from `APP_HEADERS`."""
    names = st.lists(st.sampled_from(APP_HEADERS), max_size=3, unique=True)
    return names.flatmap(
        lambda chosen: st.tuples(*[st.tuples(st.just(name), HEADER_VALUE) for name in chosen])
    )


def payloads() -> st.SearchStrategy[bytes]:
    """Message bodies: empty, short binary."""
    return st.binary(max_size=48)


__all__ = [
    "APP_HEADERS",
    "POOL",
    "WEIRD_DESTINATIONS",
    "application_headers",
    "destinations_for",
    "options",
    "payloads",
    "placeholder",
    "published_subjects",
    "sources_for",
    "stream_subject_layouts",
    "valid_options",
]
