"""Compiled subject transforms: ``compile_transform(source, destination, profile)`` -> ``Transform``.

Rules from "Subject Mapping and Partitioning" (https://docs.nats.io/nats-concepts/subject_mapping:
"Subject Token Reordering", "Splitting Tokens", "Slicing Tokens", "Deterministic Subject token
Partitioning"), made exact per release by
``reference.profiles`` (observed behaviour where the document is silent). All parsing and validation
happen once in :func:`compile_transform`; :meth:`Transform.apply` only checks the subject against the
source, indexes tokens and joins.

Validation order follows the server: source subject; destination subject and function tokens (the
mapping validator, 2.9+); then each destination token in turn (argument errors before index errors of
later tokens); then the wildcard-usage rule.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from nats_conformance.reference import functions as fn
from nats_conformance.reference.errors import (
    FunctionNotAvailableError,
    InvalidDestinationError,
    InvalidSourceError,
    SubjectMismatchError,
    WildcardIndexOutOfRangeError,
    WildcardsNotUsedError,
)
from nats_conformance.reference.profiles import NEWEST, ReleaseProfile
from nats_conformance.reference.subjects import (
    FULL_WILDCARD,
    PARTIAL_WILDCARD,
    is_engine_valid_subject,
    is_message_subject,
    is_server_valid_subject,
)
from nats_conformance.reference.templates import (
    FunctionNode,
    LiteralNode,
    Node,
    account_function,
    find_function,
    looks_like_function,
    parse_token,
    resolve_account_functions,
    unknown_function_error,
)

__all__ = ["NOT_DELIVERED", "Transform", "compile_transform"]

NOT_DELIVERED: Final = ""
"""What a subscriber receives of a message whose mapped subject is not a subject (``Transform.delivers``):
nothing."""

Part = Callable[[list[str]], str]
_WHITESPACE: Final = frozenset(" \t\n\r\f")
_FNV_BASIS: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193
_MASK: Final = 0xFFFFFFFF
_RANDOM_MARK: Final = "\x00random\x00"
_NOT_ONE_TOKEN: Final = frozenset(("", FULL_WILDCARD))
"""Subject tokens a source ``*`` does not match: a ``*`` stands for exactly one token (docs.nats.io,
"Subject-Based Messaging", wildcards), and neither the empty string nor ``>`` is one (observed on
2.9.25 and 2.14.5: ``foo.>`` published is not mapped by ``foo.*``; a published ``*`` is)."""


_NOT_LITERAL: Final = frozenset(("", PARTIAL_WILDCARD, FULL_WILDCARD))
"""Tokens of no literal subject: the bare engine maps only those (``isValidLiteralSubject`` in
nats-server's ``server/sublist.go``, https://github.com/nats-io/nats-server)."""


@dataclass(frozen=True, slots=True)
class _RandomSlot:
    position: int
    count: int


@dataclass(frozen=True, slots=True, eq=False)
class Transform:
    """A compiled mapping from ``source`` to ``destination`` under one release's rules.

    Attributes:
        source: the source subject (may hold ``*`` and a final ``>``).
        destination: the destination template as written.
        profile: the release whose rules compiled it.
        functions: canonical names of the functions used, first use first (``$n`` counts as ``wildcard``).
        is_random: the output depends on a random draw (``{{random(n)}}``).
    """

    source: str
    destination: str
    profile: ReleaseProfile
    functions: tuple[str, ...]
    is_random: bool
    _length: int = field(repr=False)
    _open_ended: bool = field(repr=False)
    _checks: tuple[tuple[int, str], ...] = field(repr=False)
    _wildcards: tuple[int, ...] = field(repr=False)
    _randoms: tuple[_RandomSlot, ...] = field(repr=False)
    _apply: Callable[[str, _random.Random | None], str] = field(repr=False)
    account: str | None = None
    """The account whose mapping this is (``compile_transform``'s ``account``), to compile it again."""

    def __repr__(self) -> str:
        return f"compile_transform({self.source!r}, {self.destination!r}, {self.profile!r})"

    def matches(self, subject: str) -> bool:
        """True iff ``subject`` matches the source (so :meth:`apply` maps it): literal tokens equal, one
        token (not empty, not ``>``) at each ``*``, one or more non-empty tokens at a final ``>``."""
        tokens = subject.split(".")
        n = len(tokens)
        if n <= self._length if self._open_ended else n != self._length:
            return False
        if any(tokens[i] in _NOT_ONE_TOKEN for i in self._wildcards):
            return False
        if self._open_ended and "" in tokens[self._length :]:
            return False
        return all(tokens[i] == literal for i, literal in self._checks)

    def apply(self, subject: str, rng: _random.Random | None = None) -> str:
        """The subject a message published on ``subject`` is mapped to.

        Args:
            subject: a literal subject matching the source.
            rng: the random source for ``{{random(n)}}`` (default: the ``random`` module).

        Raises:
            SubjectMismatchError: ``subject`` does not match the source (a ``ValueError``).
        """
        return self._apply(subject, rng)

    def delivers(self, subject: str) -> str:
        """The subject a message published on ``subject`` reaches subscribers on: :meth:`apply`'s output
        when it is a subject, else :data:`NOT_DELIVERED` (no subscriber receives the message).

        The documents say what each function writes ("Subject Mapping and Partitioning",
        https://docs.nats.io/nats-concepts/subject_mapping) and that a subject is non-empty tokens
        separated by dots with no wildcard token in a publication ("Subject-Based Messaging",
        https://docs.nats.io/nats-concepts/subjects); a transform whose output is not one, such as a
        ``split`` that leaves an empty token (``--a`` -> ``.a``), has written no subject, and since every
        subscription is a subject no subscriber's matches it (:func:`~reference.subjects.is_message_subject`).
        The documents do not say whether the server then drops the message or answers an error to the
        publisher; only the subscribers' side is stated, and judged.

        Raises:
            SubjectMismatchError: ``subject`` does not match the source.
        """
        written = self._apply(subject, None)
        return written if is_message_subject(written) else NOT_DELIVERED

    def apply_all(self, subjects: Sequence[str]) -> list[str]:
        """:meth:`apply` of every subject, in order (the fast path for volume runs)."""
        run = self._apply
        return [run(subject, None) for subject in subjects]

    def accepts(self, subject: str, observed: str) -> bool:
        """True iff ``observed`` is a possible output of :meth:`apply` for ``subject`` (any random draw)."""
        if not self.is_random:
            return self.apply(subject) == observed
        marked = self.apply(subject, rng=_MarkingRandom())  # type: ignore[arg-type]
        expected, got = marked.split("."), observed.split(".")
        if len(expected) != len(got):
            return False
        slots = iter([slot for slot in self._randoms if slot.count])  # random(0) is "0": no draw, no mark
        for want, have in zip(expected, got, strict=True):
            if want == _RANDOM_MARK:
                count = abs(next(slots).count)
                if not (have.isdigit() and have.isascii() and str(int(have)) == have):
                    return False
                if int(have) >= max(count, 1):
                    return False
            elif want != have:
                return False
        return True


class _MarkingRandom:
    """A stand-in rng whose draws mark the random tokens for :meth:`Transform.accepts`."""

    def randrange(self, _stop: int) -> str:
        return _RANDOM_MARK


@dataclass(frozen=True, slots=True)
class _HashSpec:
    """A partition token: FNV-1a of the selected tokens' bytes concatenated (the whole subject when
    ``positions`` is empty), modulo ``modulus``, the number of partitions as written (at least 1).

    The documents give the range (0 to the number of partitions - 1) and tables that FNV-1a reproduces.
    A server that cuts the count to 32 bits diverges for counts of 2**32 and more (expectations.toml).
    """

    positions: tuple[int, ...]
    modulus: int


def _token_part(node: FunctionNode, position: int) -> Part:  # not for wildcard
    """The closure computing one destination token from the source token at ``position``."""
    number, text = node.number, node.text
    name = node.name
    if name == "split":
        return lambda tokens: fn.split(tokens[position], text)
    single: dict[str, Callable[[str, int], str]] = {
        "splitFromLeft": fn.split_from_left,
        "splitFromRight": fn.split_from_right,
        "sliceFromLeft": fn.slice_from_left,
        "sliceFromRight": fn.slice_from_right,
        "left": fn.left,
        "right": fn.right,
    }
    apply_one = single[name]
    return lambda tokens: apply_one(tokens[position], number)


def _check_destination(destination: str, profile: ReleaseProfile, engine_only: bool) -> None:
    """The mapping validator's checks on the destination text (before the transform is built)."""
    if not engine_only and not profile.spaces_in_functions:
        if not is_server_valid_subject(destination):
            raise InvalidDestinationError(f"destination {destination!r} is not a valid subject")
        return
    full_wildcard_seen = False
    for token in destination.split("."):
        if not token or full_wildcard_seen:
            raise InvalidDestinationError(f"destination {destination!r} has an empty token or '>' not last")
        if engine_only:
            full_wildcard_seen = token == FULL_WILDCARD
            continue
        if looks_like_function(token):
            if account_function(token, profile) is not None:
                raise FunctionNotAvailableError(f"{token}: an account function, not resolved here")
            if find_function(token, profile.mapping_functions, profile.casing) is None:
                raise unknown_function_error(token, profile.mapping_functions)
            continue
        if token == FULL_WILDCARD:
            full_wildcard_seen = True
        elif not _WHITESPACE.isdisjoint(token):
            raise InvalidDestinationError(f"destination token {token!r} contains whitespace")


def compile_transform(
    source: str,
    destination: str,
    profile: ReleaseProfile | None = None,
    *,
    engine_only: bool = False,
    account: str | None = None,
    imported: str | None = None,
) -> Transform:
    """Validate and compile the mapping ``source`` -> ``destination`` under ``profile`` (default: newest).

    Args:
        source: the mapping source subject (``*`` wildcards, optional final ``>``).
        destination: the destination template.
        profile: the release whose rules apply; ``None`` means :data:`reference.profiles.NEWEST`.
        engine_only: model the bare transform engine (what ``nats server mapping`` runs) instead of an
            account mapping: no mapping validator (``left``/``right`` are accepted from 2.10.16, and
            whitespace in the source and destination tokens), and the engine's own subject checks
            (:func:`~reference.subjects.is_engine_valid_subject` for the source; a subject with an
            empty or a wildcard token matches nothing; ``>`` to ``>`` maps any subject to itself).
        account: the name of the account whose mapping this is, which its account functions stand for
            (``{{account-hash()}}``, from 2.14.10 and 2.15.3); without it they are refused, as where
            the transform engine meets them. ``source`` and ``destination`` stay as written.
        imported: for an import of `account`, the account it imports from, which
            ``{{account-hash-import()}}`` stands for (`resolve_account_functions`).

    Raises:
        MappingError: a subclass naming the cause (its ``kind``).
    """
    p = NEWEST if profile is None else profile
    written_source, written_destination = source, destination
    if not (is_engine_valid_subject if engine_only else is_server_valid_subject)(source):
        raise InvalidSourceError(f"source {source!r} is not a valid subject")
    resolved: tuple[str, ...] = ()
    if account is not None and p.account_functions and not engine_only:
        # the configuration parser checks the source as written, then the account resolves it
        source, in_source = resolve_account_functions(source, p, account, imported)
        destination, in_destination = resolve_account_functions(destination, p, account, imported)
        resolved = (*in_source, *in_destination)
    source_tokens = _SourceTokens.of(source)
    if destination == "":
        raise InvalidDestinationError("destination is empty")
    if engine_only and source == destination == FULL_WILDCARD:
        compiled = _IDENTITY
    else:
        compiled = _compile_destination(source, destination, source_tokens, p, engine_only)
    return Transform(
        source=written_source,
        destination=written_destination,
        account=account,
        profile=p,
        functions=tuple(dict.fromkeys((*resolved, *compiled.functions))),
        is_random=bool(compiled.randoms),
        _length=source_tokens.length,
        _open_ended=source_tokens.open_ended,
        _checks=source_tokens.checks,
        _wildcards=source_tokens.wildcards,
        _randoms=compiled.randoms,
        _apply=compiled.apply,
    )


@dataclass(frozen=True, slots=True)
class _SourceTokens:
    """A source subject as matching it needs: its ``length`` in tokens before a final ``>`` (when
    ``open_ended``) or in all, its literal tokens to check (position, token), and the positions of its
    ``*`` wildcards, in order (``$n`` and ``wildcard(n)`` name the n-th)."""

    length: int
    open_ended: bool
    checks: tuple[tuple[int, str], ...]
    wildcards: tuple[int, ...]

    @classmethod
    def of(cls, source: str) -> _SourceTokens:
        tokens = source.split(".")
        open_ended = tokens[-1] == FULL_WILDCARD
        return cls(
            length=len(tokens) - 1 if open_ended else len(tokens),
            open_ended=open_ended,
            checks=tuple((i, t) for i, t in enumerate(tokens) if t not in (PARTIAL_WILDCARD, FULL_WILDCARD)),
            wildcards=tuple(i for i, t in enumerate(tokens) if t == PARTIAL_WILDCARD),
        )


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A destination compiled against its source: the functions it uses (first use first), its random
    tokens, and the generated function writing the destination of a subject."""

    functions: tuple[str, ...]
    randoms: tuple[_RandomSlot, ...]
    apply: Callable[[str, _random.Random | None], str]


def _identity(subject: str, _rng: _random.Random | None = None) -> str:
    """The bare engine's ``>`` to ``>``: any subject to itself."""
    return subject


_IDENTITY: Final = _Compiled((), (), _identity)


def _compile_destination(
    source: str, destination: str, source_tokens: _SourceTokens, p: ReleaseProfile, engine_only: bool
) -> _Compiled:
    """The destination checked as the server checks it (`_check_destination`; no ``*`` token; ``>``
    ends both source and destination or neither), then parsed (`_destination_nodes`) and compiled
    (`_assemble`).

    Raises:
        MappingError: the first check the destination fails.
    """
    _check_destination(destination, p, engine_only)
    dtokens = destination.split(".")
    if PARTIAL_WILDCARD in dtokens:
        raise InvalidDestinationError(f"destination {destination!r} contains a '*' wildcard token")
    if source_tokens.open_ended != (dtokens[-1] == FULL_WILDCARD):
        raise InvalidDestinationError(
            f"'>' must end both source and destination or neither ({source!r} -> {destination!r})"
        )
    nodes = _destination_nodes(source, destination, len(source_tokens.wildcards), p)
    return _assemble(source, nodes, source_tokens, literal_only=engine_only)


def _destination_nodes(source: str, destination: str, wildcards: int, p: ReleaseProfile) -> list[Node]:
    """The destination's tokens parsed (`parse_token`), each function's wildcard indexes within the
    source's `wildcards`, and the wildcards used as the release's rule asks (`wildcard_usage`).

    Raises:
        MappingError: a token that does not parse, an index out of range, an unused wildcard.
    """
    nodes: list[Node] = []
    placeholders = 0
    listed = 0
    for token in destination.split("."):
        node = parse_token(token, p)
        if isinstance(node, FunctionNode):
            for index in node.indexes:
                if not 1 <= index <= wildcards:
                    raise WildcardIndexOutOfRangeError(
                        f"wildcard index {index} out of range in {token}: source has {wildcards} '*'"
                    )
            placeholders += 1
            listed += len(node.indexes)
        nodes.append(node)
    rule = p.wildcard_usage
    if (rule == "exact-count" and placeholders != wildcards) or (
        (rule == "per-token" and placeholders < wildcards) or (rule == "per-index" and listed < wildcards)
    ):
        raise WildcardsNotUsedError(f"not every '*' of {source!r} is used in {destination!r}")
    return nodes


def _assemble(
    source: str, nodes: list[Node], source_tokens: _SourceTokens, *, literal_only: bool
) -> _Compiled:
    """Turn parsed nodes into destination slots (literal, token position, hash, closure, random) and
    generate the function writing them (`_generate`)."""
    wildcards = source_tokens.wildcards
    slots: list[_Slot] = []
    randoms: list[_RandomSlot] = []
    names: dict[str, None] = {}
    tail = -1
    for index, node in enumerate(nodes):
        if isinstance(node, LiteralNode):
            if node.text == FULL_WILDCARD and index == len(nodes) - 1 and source_tokens.open_ended:
                tail = source_tokens.length
                break
            slots.append(_Literal(node.text))
            continue
        names[node.name] = None
        if node.name == "random":
            randoms.append(_RandomSlot(index, node.number))
            slots.append(randoms[-1])
        elif node.name == "partition":
            slots.append(_HashSpec(tuple(wildcards[i - 1] for i in node.indexes), node.number))
        elif node.name == "wildcard":
            slots.append(wildcards[node.indexes[0] - 1])
        else:
            slots.append(_token_part(node, wildcards[node.indexes[0] - 1]))
    run = _generate(
        source,
        source_tokens.length,
        source_tokens.open_ended,
        source_tokens.checks,
        wildcards,
        slots=slots,
        tail=tail,
        literal_only=literal_only,
    )
    return _Compiled(tuple(names), tuple(randoms), run)


@dataclass(frozen=True, slots=True)
class _Literal:
    text: str


_Slot = _Literal | int | _HashSpec | _RandomSlot | Part


def _mismatch_error(source: str) -> Callable[[str], SubjectMismatchError]:
    def error(subject: str) -> SubjectMismatchError:
        return SubjectMismatchError(f"subject {subject!r} does not match source {source!r}")

    return error


_MEMO_SIZE: Final = 1 << 16
"""At most how many first tokens a partition slot keeps the hash state of (bulk subjects share tokens)."""


def _hash_lines(n: int, positions: Sequence[int]) -> list[str]:
    """Generated lines setting ``h`` to FNV-1a of the selected tokens (the whole subject without any).

    The hash runs over bytes, so the state after the first token is a function of that token alone: it is
    kept in ``_h{n}``. The low 32 bits of each product depend only on the low 32 bits of ``h``, so the
    mask is taken once per token.
    """
    if not positions:
        return [f"    h = {_FNV_BASIS}", *_fnv_lines("subject")]
    first, rest = f"t[{int(positions[0])}]", "+".join(f"t[{int(i)}]" for i in positions[1:])
    lines = [
        f"    h = _h{n}.get({first})",
        "    if h is None:",
        f"        h = {_FNV_BASIS}",
        *("    " + line for line in _fnv_lines(first)),
        f"        if len(_h{n}) < {_MEMO_SIZE}:",
        f"            _h{n}[{first}] = h",
    ]
    return lines + _fnv_lines(rest) if rest else lines


def _fnv_lines(key: str) -> list[str]:
    """Generated lines hashing the bytes of ``key`` into ``h``."""
    return [
        f"    for b in ({key}).encode('utf-8', 'surrogateescape'):",
        f"        h = (h ^ b) * {_FNV_PRIME}",
        f"    h &= {_MASK}",
    ]


def _generate(
    source: str,
    length: int,
    open_ended: bool,
    checks: tuple[tuple[int, str], ...],
    wildcards: Sequence[int],
    *,
    slots: list[_Slot],
    tail: int = -1,
    literal_only: bool = False,
) -> Callable[[str, _random.Random | None], str]:
    """Generate the specialised ``apply`` function of one transform, for performance reasons.
    With ``literal_only`` (the bare engine) a subject with an empty or a wildcard token matches nothing.

    Only integers and fixed names reach the generated text; every string of the mapping (literal tokens,
    separators, messages) is passed in the function's namespace, never spliced into code.
    """
    ns: dict[str, object] = {
        "_mismatch": _mismatch_error(source),
        "_random": _random,
        "_dot": ".",
    }
    cond = f"len(t) <= {int(length)}" if open_ended else f"len(t) != {int(length)}"
    for i, literal in checks:
        ns[f"_k{i}"] = literal
        cond += f" or t[{int(i)}] != _k{i}"
    for i in wildcards:
        cond += f" or t[{int(i)}] in _unmatched"
    if literal_only:
        cond += " or not _literal.isdisjoint(t)"
    elif open_ended:
        cond += f" or '' in t[{int(length)}:]"
    ns["_unmatched"] = _NOT_ONE_TOKEN
    ns["_literal"] = _NOT_LITERAL
    lines = ["def _apply(subject, rng=None):", "    t = subject.split('.')", f"    if {cond}:"]
    lines.append("        raise _mismatch(subject)")
    parts: list[str] = []
    for n, slot in enumerate(slots):
        if isinstance(slot, _Literal):
            ns[f"_c{n}"] = slot.text
            parts.append(f"_c{n}")
        elif isinstance(slot, int):
            parts.append(f"t[{int(slot)}]")
        elif isinstance(slot, _RandomSlot):
            parts.append(f"str((rng or _random).randrange({abs(int(slot.count))}))" if slot.count else "0")
        elif isinstance(slot, _HashSpec):
            lines += _hash_lines(n, slot.positions)
            ns[f"_h{n}"] = {}
            if slot.modulus <= 4096:
                ns[f"_l{n}"] = tuple(str(v) for v in range(slot.modulus))
                lines.append(f"    p{n} = _l{n}[h % {int(slot.modulus)}]")
            else:
                lines.append(f"    p{n} = h % {int(slot.modulus)}")
            parts.append(f"p{n}")
        else:
            ns[f"_f{n}"] = slot
            parts.append(f"_f{n}(t)")
    if tail >= 0:
        parts.append(f"_dot.join(t[{int(tail)}:])")
    lines.append("    return f'" + ".".join("{" + part + "}" for part in parts) + "'")
    exec(compile("\n".join(lines), "<reference transform>", "exec"), ns)
    function = ns["_apply"]
    assert callable(function)
    return function
