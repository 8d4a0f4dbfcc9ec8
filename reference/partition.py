"""Deterministic subject-token partitioning (https://docs.nats.io/nats-concepts/subject_mapping,
"Deterministic Subject token Partitioning").

The partition number of ``{{partition(n, i, j...)}}`` is the 32-bit FNV-1a hash of the selected wildcard
tokens' UTF-8 bytes concatenated with no separator, in the order the indexes are listed, modulo ``n``
(the server's ``subject_transform.go``,
https://github.com/nats-io/nats-server/blob/main/server/subject_transform.go). Both documented tables
reproduce with this rule (``tests/reference/test_documented_examples.py``).
"""

from __future__ import annotations

import sys
from array import array
from collections import defaultdict
from collections.abc import Sequence
from typing import Final

__all__ = ["FNV_OFFSET_BASIS", "FNV_PRIME", "fnv1a32", "fnv1a32_all", "partition", "partition_key"]

FNV_OFFSET_BASIS: Final = 0x811C9DC5
FNV_PRIME: Final = 0x01000193
_MASK: Final = 0xFFFFFFFF


def fnv1a32(data: bytes) -> int:
    """The 32-bit FNV-1a hash of ``data``."""
    h = FNV_OFFSET_BASIS
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & _MASK
    return h


_LANE: Final = 8
"""Bytes per lane of :func:`fnv1a32_all`: a 32-bit state times the 25-bit prime fits in 64 bits."""


_LANES: Final = 4096
"""Keys hashed together at most: the integers stay small enough for the processor's caches and the
allocator's heap (at 16,384 lanes each masking costs four times as much)."""


def _fnv1a32_lanes(group: Sequence[bytes], length: int) -> list[int]:
    """FNV-1a of keys of ``length`` bytes each, one 64-bit lane per key (see :func:`fnv1a32_all`)."""
    count = len(group)
    state = int.from_bytes(FNV_OFFSET_BASIS.to_bytes(_LANE, "little") * count, "little")
    if length:
        mask = int.from_bytes(_MASK.to_bytes(_LANE, "little") * count, "little")
        low_byte = int.from_bytes(b"\xff".ljust(_LANE, b"\0") * count, "little")
        words = -(-length // _LANE)
        padding = bytes(words * _LANE - length)
        # Each key padded to whole words, read as words in memory order: word w of every key.
        cells = array("Q", padding.join(group) + padding)
        for w in range(words):
            word = int.from_bytes(cells[w::words].tobytes(), "little")
            for shift in range(0, 8 * min(_LANE, length - w * _LANE), 8):
                state ^= (word >> shift) & low_byte
                state *= FNV_PRIME
                state &= mask
    values = array("Q", state.to_bytes(_LANE * count, "little"))
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


def fnv1a32_all(keys: Sequence[bytes]) -> list[int]:
    """:func:`fnv1a32` of every key, in order, many keys at once.

    Keys of one byte length are hashed together in one integer holding a 64-bit lane per key: for each
    byte position, the keys' bytes at that position (one per lane) are XORed in, the whole integer is
    multiplied by the prime and masked back to 32 bits per lane. A lane holds at most 32 + 25 bits after
    the product, so lanes never carry into each other, and each lane goes through exactly the steps of
    :func:`fnv1a32`. The keys' bytes are read eight positions at a time (one 64-bit word per lane),
    each position's byte shifted down to the bottom of its lane.
    """
    by_length: defaultdict[int, list[bytes]] = defaultdict(list)
    for key in keys:
        by_length[len(key)].append(key)
    hashes: dict[bytes, int] = {}
    for length, keys_of_length in by_length.items():
        for start in range(0, len(keys_of_length), _LANES):
            group = keys_of_length[start : start + _LANES]
            hashes.update(zip(group, _fnv1a32_lanes(group, length), strict=True))
    return list(map(hashes.__getitem__, keys))


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
