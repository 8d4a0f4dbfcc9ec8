"""Hypothesis strategies for subjects, mapping sources and destination templates, per release profile.

Every strategy shrinks towards short ASCII tokens, few wildcards and plain `{{wildcard(n)}}` tokens.
Which draws are *valid* is not decided here: the reference says so, and the properties compare that
verdict with the server's. The strategies only steer towards the interesting boundary (mostly valid
templates, with wrong argument counts, unknown names, out-of-range indexes and odd casings mixed in).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers as hypothesis_providers
from hypothesis.internal.constants_ast import Constants

from nats_conformance.fixtures.config import PROBE_SOURCE
from nats_conformance.reference.functions import FUNCTIONS, LEGACY_WILDCARD, canonical_name
from nats_conformance.reference.profiles import ALL_FUNCTIONS, ReleaseProfile


@dataclass(frozen=True, slots=True)
class MappingBatch:
    """Mappings with disjoint sources, each with the subjects to publish through it."""

    mappings: tuple[tuple[str, str], ...]
    subjects: tuple[tuple[str, ...], ...]
    seed: int = 0


RECOMMENDED = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
"""Recommended subject characters ("Subject-Based Messaging" - "Characters allowed and recommended for
subject names",
https://docs.nats.io/nats-concepts/subjects#characters-allowed-and-recommended-for-subject-names)."""

UTF8_SAMPLES = "öäåßéñçøæ日本語дкж€"
"""UTF-8 is allowed in tokens, "at your own risk" (same section)."""

TRICKY_TOKENS = ("$1", "{{x}}", "a*", "*a", "a>", ">a", "$SYS", "_INBOX", "{{wildcard(1)}}", "%", "é")
"""Tokens that look like wildcards or templates; valid in a published subject unless they are exactly
`*` or `>` ("Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects lists only null, space,
`.`, `*`, `>` as forbidden characters). Tokens holding
`*`/`>` are excluded from inputs of transform properties: the document says those characters are not
allowed in names, so what a server does with them is not promised."""

Drawn = TypeVar("Drawn")

PARTITION_COUNTS = (3, 5, 7, 10, 16, 2, 4, 6, 9, 13, 0, 1)
"""Partition counts a `{{partition(n, ...)}}` token is drawn with; shrinks towards 3."""

INTEGER_EDGES = (0, 1, -1, -7, 2**31 - 1, 2**31, -(2**31), 2**32 - 1, 2**32, 2**32 + 1, 2**32 + 3, 2**63)
"""Integer arguments at the edges: zero, one, negatives, the 31- and 32-bit limits and just past them
(``2**32 + 3`` cut to 32 bits is 3, a count that still partitions), and one past 64 bits."""

SEPARATORS = ("-", "_", "--", "x", "ab", "0")
ODD_SEPARATORS = (
    ".",
    " ",
    "$",
    "{{",
    "*",
    ">",
    "é",
    "\t",
    "",
    "a b",
    "-.",
    "..",
    "*>",
    "->-",
    "}}",
    "$1",
    "\x01",
)
"""Split separators of every character class: the forbidden subject characters (dot, space, `*`, `>`),
other whitespace and control characters, template characters, UTF-8, none at all, and several
characters, some holding a dot or a space inside (the reference says which the server takes)."""

MALFORMED_ARGUMENTS = ("", " ", "a", "x1", "1.5", "1e3", "0x10", "+2", " 2 ", "1 1", "-0", "\u0663")
"""Arguments that are not plain integers (empty, blank, letters, a decimal point, an exponent, a hex
prefix, a sign, inner space, a non-ASCII digit) or are spaced; with `INTEGER_EDGES` (negative, past 32
and 64 bits) they make the malformed calls of `malformed_function_tokens`."""

CALLED = tuple(name for name, f in FUNCTIONS.items() if name != LEGACY_WILDCARD and f.scope == "message")
"""Every `{{function(...)}}` the transform engine runs, as the document spells them (the account functions
are drawn only where a family names the account, `function_tokens`)."""

ODD_TOKENS = (
    "*a",
    "a*",
    ">a",
    "a>",
    "$",
    "$x",
    "$1a",
    "{{",
    "}}",
    "{{x",
    "a}}",
    "{{}}",
    "{x}}}",
    "{{x}",
    "{{wildcard(1)}",
    "a-",
    "a--",
    "-",
    "é",
    "\ufffd",
)
"""Literal tokens of odd shapes for sources and destinations: wildcard and template characters at a
token's edge (`{{}}`, `{x}}}`, `{{x}` and `{{wildcard(1)}`: one brace away from a function token), a
separator at its end, and U+FFFD, the character Go decodes a byte that is not UTF-8 to (any Unicode
character but null, space, `.`, `*` and `>` may be in a token, "Subject-Based Messaging"); what each
may be is the reference's to say."""

ODD_LITERALS = ("", " ", "a b", "\t", "a\r", "a\n", "\x01", "a" * 256)
"""Literal tokens of sources and destinations the subjects document forbids or allows only at your own
risk: empty (two dots in a row), whitespace, control characters, and a long token."""


@functools.cache
def below(bound: int) -> st.SearchStrategy[int]:
    """`st.integers(0, bound - 1)`, built once: a composite that builds a strategy on every draw spends
    more time building and validating it than drawing from it (the mapping family's draws, profiled)."""
    return st.integers(0, bound - 1)


def pick(draw: st.DrawFn, items: Sequence[Drawn]) -> Drawn:
    """One of `items`, as `st.sampled_from(items)` draws it (shrinking to the first) but without a
    strategy built for a list known only at draw time."""
    return items[draw(below(len(items)))]


@functools.cache
def sizes(low: int, high: int) -> st.SearchStrategy[int]:
    """A list's size from `low` to `high` in one choice, each size about as often as `st.lists` draws it
    (with one choice per element, whether one more comes); shrinks to `low`."""
    span = high - low
    average = min(max(low * 2, low + 5), (low + high) / 2) - low

    def mean(p: float) -> float:
        return (1 / (1 - p) - 1) * (1 - p**span)

    bounds = (0.0, 1.0)
    for _ in range(50):
        middle = sum(bounds) / 2
        bounds = (middle, bounds[1]) if mean(middle) < average else (bounds[0], middle)
    p = bounds[0]
    shares = [(1 - p) * p**size for size in range(span)] + [p**span]
    return st.sampled_from(
        [low + size for size, share in enumerate(shares) for _ in range(round(100 * share))]
    )


@st.composite
def _normal_or_rare(
    draw: st.DrawFn, normal: st.SearchStrategy[Drawn], rare: st.SearchStrategy[Drawn], one_in: int
) -> Drawn:
    return draw(rare if draw(below(one_in)) == one_in - 1 else normal)


def mostly(
    normal: st.SearchStrategy[Drawn], rare: st.SearchStrategy[Drawn], *, one_in: int
) -> st.SearchStrategy[Drawn]:
    """`normal`, and `rare` about one draw in `one_in`; shrinks towards `normal`. (``st.one_of`` with a
    strategy repeated to weight it does not work: Hypothesis merges equal branches, so
    ``one_of(a, a, a, b)`` draws ``b`` half the time.) The composite is defined once: Hypothesis reads
    a composite function's source when it is defined (about half a millisecond under cProfile, per call)."""
    return _normal_or_rare(normal, rare, one_in)


def weighted(normal: Sequence[Drawn], rare: Sequence[Drawn], *, one_in: int) -> tuple[Drawn, ...]:
    """Values for `st.sampled_from`, which then draws in one choice what `mostly` of two `sampled_from`
    draws in two choices and a composite (Hypothesis's work per choice is most of a mapping unit's
    drawing): a value of `rare` one time in `one_in`, each value of a side as often as the others;
    shrinks to `normal[0]`. The values come in blocks of `one_in - 1` of `normal` and one of `rare`, each
    side in turn, so that any stretch of blocks holds `rare` one time in `one_in`: Hypothesis picks from
    more than 256 values unevenly, the first ones more often."""
    step = one_in - 1
    blocks = math.lcm(len(normal) // math.gcd(len(normal), step), len(rare))
    return tuple(
        value
        for block in range(blocks)
        for value in (
            *(normal[(block * step + i) % len(normal)] for i in range(step)),
            rare[block % len(rare)],
        )
    )


@functools.cache
def tokens(*, max_size: int = 12, utf8: bool = False) -> st.SearchStrategy[str]:
    """Literal tokens of recommended characters (plus UTF-8 letters when `utf8`); shrink to "a"."""
    alphabet = RECOMMENDED + (UTF8_SAMPLES if utf8 else "")
    return st.text(alphabet=alphabet, min_size=1, max_size=max_size)


def subjects(*, min_tokens: int = 1, max_tokens: int = 6, utf8: bool = False) -> st.SearchStrategy[str]:
    """Literal (publishable) subjects."""
    return st.lists(tokens(utf8=utf8), min_size=min_tokens, max_size=max_tokens).map(".".join)


def patterns(*, max_tokens: int = 5) -> st.SearchStrategy[str]:
    """Subscription patterns: tokens, `*` anywhere, `>` only last."""
    body = st.lists(st.one_of(tokens(max_size=3), st.just("*")), min_size=1, max_size=max_tokens)
    return st.tuples(body, st.booleans()).map(lambda parts: ".".join(parts[0] + ([">"] if parts[1] else [])))


ODD: st.SearchStrategy[str] = st.sampled_from(ODD_TOKENS + ODD_LITERALS)
STAR = st.just("*")
SEEDS = st.integers(0, 2**32 - 1)


@st.composite
def token_or(draw: st.DrawFn, other: st.SearchStrategy[str], max_size: int) -> str:
    """`other` half the time, else a literal token of up to `max_size` recommended characters, one in ten
    of those odd (`ODD_TOKENS`, `ODD_LITERALS`); shrinks towards `other`. One choice picks the kind
    (a `one_of` of `other` and a `mostly` of the literal kinds took two, and two composites)."""
    kind = draw(below(20))
    if kind < 10:
        return draw(other)
    if kind < 19:
        return draw(tokens(max_size=max_size))
    return draw(ODD)


@functools.cache
def sources(*, namespace: str | None = None, max_tokens: int = 4) -> st.SearchStrategy[str]:
    """Mapping sources with 0-3 `*` wildcards and an optional final `>`, one token in ten odd (a shape or
    a forbidden character), and one in twenty long (20-200 tokens, a `*` deep inside); `namespace` fixes
    the first token so that sources in one configuration never overlap."""
    return _sources(namespace, st.lists(token_or(STAR, 4), min_size=1, max_size=max_tokens))


@st.composite
def _sources(draw: st.DrawFn, namespace: str | None, short: st.SearchStrategy[list[str]]) -> str:
    """A source: `short`, or one time in twenty a long body (strategies are built once, outside: built
    in a composite, Hypothesis validates them on every draw)."""
    parts = draw(LONG_BODIES if draw(below(20)) == 19 else short)
    head = [namespace] if namespace else []
    return ".".join(head + parts + ([">"] if draw(BOOLEANS) else []))


@st.composite
def long_bodies(draw: st.DrawFn) -> list[str]:
    """20-200 tokens of one or two recommended characters (20 and about 5 more on average, as a
    Hypothesis list of them drew) with one or two `*` at drawn (often deep) positions. The tokens come
    from a generator Hypothesis seeds: drawn one by one, they were a sixth of a mapping unit's choices."""
    rng = random.Random(draw(SEEDS))
    size = 20 + min(180, int(rng.expovariate(1 / 5)))
    parts = ["".join(rng.choices(RECOMMENDED, k=rng.randint(1, 2))) for _ in range(size)]
    for _ in range(1 + draw(below(2))):
        parts[draw(below(size))] = "*"
    return parts


LONG_BODIES = long_bodies()
BOOLEANS = st.booleans()


def wildcard_count(source: str) -> int:
    return source.split(".").count("*")


def _named(name: str, casing_choice: int) -> str:
    """The function name in one of the spellings users write: documented, lower case, upper initial."""
    if casing_choice == 1:
        return name.lower()
    if casing_choice == 2:
        return name[0].upper() + name[1:]
    return name


CASING_WEIGHTS = (0, 0, 0, 1, 2)
CASINGS = st.sampled_from(CASING_WEIGHTS)
"""How a function's name is spelled (`_named`): mostly as documented."""
FORMS = st.sampled_from(
    [(CASING_WEIGHTS[index % 5], index % 21 == 20, index % 8 == 7) for index in range(5 * 21 * 8)]
)
"""How a function token is written, in one choice: its name's casing (`CASINGS`), one argument too few
or too many one time in 21, spaced as users write it (``{{ wildcard(1) }}``) one time in eight; shrinks
to as documented, unspaced, its arguments as they are. Each part repeats with a period of its own (5, 21,
8: coprime, so every combination is there once), which keeps its share where Hypothesis picks unevenly
(the first of more than 256 values more often)."""
PARTITION_CALLS = st.sampled_from(
    [
        (count, keys)
        for count in weighted(PARTITION_COUNTS, INTEGER_EDGES, one_in=4)
        for keys in (1, 2, 2, 3, 0)
    ]
)
"""A `{{partition(n, ...)}}` token's count and its number of keys, in one choice of 240 (Hypothesis picks
evenly up to 256). Counts spread over the range (Hypothesis's integers crowd at the low bound, and a count
of 2 sees only the hash's lowest bit), and one in four at an edge: below one, and past 31 and 32 bits,
are where releases differ."""
SPLIT_SEPARATORS = st.sampled_from(weighted(SEPARATORS, ODD_SEPARATORS, one_in=8))
EDGED_COUNTS = weighted(range(1, 11), INTEGER_EDGES, one_in=8)
RANDOM_ARGUMENTS = st.sampled_from(weighted(EDGED_COUNTS, (0,), one_in=10))
"""Random counts, one in eight at an integer edge; one in ten `random(0)`, whose output the reference
gives (always ``0``)."""
WIDTHS = st.sampled_from(weighted(range(1, 7), INTEGER_EDGES, one_in=8))


def function_tokens(
    source: str, profile: ReleaseProfile, names: Sequence[str] = (), *, account_functions: bool = False
) -> st.SearchStrategy[str]:
    """One `{{function(args)}}` (or `$n`) token for `source`, usually valid for `profile`; `names`
    (canonical, lower case) limits the functions drawn from; with `account_functions`, the release's
    account functions are drawn too (where a family's judge names the account, or expects a refusal)."""
    return _function_tokens(wildcard_count(source), profile, tuple(names), account_functions)


@functools.cache
def _function_tokens(
    count: int, profile: ReleaseProfile, names: tuple[str, ...], account_functions: bool = False
) -> st.SearchStrategy[str]:
    """`function_tokens` for a source of `count` wildcards, built once (building strategies costs more
    than drawing from them)."""
    valid = range(1, max(count, 1) + 1)
    # One index in five is out of range: enough for the refusals, while most tokens reach the transform.
    index = st.sampled_from(weighted(valid, (0, count + 1, -1, *INTEGER_EDGES[3:]), one_in=5))
    scoped = sorted(profile.account_functions) if account_functions else []
    known = [*sorted(profile.mapping_functions | {"left", "right", "random", "partition"}), *scoped, "nosuch"]
    wanted = {name.lower() for name in names}
    choices = [
        name
        for name in ["wildcard", "$", *known]
        if not wanted or name.lower() in wanted or (name == "$" and "$n" in wanted)
    ]
    called = [name for name in (*CALLED, *scoped) if name in choices] or ["wildcard"]
    # One token in twelve is a malformed call, drawn in the same choice as its function.
    well_formed = [(name, False) for name in choices or ["wildcard"]]
    return _function_token(
        st.sampled_from(weighted(well_formed, [(name, True) for name in called], one_in=12)), index
    )


def _malformed_call(draw: st.DrawFn, name: str, index: st.SearchStrategy[int]) -> str:
    """A call of `name` with zero to four arguments, each an index, an integer edge, a malformed argument
    (`MALFORMED_ARGUMENTS`) or a separator: too few, too many, non-integer, negative and huge arguments of
    every function (``{{wildcard()}}``, ``{{split(1)}}``, ``{{left(1,a)}}``,
    ``{{partition(2147483648,1)}}``); most of them the reference rejects."""
    casing = draw(CASINGS)
    return "{{" + _named(name, casing) + "(" + ",".join(draw(_arguments(index))) + ")}}"


@functools.cache
def _arguments(index: st.SearchStrategy[int]) -> st.SearchStrategy[list[str]]:
    """The arguments of `_malformed_call`, built once per `index`."""
    argument = st.one_of(
        index.map(str),
        st.sampled_from(MALFORMED_ARGUMENTS),
        st.sampled_from(INTEGER_EDGES).map(str),
        st.sampled_from(SEPARATORS + ODD_SEPARATORS),
    )
    return st.lists(argument, max_size=4)


def malformed_function_tokens(source: str) -> st.SearchStrategy[str]:
    """Malformed calls of every function for `source` (`_malformed_call`)."""
    count = wildcard_count(source)
    index = st.sampled_from((1, max(count, 1), count + 1, 0, -1))
    return _malformed_calls(st.sampled_from(CALLED), index)


@st.composite
def _malformed_calls(
    draw: st.DrawFn, functions: st.SearchStrategy[str], index: st.SearchStrategy[int]
) -> str:
    return _malformed_call(draw, draw(functions), index)


@st.composite
def _function_token(
    draw: st.DrawFn, functions: st.SearchStrategy[tuple[str, bool]], index: st.SearchStrategy[int]
) -> str:
    """A token calling one of `functions`, malformed when it says so (`_malformed_call`)."""
    name, malformed = draw(functions)
    if malformed:
        return _malformed_call(draw, name, index)
    if name == "$":
        return f"${draw(index)}"
    casing, shortened, spaced = draw(FORMS)
    spelled = _named(canonical_name(name) or name, casing)
    if name in {"wildcard", "nosuch"}:
        args = [str(draw(index))]
    elif FUNCTIONS[name].scope == "account":
        args = []
    elif name == "partition":
        partitions, keys = draw(PARTITION_CALLS)
        args = [str(partitions), *(str(draw(index)) for _ in range(keys))]
    elif name == "split":
        args = [str(draw(index)), draw(SPLIT_SEPARATORS)]
    elif name == "random":
        args = [str(draw(RANDOM_ARGUMENTS))]
    else:
        args = [str(draw(index)), str(draw(WIDTHS))]
    if shortened:
        args = args[:-1] if len(args) > 1 else [*args, "1"]
    if spaced:
        return "{{ " + spelled + "(" + ", ".join(args) + ") }}"
    return "{{" + spelled + "(" + ",".join(args) + ")}}"


SWARM = ("$n", *ALL_FUNCTIONS, "nosuch", *(f.name for f in FUNCTIONS.values() if f.scope == "account"))
"""The function tokens a swarm draws from (the account functions where a family draws them,
`function_tokens`)."""


@functools.cache
def swarms() -> st.SearchStrategy[list[str]]:
    """A swarm: one to three of the function tokens a destination may use (``$n``, every function, an
    unknown one), so that a unit draws a few functions in depth, their edges included, rather than all
    of them thinly."""
    return st.lists(st.sampled_from(SWARM), min_size=1, max_size=3, unique=True)


def destination_templates(
    source: str, profile: ReleaseProfile, names: Sequence[str] = (), *, account_functions: bool = False
) -> st.SearchStrategy[str]:
    """A destination for `source`: literal tokens and function tokens (of `names` when given, then at
    least one of them, so that a draw focused on some functions always uses one), `>` last when the
    source has it; `account_functions` as for `function_tokens`."""
    count, tail = wildcard_count(source), source.endswith(">")
    return _destination_templates(count, tail, profile, tuple(names), account_functions)


@functools.cache
def _destination_templates(
    count: int, tail: bool, profile: ReleaseProfile, names: tuple[str, ...], account_functions: bool = False
) -> st.SearchStrategy[str]:
    """`destination_templates` for a source of `count` wildcards (`tail`: ending in `>`), built once."""
    function = _function_tokens(count, profile, names, account_functions)
    size = (0, 3) if names else (1, 4)
    parts = st.lists(token_or(function, 5), min_size=size[0], max_size=size[1])
    return _destination_template(parts, function if names else None, tail)


@st.composite
def _destination_template(
    draw: st.DrawFn, tokens: st.SearchStrategy[list[str]], required: st.SearchStrategy[str] | None, tail: bool
) -> str:
    """Function tokens and literal tokens of up to five characters (`token_or`), then one more function
    token (`required`) when the destination focuses on some functions."""
    parts = draw(tokens)
    if required is not None:
        parts.insert(draw(below(len(parts) + 1)), draw(required))
    if tail and draw(BOOLEANS):
        parts.append(">")
    return ".".join(parts)


ODD_SOURCES = ("", "v..a", "v.a.", ".v", "v.>.a", "v.*.>", "v.**", "v.>>")
"""Mapping sources of the validation family that are no subjects or hold odd wildcards: empty, an empty
token, `>` not last, wildcard characters inside a token. (A source of `>` alone would also map the reload
probe's subject, which every configuration holds, so no family that installs mappings draws it.)"""


@st.composite
def odd_destinations(draw: st.DrawFn, source: str, profile: ReleaseProfile) -> str:
    """Destinations at the edges of the destination rules for `source`: `>` alone, a `*` token, `>`
    where the source has none or missing where it has one, an empty token, a malformed call alone or
    among literal tokens, and an out-of-range `{{wildcard(n)}}`."""
    count = wildcard_count(source)
    tail = source.endswith(">")
    malformed = draw(malformed_function_tokens(source))
    template = draw(destination_templates(source, profile))
    body = template.removesuffix(".>") if template.endswith(".>") else template
    shapes = (
        ">",
        "*",
        f"{body}.*",
        f"{body}.>" if not tail else body,
        f"{body}..x",
        malformed,
        f"x.{malformed}" + (".>" if tail else ""),
        "{{wildcard(" + str(count + 1) + ")}}" + (".>" if tail else ""),
        "{{ wildcard() }}",
        "{{random(0)}}" + (".>" if tail else ""),
    )
    return draw(st.sampled_from(shapes))


def bulk_subjects(source: str, rng: random.Random, count: int, *, pool: Sequence[str]) -> list[str]:
    """`count` subjects matching `source`, fast: `*` takes a token from `pool`, `>` one to three."""
    parts = source.split(".")
    fixed = [None if part in ("*", ">") else part for part in parts]
    tail = parts[-1] == ">"
    choice = rng.choice
    result: list[str] = []
    for _ in range(count):
        tokens_out = [part if part is not None else choice(pool) for part in fixed]
        if tail:
            tokens_out[-1] = ".".join(choice(pool) for _ in range(rng.randint(1, 3)))
        result.append(".".join(tokens_out))
    return result


def with_wildcard_token(subject: str, source: str, rng: random.Random) -> str | None:
    """`subject` (one `source` matches) with the token at one of `source`'s wildcard positions (a ``*``,
    or any under a final ``>``) made ``*``: a subject a publisher must not send ("Subject-Based
    Messaging"), which a connection that is not pedantic still may; None when `source` has no wildcard."""
    parts, tokens = source.split("."), subject.split(".")
    positions = [i for i, part in enumerate(parts) if part == "*"]
    if parts[-1] == ">":
        positions += range(len(parts) - 1, len(tokens))
    if not positions:
        return None
    tokens[rng.choice(positions)] = "*"
    return ".".join(tokens)


DENY_PREFIX: Final = "d"
"""The first token of every deny list entry (`deny_entries`), so that no deny list holds back the messages
that pace an observation (`suites.harness`)."""
DENY_TOKENS: Final = ("a", "b", "*")
NOT_SUBJECT_TOKENS: Final = ("", ">", " ")
"""Tokens that make a deny list entry no subject: empty (two dots in a row), `>` (unless it ends the
entry), and a space ("Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects: tokens are not
empty, `>` comes last, no space); a leaf node refuses such a list (`reference.leafnode`)."""
DENIED_FUNCTIONS: Final = ("account-hash", "account-hash-leaf-remote")
"""The account functions a leaf node remote's deny list resolves (`reference.leafnode`)."""


@st.composite
def deny_entries(draw: st.DrawFn, profile: ReleaseProfile) -> tuple[str, ...] | None:
    """A leaf node remote's deny list: None one time in four (the key left out), else up to four entries
    (one in three lists exactly one: the edge of a list's length), each `DENY_PREFIX` and one to three
    tokens, then `>` one time in four. A token is one of
    `DENY_TOKENS`, or where `profile` has account functions, one time in two a call of one
    (`DENIED_FUNCTIONS` as documented; one in eight any form `function_tokens` draws, which the leaf node
    may refuse, one in eight glued to a letter, which makes it a literal token). One token in 48 is one of
    `NOT_SUBJECT_TOKENS` instead, so that a list the subject check alone refuses is drawn."""
    if draw(below(4)) == 0:
        return None
    scoped = bool(profile.account_functions)
    entries = []
    for _ in range(1 if draw(below(3)) == 0 else draw(sizes(0, 4))):
        parts = [DENY_PREFIX]
        for _ in range(draw(sizes(1, 3))):
            kind = draw(below(16)) if scoped else 0
            if draw(below(48)) == 0:
                parts.append(pick(draw, NOT_SUBJECT_TOKENS))
            elif kind < 8:
                parts.append(pick(draw, DENY_TOKENS))
            elif kind == 14:
                names = sorted(profile.account_functions)
                parts.append(draw(function_tokens(DENY_PREFIX, profile, names, account_functions=True)))
            else:
                call = "{{" + pick(draw, DENIED_FUNCTIONS) + "()}}"
                parts.append(f"a{call}" if kind == 15 else call)
        if draw(below(4)) == 0:
            parts.append(">")
        entries.append(".".join(parts))
    return tuple(entries)


@st.composite
def subjects_matching(draw: st.DrawFn, source: str, *, utf8: bool = False) -> str:
    """A subject that `source` matches (shrinks to one-token substitutions)."""
    out: list[str] = []
    for part in source.split("."):
        if part == "*":
            out.append(draw(tokens(utf8=utf8)))
        elif part == ">":
            out.extend(draw(st.lists(tokens(utf8=utf8), min_size=1, max_size=3)))
        else:
            out.append(part)
    return ".".join(out)


@st.composite
def mapping_batches(
    draw: st.DrawFn,
    profile: ReleaseProfile,
    *,
    max_mappings: int = 6,
    min_mappings: int = 1,
    max_subjects: int = 4,
    utf8: bool = False,
    names: Sequence[str] = (),
    account_functions: bool = False,
) -> MappingBatch:
    """Mappings whose sources never overlap (each starts with its own literal token `mN`), each with
    one to `max_subjects` subjects that match it (none when 0: the caller brings its own); `names`
    limits the destinations' functions; `account_functions` as for `function_tokens`.
    Shrinks to `min_mappings` mappings with one subject."""
    count = draw(st.integers(min_mappings, max_mappings))
    mappings: list[tuple[str, str]] = []
    subject_lists: list[tuple[str, ...]] = []
    for index in range(count):
        source = draw(sources(namespace=f"m{index}"))
        templates = destination_templates(source, profile, names, account_functions=account_functions)
        mappings.append((source, draw(templates)))
        if max_subjects:
            matching = st.lists(subjects_matching(source, utf8=utf8), min_size=1, max_size=max_subjects)
            subject_lists.append(tuple(draw(matching)))
        else:
            subject_lists.append(())
    return MappingBatch(tuple(mappings), tuple(subject_lists), seed=draw(st.integers(0, 2**31)))


UTF8_TOKENS = ("Malmö", "日本", "ж")
"""UTF-8 tokens, allowed "at your own risk" ("Subject-Based Messaging" - "Characters allowed and
recommended for subject names",
https://docs.nats.io/nats-concepts/subjects#characters-allowed-and-recommended-for-subject-names);
drawn now and then."""

RESERVED_PREFIX = PROBE_SOURCE.split(".")[0][:4]
"""``_nc_``: every server configuration maps the reload probe ``_nc_probe.genN``; no generated subject
may start with the prefix, so no probe mapping ever rewrites one."""


NEAR_MISS_TOKENS: Final = (">a", "*a", "a>", "a*")
"""Literal tokens one character away from a wildcard token, for `matching_tokens`."""


def matching_tokens() -> st.SearchStrategy[str]:
    """Literal tokens, shrinking to "a"; one pool token in about twenty is a near miss of a wildcard
    (`NEAR_MISS_TOKENS`: ``>a``, ``a*``). The subjects document forbids ``*`` and ``>`` in names and says
    nothing of how such a token matches; every release observed takes it as a literal token, matched
    whole (the server's subject validity, ``reference.subjects.is_server_valid_subject``, accepts it),
    and so does the reference here. They are drawn because the server's cache compares a cached subject
    with a new subscription character by character (``matchLiteral``), where a token starting with
    ``>`` is one check away from a full wildcard (mutant 1581 of 2.14.10 survived without them)."""
    return st.one_of(
        st.text(alphabet=RECOMMENDED, min_size=1, max_size=3),
        st.sampled_from(UTF8_TOKENS),
        st.sampled_from(NEAR_MISS_TOKENS),
    )


MATCHING_POOL: Final = st.lists(matching_tokens(), min_size=1, max_size=5, unique=True)
"""The token pool of one `matching_batches` draw, built once."""


def pool_pattern(draw: st.DrawFn, pool: Sequence[str]) -> str:
    """A pattern of `matching_batches`: 0-4 tokens, each a pool token or ``*`` evenly (one choice), then
    optionally ``>`` (forced when nothing else)."""
    tokens = len(pool)
    picks = [draw(below(2 * tokens)) for _ in range(draw(sizes(0, 4)))]
    body = [pool[index] if index < tokens else "*" for index in picks]
    if not body or draw(BOOLEANS):
        body.append(">")
    return ".".join(body)


def pool_subject(draw: st.DrawFn, pool: Sequence[str], patterns: Sequence[str]) -> str:
    """A subject of `matching_batches`: one of `patterns` with its wildcards filled with pool tokens, or
    1-5 pool tokens."""
    if draw(BOOLEANS):
        parts: list[str] = []
        for part in pick(draw, patterns).split("."):
            if part == "*":
                parts.append(pick(draw, pool))
            elif part == ">":
                parts += [pick(draw, pool) for _ in range(draw(sizes(1, 2)))]
            else:
                parts.append(part)
        return ".".join(parts)
    return ".".join(pick(draw, pool) for _ in range(draw(sizes(1, 5))))


PEDANTIC_TOKENS: Final = ("", "*", ">")
"""Tokens a subject of `pedantic_subjects` is given: the wildcards and an empty token, which a pedantic
connection may not publish (the pool's own tokens hold the near misses, `*a`, which it may)."""


@st.composite
def pedantic_subjects(draw: st.DrawFn, subjects: Sequence[str]) -> tuple[str, ...]:
    """One to three of `subjects`, three in four with one token made one of `PEDANTIC_TOKENS` (a subject
    that would be empty is left out); shrinks towards an empty token."""
    chosen = []
    for _ in range(1 + draw(below(3))):
        tokens = pick(draw, subjects).split(".")
        if draw(below(4)) != 3:
            tokens[draw(below(len(tokens)))] = pick(draw, PEDANTIC_TOKENS)
        chosen.append(".".join(tokens))
    return tuple(subject for subject in dict.fromkeys(chosen) if subject)


@st.composite
def hollow_subjects(draw: st.DrawFn, subjects: Sequence[str]) -> tuple[str, ...]:
    """One or two of `subjects` with an empty token put before, between or after their tokens (``.a.b``,
    ``a..b``, ``a.b.``): strings a connection that is not pedantic may publish, which are no subject
    ("Subject-Based Messaging"); shrinks towards an empty first token."""
    chosen = []
    for _ in range(1 + draw(below(2))):
        tokens = pick(draw, subjects).split(".")
        tokens.insert(draw(below(len(tokens) + 1)), "")
        chosen.append(".".join(tokens))
    return tuple(dict.fromkeys(chosen))


@st.composite
def matching_batches(
    draw: st.DrawFn, *, max_patterns: int = 30, max_subjects: int = 30, max_bulk: int = 400
) -> tuple[list[str], list[str]]:
    """Patterns and subjects built from one small token pool, so they overlap often.

    Patterns: 0-4 pool tokens or ``*``, then optionally ``>`` (forced when nothing else); drawn again,
    a pattern is kept once. Subjects: half are a drawn pattern with its wildcards filled from the pool
    (often matching it, and others), half are 1-5 pool tokens; up to ``max_bulk`` more of both kinds come
    from a seeded generator. Duplicate subjects are dropped. Shrinks to one pattern, one subject, one
    token.
    """
    pool = draw(MATCHING_POOL, label="pool")
    drawn = list(dict.fromkeys(pool_pattern(draw, pool) for _ in range(draw(sizes(1, max_patterns)))))
    published = [pool_subject(draw, pool, drawn) for _ in range(draw(sizes(1, max_subjects)))]
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


def run_settings(examples: int, last: Phase) -> settings:
    """Settings of a run that draws `examples` with nothing saved or timed, then goes on to `last`: the
    target phase of a campaign (which records, never fails) or the shrink phase of a minimisation."""
    return settings(
        max_examples=examples,
        database=None,
        phases=[Phase.generate, last],
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
    )


def run_batches(
    draw_batch: Callable[[st.DataObject], Drawn],
    examples: int,
    seed: int,
    on_batch: Callable[[Drawn], float],
) -> None:
    """Run up to `examples` Hypothesis-generated batches without shrinking (a campaign records, never
    fails). `on_batch` returns the batch's score, which Hypothesis's target phase climbs (`target()`:
    later draws mutate the best-scoring batches), and raises `Enough` to end the run early. Any other
    error it raises (a full disk) ends the run and is raised as it is. Either way the run ends at once
    (`_RunEnded`): neither `draw_batch` nor `on_batch` is called again.

    An exception a test raises is a failure Hypothesis goes on from: it confirms it once, and a hill
    climb of the target phase that is under way runs to its end, every step drawing a whole batch only
    for the test to fail again. For a family whose units are large (the partition family's mapping
    batches) that climb took minutes after the budget was spent, with no unit left to run (mutant 868
    of 2.14.10, seed 1). Hypothesis treats what is neither an `Exception` nor its own control flow as
    fatal and stops its engine on it, which is what ends a run here."""

    @run_settings(examples, Phase.target)
    @given(data=st.data())
    def body(data: st.DataObject) -> None:
        batch = draw_batch(data)
        try:
            score = on_batch(batch)
        except Exception as error:
            raise _RunEnded(error) from error
        if score:  # a constant 0 would still send the target phase mutating one batch over and over
            target(score, label="score")

    try:
        with seeded_generation():
            hypothesis_seed(seed)(body)()
    except _RunEnded as ended:
        if not isinstance(ended.error, Enough):
            raise ended.error from None


def runs_of_units(
    strategy: st.SearchStrategy[Drawn],
    budget: int,
    rng: random.Random,
    on_units: Callable[[list[Drawn]], float],
    drawn: Callable[[], int],
    *,
    after_run: Callable[[], object] = lambda: None,
) -> None:
    """Runs of `run_batches`, one unit of `strategy` per example and each run seeded from `rng`, until
    `drawn()` distinct units reach `budget` or a run draws nothing new (Hypothesis draws some units again,
    so a run of N examples draws fewer than N); `after_run` follows each run."""
    while drawn() < budget:
        before = drawn()
        run_batches(lambda data: [data.draw(strategy)], budget - before, rng.randrange(2**32), on_units)
        after_run()
        if drawn() == before:
            break


class Enough(Exception):
    """Raised by a batch callback once its budget is spent: ends `run_batches`."""


class _RunEnded(BaseException):
    """What `run_batches` raises through Hypothesis to stop its engine: `error` ended the run."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@contextmanager
def seeded_generation() -> Iterator[None]:
    """Generation that depends on the seed alone. Hypothesis mixes literals from every local module
    loaded in the process into its draws, so the same seed drew different cases in a pytest session
    than on the command line; inside this block that pool is empty, and a seed names the same cases in
    any process."""
    collect = hypothesis_providers._get_local_constants
    hypothesis_providers._get_local_constants = Constants
    hypothesis_providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        hypothesis_providers._get_local_constants = collect
        hypothesis_providers.CONSTANTS_CACHE.cache.clear()
