"""The mapping functions applied to one source token (``docs/subject-mapping-and-partitioning.md``).

Each function takes the token and its integer or text argument and returns the destination text it
stands for, tokens joined by ``.``. Positions and sizes count UTF-8 *bytes*, as the server does
(observed on 2.9.25-2.14.5: ``splitFromLeft(1,1)`` of ``éa`` gives the bytes ``c3 . a9 61``); a cut inside
a character yields text holding lone surrogates (``surrogateescape``) that encode back to those bytes.
A size or position that is not strictly between 0 and the token length leaves the token whole.
"""

from __future__ import annotations

from itertools import pairwise

__all__ = [
    "left",
    "right",
    "slice_from_left",
    "slice_from_right",
    "split",
    "split_from_left",
    "split_from_right",
]

_ENC = "utf-8"
_ERR = "surrogateescape"


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
    last = len(pieces) - 1
    out: list[str] = []
    for j, piece in enumerate(pieces):
        if piece:
            out.append(piece)
        if j < last and pieces[j + 1] and not (j == 0 and not piece):
            out.append(".")
    return "".join(out)
