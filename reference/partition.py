"""Deterministic subject-token partitioning (https://docs.nats.io/nats-concepts/subject_mapping,
"Deterministic Subject token Partitioning").

The partition number of ``{{partition(n, i, j...)}}`` is the 32-bit FNV-1a hash of the selected wildcard
tokens' UTF-8 bytes concatenated with no separator, in the order the indexes are listed, modulo ``n``
(the server's ``subject_transform.go``,
https://github.com/nats-io/nats-server/blob/main/server/subject_transform.go). Both documented tables
reproduce with this rule (``tests/reference/test_documented_examples.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["FNV_OFFSET_BASIS", "FNV_PRIME", "fnv1a32", "partition", "partition_key"]

FNV_OFFSET_BASIS: Final = 0x811C9DC5
FNV_PRIME: Final = 0x01000193
_MASK: Final = 0xFFFFFFFF


def fnv1a32(data: bytes) -> int:
    """The 32-bit FNV-1a hash of ``data``."""
    h = FNV_OFFSET_BASIS
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & _MASK
    return h


def partition_key(tokens: Sequence[str]) -> bytes:
    """The bytes hashed for ``tokens``: their UTF-8 encodings concatenated with no separator.

    Tokens holding lone surrogates (bytes cut mid-character by an earlier function) encode back to the
    original bytes (``surrogateescape``).
    """
    return "".join(tokens).encode("utf-8", "surrogateescape")


def partition(tokens: Sequence[str], n: int) -> int:
    """The partition in ``[0, n)`` of the key made of ``tokens`` (FNV-1a of the concatenation, mod ``n``).

    Raises:
        ValueError: ``n`` is below 1 (see ``Transform`` for how each release treats such counts).
    """
    if n < 1:
        raise ValueError(f"'n' must be >= 1 (got {n})")
    return fnv1a32(partition_key(tokens)) % n
