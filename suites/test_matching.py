"""Matching property: a subscription receives exactly the subjects its pattern matches by the reference.

subjects.ru.md, "Подстановки", "Соответствие одному токену" (``*`` is one whole token), "Соответствие
нескольким токенам" (``>`` is one or more tokens, last only), "Комбинирование wildcards". One connection
subscribes every pattern of an example and publishes every subject; each (pattern, subject) pair is a
case (``match``/``no-match``).
"""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixtures.backends.base import Backend
from fixtures.config import PROBE_SOURCE, ServerConfig
from records.writer import RecordWriter
from reference.matching import matches
from suites.differential import RunContext
from suites.reproduce import describe_divergences
from suites.strategies import RECOMMENDED
from suites.subscriptions import judge_matching, observe_subscriptions

pytestmark = [pytest.mark.live, pytest.mark.matching]


UTF8_TOKENS = ("Malmö", "日本", "ж")
"""UTF-8 tokens, allowed "at your own risk" (subjects.ru.md, "Разрешенные и рекомендуемые символы");
drawn now and then."""

RESERVED_PREFIX = PROBE_SOURCE.split(".")[0][:4]
"""``_nc_``: every server configuration maps the reload probe ``_nc_probe.genN``; no generated subject
may start with the prefix, so no probe mapping ever rewrites one."""


def clear_mappings(server: Backend) -> None:
    """Run with no user mappings (only the probe's), so every subject arrives as published."""
    if server.config.mappings or server.config.accounts:
        server.apply(ServerConfig())


def tokens() -> st.SearchStrategy[str]:
    """Literal tokens, shrinking to "a". Excluded: ``*`` and ``>`` inside a longer token (``a*``): the
    document forbids those characters in names, and the server treats them as literals (a separate
    finding tracked by ``reference.subjects.is_server_valid_subject``), so no matching rule covers them."""
    return st.text(alphabet=RECOMMENDED, min_size=1, max_size=3) | st.sampled_from(UTF8_TOKENS)


@st.composite
def matching_batches(
    draw: st.DrawFn, *, max_patterns: int = 30, max_subjects: int = 30, max_bulk: int = 400
) -> tuple[list[str], list[str]]:
    """Patterns and subjects built from one small token pool, so they overlap often.

    Patterns: 0-4 pool tokens or ``*``, then optionally ``>`` (forced when nothing else). Subjects: half
    are a drawn pattern with its wildcards filled from the pool (often matching it, and others), half
    are 1-5 pool tokens; up to ``max_bulk`` more of both kinds come from a seeded generator. Duplicate
    subjects are dropped. Shrinks to one pattern, one subject, one token.
    """
    pool = draw(st.lists(tokens(), min_size=1, max_size=5, unique=True), label="pool")
    token = st.sampled_from(pool)

    @st.composite
    def patterns(inner: st.DrawFn) -> str:
        body = inner(st.lists(token | st.just("*"), max_size=4))
        if not body or inner(st.booleans()):
            body.append(">")
        return ".".join(body)

    drawn = draw(st.lists(patterns(), min_size=1, max_size=max_patterns, unique=True), label="patterns")

    @st.composite
    def subjects(inner: st.DrawFn) -> str:
        if inner(st.booleans()):
            parts: list[str] = []
            for part in inner(st.sampled_from(drawn)).split("."):
                if part == "*":
                    parts.append(inner(token))
                elif part == ">":
                    parts += inner(st.lists(token, min_size=1, max_size=2))
                else:
                    parts.append(part)
            return ".".join(parts)
        return ".".join(inner(st.lists(token, min_size=1, max_size=5)))

    published = draw(st.lists(subjects(), min_size=1, max_size=max_subjects), label="subjects")
    # Volume: more subjects of the same two kinds from a seeded generator (cheap to draw; shrinks to none).
    rng = random.Random(draw(st.integers(0, 2**32 - 1), label="bulk_seed"))
    for _ in range(draw(st.integers(0, 4).map(lambda k: k * max_bulk // 4), label="bulk")):
        if rng.random() < 0.5:
            parts = []
            for part in rng.choice(drawn).split("."):
                if part == "*":
                    parts.append(rng.choice(pool))
                elif part == ">":
                    parts += rng.choices(pool, k=rng.randint(1, 2))
                else:
                    parts.append(part)
        else:
            parts = rng.choices(pool, k=rng.randint(1, 5))
        published.append(".".join(parts))
    return drawn, [s for s in dict.fromkeys(published) if not s.startswith(RESERVED_PREFIX)]


@given(batch=matching_batches(), seed=st.integers(0, 2**31))
def test_subscriptions_receive_exactly_the_matching_subjects(
    server: Backend,
    context: RunContext,
    recorder: RecordWriter,
    batch: tuple[list[str], list[str]],
    seed: int,
) -> None:
    """Every (pattern, subject) pair: delivered once iff ``reference.matches`` says it matches."""
    patterns, subjects = batch
    clear_mappings(server)
    began = time.perf_counter()
    observation = observe_subscriptions(server.url, patterns, subjects)
    pairs = max(1, len(patterns) * len(subjects))
    duration_us = int((time.perf_counter() - began) * 1e6 / pairs)
    cases = judge_matching(context, patterns, subjects, observation, seed=seed, duration_us=duration_us)
    recorder.extend(cases)
    assert len(cases) == len(patterns) * len(subjects)
    diverged = [case for case in cases if case.verdict == "diverge"]
    assert not diverged, describe_divergences(diverged)


DOCUMENTED = {
    # "Соответствие одному токену": time.*.east matches time.us.east and time.eu.east.
    ("time.*.east", "time.us.east"): True,
    ("time.*.east", "time.eu.east"): True,
    ("time.*.east", "time.us.east.atlanta"): False,
    # "* cannot match a substring inside a token": time.New*.east. This pattern holds `*` inside a longer
    # token (excluded from the property); only the documented claim, no substring match, is checked.
    ("time.New*.east", "time.NewYork.east"): False,
    # "Соответствие нескольким токенам": time.us.> matches time.us.east and time.us.east.atlanta,
    # time.us.* only time.us.east; `>` matches one or more tokens, so not time.us itself.
    ("time.us.>", "time.us.east"): True,
    ("time.us.>", "time.us.east.atlanta"): True,
    ("time.us.>", "time.us"): False,
    ("time.us.*", "time.us.east"): True,
    ("time.us.*", "time.us.east.atlanta"): False,
    # "Мониторинг и wire taps": a subscriber on > receives every message.
    (">", "time.us"): True,
    (">", "time.eu.east.warsaw"): True,
    # "Комбинирование wildcards": *.*.east.> receives time.us.east.atlanta.
    ("*.*.east.>", "time.us.east.atlanta"): True,
    ("*.*.east.>", "time.eu.east.warsaw"): True,
    ("*.*.east.>", "time.us.east"): False,
}
"""Every (pattern, subject) pair subjects.ru.md states, with its documented outcome."""


def test_documented_wildcard_examples(server: Backend, context: RunContext, recorder: RecordWriter) -> None:
    """The examples of subjects.ru.md ("Иерархии subjects" subjects against the sections' patterns):
    the reference agrees with the document, and the server with the reference, for every pair."""
    for (pattern, subject), documented in DOCUMENTED.items():
        assert matches(pattern, subject) is documented, (pattern, subject)
    patterns = list(dict.fromkeys(pattern for pattern, _ in DOCUMENTED))
    subjects = list(dict.fromkeys(subject for _, subject in DOCUMENTED))
    clear_mappings(server)
    observation = observe_subscriptions(server.url, patterns, subjects)
    cases = judge_matching(context, patterns, subjects, observation)
    recorder.extend(cases)
    assert not observation.failure, observation.failure
    by_pair = {(case.source, case.subject): case for case in cases}
    for (pattern, subject), documented in DOCUMENTED.items():
        case = by_pair[(pattern, subject)]
        assert case.observed == ("match" if documented else "no-match"), describe_divergences([case])
    diverged = [case for case in cases if case.verdict != "agree"]
    assert not diverged, describe_divergences(diverged)
