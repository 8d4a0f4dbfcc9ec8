"""The mapping functions of a destination template: their one list, and what each does to one source token.

Names, arguments and outputs follow docs.nats.io, "Subject Mapping and Partitioning" ("Subject Token
Reordering", "Splitting Tokens", "Slicing Tokens", "Deterministic Subject token Partitioning"); the
release each function appeared in follows the nats-server release notes, and was checked on live servers
(``reference.profiles``).

Each function takes the token and its integer or text argument and returns the destination text it
stands for, tokens joined by ``.``. Positions and sizes count UTF-8 *bytes*, as the server does
(observed on 2.9.25-2.14.5: ``splitFromLeft(1,1)`` of ``éa`` gives the bytes ``c3 . a9 61``); a cut inside
a character yields text holding lone surrogates (``surrogateescape``) that encode back to those bytes.
A size or position that is not strictly between 0 and the token length leaves the token whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Final, Literal

from nats_conformance.reference.versions import Version

__all__ = [
    "ACCOUNT_FUNCTIONS",
    "FUNCTIONS",
    "LEGACY_WILDCARD",
    "MAPPING_FUNCTIONS",
    "MappingFunction",
    "account_hash",
    "canonical_functions",
    "canonical_name",
    "left",
    "right",
    "slice_from_left",
    "slice_from_right",
    "split",
    "split_from_left",
    "split_from_right",
]

LEGACY_WILDCARD: Final = "$n"
"""The name of the legacy ``$1``/``$2`` placeholder form (the document's "$x wildcard")."""


@dataclass(frozen=True, slots=True)
class MappingFunction:
    """One mapping function of destination templates.

    Attributes:
        name: the canonical spelling, as the document writes it (``sliceFromRight``; ``$n`` for ``$1``).
        since: the first release whose transform engine has it (``$n``: the oldest line the reference
            knows; it is older).
        min_arguments, max_arguments: how many arguments it takes (``max_arguments`` None: no limit).
            ``partition`` takes a count and one or more wildcard indexes, or from 2.12 the count alone
            (``ReleaseProfile.partition_single_argument``); ``$n`` takes none.
        one_token: its output is always exactly one token (``split`` and the ``splitFrom``/``sliceFrom``
            functions may emit several).
        tried: the position at which the server tries it on a ``{{...}}`` token (None for ``$n``, which
            is no such token, and for the account functions, which the transform engine never runs).
        later_lines: for a function that a later release line received in a later patch, the first
            release of each such line (``account-hash``: 2.14.10, then 2.15.3, not 2.15.0).
        scope: ``message`` (the transform engine applies it to each message's subject) or ``account``
            (resolved once, to a literal token, when an account's subject is installed).
    """

    name: str
    since: Version
    min_arguments: int
    max_arguments: int | None
    one_token: bool
    tried: int | None
    later_lines: tuple[Version, ...] = ()
    scope: Literal["message", "account"] = "message"

    def in_release(self, version: Version) -> bool:
        """Whether ``version`` (a release) has the function: the first release listed for its line or
        the nearest older listed line (``since``, then ``later_lines``) is at or below it."""
        listed = [first for first in (self.since, *self.later_lines) if first.line <= version.line]
        if not listed:
            return False
        nearest = max(listed)
        return nearest.line < version.line or nearest <= version


MAPPING_FUNCTIONS: Final = (
    MappingFunction(LEGACY_WILDCARD, Version(2, 2, 0), 0, 0, True, None),
    MappingFunction("wildcard", Version(2, 8, 0), 1, 1, True, 0),
    MappingFunction("partition", Version(2, 8, 0), 1, None, True, 1),
    MappingFunction("split", Version(2, 9, 0), 2, 2, False, 8),
    MappingFunction("splitFromLeft", Version(2, 9, 0), 2, 2, False, 2),
    MappingFunction("splitFromRight", Version(2, 9, 0), 2, 2, False, 3),
    MappingFunction("sliceFromLeft", Version(2, 9, 0), 2, 2, False, 4),
    MappingFunction("sliceFromRight", Version(2, 9, 0), 2, 2, False, 5),
    MappingFunction("left", Version(2, 10, 16), 2, 2, True, 7),
    MappingFunction("right", Version(2, 10, 16), 2, 2, True, 6),
    MappingFunction("random", Version(2, 12, 0), 1, 1, True, 9),
    MappingFunction("account-hash", Version(2, 14, 10), 0, 0, True, None, (Version(2, 15, 3),), "account"),
    MappingFunction(
        "account-hash-import", Version(2, 14, 10), 0, 0, True, None, (Version(2, 15, 3),), "account"
    ),
    MappingFunction(
        "account-hash-leaf-remote", Version(2, 14, 10), 0, 0, True, None, (Version(2, 15, 3),), "account"
    ),
)
"""Every mapping function, in the order they appeared (the canonical order of a ``functions`` value).

The account functions (``{{account-hash()}}``, ``{{account-hash-import()}}``,
``{{account-hash-leaf-remote()}}``) came with nats-server 2.14.10 and 2.15.3
(https://github.com/nats-io/nats-server/releases/tag/v2.14.10). The documents do not describe them yet;
what they do is read from those releases' source (server/subject_transform.go, "Account scoped mapping
functions") and observed on them: each whole token of that form in an account mapping's source or
destination is replaced, when the mapping is installed, by an 8-character hash of a name (``account_hash``):
the account's own for ``account-hash``; the importing account's for ``account-hash-import`` (in imports);
the leaf node remote's account for ``account-hash-leaf-remote`` (in a leaf node's deny lists). Where that
name is not known (``account-hash-import`` in ``mappings {}``), and wherever the transform engine meets one
(a stream's subject transform, RePublish), the subject is refused. They take no arguments."""

ACCOUNT_FUNCTIONS: Final = tuple(f for f in MAPPING_FUNCTIONS if f.scope == "account")
"""The functions resolved when an account's subject is installed, not per message."""

_HASH_DIGITS: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HASH_LENGTH: Final = 8


def account_hash(name: str) -> str:
    """What ``{{account-hash()}}`` stands for in account ``name``: the first 8 bytes of the name's SHA-256,
    each taken modulo 62 as a digit of ``0-9A-Za-z`` (the server's ``getHash``, the hash it also uses in
    system subjects; source of 2.14.10, server/events.go)."""
    digest = hashlib.sha256(name.encode()).digest()
    return "".join(_HASH_DIGITS[byte % len(_HASH_DIGITS)] for byte in digest[:_HASH_LENGTH])


FUNCTIONS: Final = {function.name: function for function in MAPPING_FUNCTIONS}
"""The mapping functions by canonical name, in ``MAPPING_FUNCTIONS`` order."""

_BY_SPELLING: Final = {name.lower(): name for name in FUNCTIONS}
_ENC: Final = "utf-8"
_ERR: Final = "surrogateescape"


def canonical_name(name: str) -> str | None:
    """The canonical spelling of a mapping function written in any casing (``slicefromright``,
    ``SliceFromRight`` -> ``sliceFromRight``), or None when it names no mapping function."""
    return _BY_SPELLING.get(name.strip().lower())


def canonical_functions(names: Iterable[str]) -> tuple[str, ...]:
    """Function names as the records' ``functions`` column holds them: each once, mapping functions in
    their canonical spelling and ``MAPPING_FUNCTIONS`` order, whatever spelling and order they came in;
    other names (``nosuch``, a matching case's ``partial``) lower-cased after them, in first-seen order."""
    given = [name.strip() for name in names]
    known = {canonical_name(name) for name in given}
    others = (name.lower() for name in given if canonical_name(name) is None)
    return (*(name for name in FUNCTIONS if name in known), *dict.fromkeys(others))


def _cut(token: str, positions: list[int]) -> str:
    """``token`` cut at the byte ``positions`` (ascending, strictly inside), pieces joined by ``.``."""
    if token.isascii():
        bounds = [0, *positions, len(token)]
        return ".".join([token[a:b] for a, b in pairwise(bounds)])
    data = token.encode(_ENC, _ERR)
    bounds = [0, *positions, len(data)]
    return ".".join([data[a:b].decode(_ENC, _ERR) for a, b in pairwise(bounds)])


def _length(token: str) -> int:
    return len(token) if token.isascii() else len(token.encode(_ENC, _ERR))


def split_from_left(token: str, position: int) -> str:
    """``{{splitFromLeft(i, pos)}}``: the token in two, ``pos`` bytes from the start (``1234.567``)."""
    n = _length(token)
    return _cut(token, [position]) if 0 < position < n else token


def split_from_right(token: str, position: int) -> str:
    """``{{splitFromRight(i, pos)}}``: the token in two, ``pos`` bytes from the end (``123.4567``)."""
    n = _length(token)
    return _cut(token, [n - position]) if 0 < position < n else token


def slice_from_left(token: str, size: int) -> str:
    """``{{sliceFromLeft(i, size)}}``: ``size``-byte pieces from the start, the rest last (``12.34.56.7``)."""
    n = _length(token)
    if not 0 < size < n:
        return token
    return _cut(token, list(range(size, n, size)))


def slice_from_right(token: str, size: int) -> str:
    """``{{sliceFromRight(i, size)}}``: ``size``-byte pieces from the end, the rest first (``1.23.45.67``)."""
    n = _length(token)
    if not 0 < size < n:
        return token
    return _cut(token, list(range(n % size or size, n, size)))


def left(token: str, size: int) -> str:
    """``{{left(i, n)}}``: the first ``n`` bytes of the token (whole token unless ``0 < n < len``)."""
    n = _length(token)
    if not 0 < size < n:
        return token
    return token[:size] if token.isascii() else _bytes_slice(token, 0, size)


def right(token: str, size: int) -> str:
    """``{{right(i, n)}}``: the last ``n`` bytes of the token (whole token unless ``0 < n < len``)."""
    n = _length(token)
    if not 0 < size < n:
        return token
    return token[n - size :] if token.isascii() else _bytes_slice(token, n - size, n)


def _bytes_slice(token: str, start: int, stop: int) -> str:
    return token.encode(_ENC, _ERR)[start:stop].decode(_ENC, _ERR)


def split(token: str, separator: str) -> str:
    """``{{split(i, sep)}}``: the token cut at every ``sep``, as the server joins the pieces.

    Empty pieces are dropped and the dot between two pieces is written only when the next piece is not
    empty and the piece is not a leading empty one: ``-a--b-`` gives ``a.b`` (documented ``foo-bar`` ->
    ``foo.bar``), while ``--a`` gives ``.a`` and ``-`` gives the empty string (observed on 2.9.25-2.14.5:
    the resulting subject has an empty token and is delivered to no wildcard subscriber). An empty
    separator cuts between characters (Go's ``strings.Split``).
    """
    if separator and separator not in token:
        return token
    pieces = token.split(separator) if separator else list(token)
    if "" not in pieces:
        return ".".join(pieces)
    last = len(pieces) - 1
    out: list[str] = []
    for j, piece in enumerate(pieces):
        if piece:
            out.append(piece)
        if j < last and pieces[j + 1] and not (j == 0 and not piece):
            out.append(".")
    return "".join(out)
