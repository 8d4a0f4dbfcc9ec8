"""Wildcard matching of subjects against patterns (https://docs.nats.io/nats-concepts/subjects, "Matching A
Single Token",
"Matching Multiple Tokens", "Mix Wildcards").

``*`` matches exactly one token, ``>`` matches one or more tokens and only ends a pattern; every other
pattern token matches the identical subject token. Tokens are compared whole: ``time.New*.east`` is a
literal token ``New*``, never a prefix match.
"""

from __future__ import annotations

from collections.abc import Iterable

from nats_conformance.reference.subjects import FULL_WILDCARD, PARTIAL_WILDCARD, SEPARATOR

__all__ = ["SubjectIndex", "contains", "matches", "matching_subject"]


def matching_subject(pattern: str, token: str = "o") -> str:
    """A literal subject ``pattern`` matches: each wildcard (``*``, a final ``>``) filled with ``token``."""
    return SEPARATOR.join(
        token if t in (PARTIAL_WILDCARD, FULL_WILDCARD) else t for t in pattern.split(SEPARATOR)
    )


def matches(pattern: str, subject: str) -> bool:
    """True iff the literal ``subject`` matches ``pattern`` (``*`` = one token, ``>`` = one or more)."""
    ptoks = pattern.split(SEPARATOR)
    stoks = subject.split(SEPARATOR)
    np, ns = len(ptoks), len(stoks)
    for i, ptok in enumerate(ptoks):
        if ptok == FULL_WILDCARD and i == np - 1:
            return ns > i
        if i >= ns:
            return False
        if ptok != PARTIAL_WILDCARD and ptok != stoks[i]:
            return False
    return np == ns


def contains(filter_: str, within: str) -> bool:
    """True iff every literal subject that ``filter_`` matches, ``within`` matches too (one subscription
    contained in another, as an import or export of a subject needs).

    From the wildcard rules of "Subject-Based Messaging" (https://docs.nats.io/nats-concepts/subjects,
    "Matching A Single Token", "Matching Multiple Tokens"): ``*`` matches exactly one token, ``>`` one or
    more and only last. Token by token, a ``>`` of ``within`` takes the rest of ``filter_`` when one
    token at least is left; a ``*`` of ``within`` takes any one token of ``filter_`` but its ``>`` (which
    stands for several); a literal token only the same literal token. Otherwise both end together.
    Both are taken as valid subscription subjects ("Characters allowed and recommended for subject
    names"); the answer for others is the same token walk.
    """
    mine = filter_.split(SEPARATOR)
    theirs = within.split(SEPARATOR)
    last = len(theirs) - 1
    for i, token in enumerate(theirs):
        if token == FULL_WILDCARD and i == last:
            return len(mine) > i
        if i >= len(mine):
            return False
        own = mine[i]
        own_full = own == FULL_WILDCARD and i == len(mine) - 1
        if token == PARTIAL_WILDCARD:
            if own_full:
                return False
        elif own != token or own_full:
            return False
    return len(mine) == len(theirs)


class _Node:
    """One level of the pattern trie: literal children, a ``*`` child, and patterns ending here."""

    __slots__ = ("full", "literal", "partial", "terminal")

    def __init__(self) -> None:
        self.literal: dict[str, _Node] = {}
        self.partial: _Node | None = None
        self.full: list[str] = []  # patterns whose ``>`` sits at this level
        self.terminal: list[str] = []  # patterns ending exactly at this level


class SubjectIndex:
    """An index of many patterns answering "which patterns match this subject" fast.

    Built once from the patterns (a token trie, like the server's subscription list); ``match`` walks only
    the branches a subject can take, so its cost depends on the subject length and the number of
    wildcard branches, not on the number of patterns.
    """

    __slots__ = ("_literals", "_patterns", "_root")

    def __init__(self, patterns: Iterable[str]) -> None:
        self._root = _Node()
        self._literals: dict[str, frozenset[str]] = {}
        unique = tuple(dict.fromkeys(patterns))
        self._patterns = unique
        for pattern in unique:
            node = self._root
            tokens = pattern.split(SEPARATOR)
            last = len(tokens) - 1
            for i, token in enumerate(tokens):
                if token == FULL_WILDCARD and i == last:
                    node.full.append(pattern)
                    break
                if token == PARTIAL_WILDCARD:
                    if node.partial is None:
                        node.partial = _Node()
                    node = node.partial
                else:
                    child = node.literal.get(token)
                    if child is None:
                        child = node.literal[token] = _Node()
                    node = child
            else:
                node.terminal.append(pattern)

    @property
    def patterns(self) -> tuple[str, ...]:
        """The indexed patterns, deduplicated, in insertion order."""
        return self._patterns

    def __len__(self) -> int:
        return len(self._patterns)

    def __repr__(self) -> str:
        return f"SubjectIndex({list(self._patterns)!r})"

    def match(self, subject: str) -> frozenset[str]:
        """The patterns that match the literal ``subject``."""
        tokens = subject.split(SEPARATOR)
        last = len(tokens) - 1
        found: list[str] = []
        level: list[_Node] = [self._root]
        for i, token in enumerate(tokens):
            nxt: list[_Node] = []
            for node in level:
                if node.full:
                    found.extend(node.full)
                child = node.literal.get(token)
                if child is not None:
                    nxt.append(child)
                if node.partial is not None:
                    nxt.append(node.partial)
            if not nxt:
                return frozenset(found)
            level = nxt
            if i == last:
                for node in level:
                    found.extend(node.terminal)
        return frozenset(found)
