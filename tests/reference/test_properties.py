"""Hypothesis properties: the reference's own laws (partition range and determinism, split/slice pieces
rejoin to the token, valid transforms keep valid subjects valid, the index agrees with ``matches``)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from nats_conformance.reference import (
    MAPPING_ERROR_KINDS,
    MappingError,
    SubjectIndex,
    compile_transform,
    for_version,
    is_valid_publish_subject,
    matches,
    partition,
)
from nats_conformance.reference import functions as fn
from nats_conformance.reference.partition import fnv1a32
from nats_conformance.reference.transform import NOT_DELIVERED

REFERENCE = settings(max_examples=300, deadline=None)
"""These laws are cheap to check: 300 examples each (the loaded profile's other settings kept)."""

ALPHABET = st.sampled_from("abcxyz019-_é€")
tokens = st.text(ALPHABET, min_size=1, max_size=12)
subjects = st.lists(tokens, min_size=1, max_size=6).map(".".join)


@REFERENCE
@given(st.lists(tokens, max_size=5), st.integers(1, 10_000))
def test_partition_is_in_range_and_deterministic(key: list[str], n: int) -> None:
    first = partition(key, n)
    assert 0 <= first < n
    assert partition(list(key), n) == first


@REFERENCE
@given(st.lists(tokens, min_size=1, max_size=4))
def test_partition_key_is_the_concatenation_without_separator(key: list[str]) -> None:
    assert partition(key, 2**31 - 1) == partition(["".join(key)], 2**31 - 1)
    assert fnv1a32("".join(key).encode()) % 97 == partition(key, 97)


def _rejoin(pieces: str) -> bytes:
    return pieces.replace(".", "").encode("utf-8", "surrogateescape")


@REFERENCE
@given(tokens, st.integers(-3, 20))
def test_split_and_slice_pieces_rejoin_to_the_token(token: str, k: int) -> None:
    raw = token.encode()
    for function in (fn.split_from_left, fn.split_from_right, fn.slice_from_left, fn.slice_from_right):
        assert _rejoin(function(token, k)) == raw


@REFERENCE
@given(tokens, st.integers(1, 20))
def test_slices_have_the_requested_size_except_one_remainder(token: str, k: int) -> None:
    size = len(token.encode())
    left_pieces = [p.encode("utf-8", "surrogateescape") for p in fn.slice_from_left(token, k).split(".")]
    right_pieces = [p.encode("utf-8", "surrogateescape") for p in fn.slice_from_right(token, k).split(".")]
    if k < size:
        assert all(len(p) == k for p in left_pieces[:-1])
        assert 0 < len(left_pieces[-1]) <= k
        assert all(len(p) == k for p in right_pieces[1:])
        assert 0 < len(right_pieces[0]) <= k
    else:
        assert left_pieces == right_pieces == [token.encode()]


@REFERENCE
@given(
    st.lists(st.text("abc", min_size=1, max_size=4), min_size=1, max_size=5),
    st.sampled_from(["-", "--", "x"]),
)
def test_split_without_empty_pieces_equals_dotted_join(parts: list[str], sep: str) -> None:
    parts = [p for p in parts if sep not in p and not p.endswith(sep[0]) and not p.startswith(sep[-1])]
    if not parts:
        return
    assert fn.split(sep.join(parts), sep) == ".".join(parts)


@REFERENCE
@given(tokens, st.integers(-2, 20))
def test_left_and_right_are_prefix_and_suffix(token: str, k: int) -> None:
    raw = token.encode()
    assert raw.startswith(fn.left(token, k).encode("utf-8", "surrogateescape"))
    assert raw.endswith(fn.right(token, k).encode("utf-8", "surrogateescape"))


TEMPLATE_PIECES = [
    "lit",
    "$1",
    "{{wildcard(2)}}",
    "{{partition(7,1,2)}}",
    "{{partition(5)}}",
    "{{SplitFromLeft(1,2)}}",
    "{{splitFromRight(2,3)}}",
    "{{sliceFromLeft(1,2)}}",
    "{{sliceFromRight(2,2)}}",
    "{{random(9)}}",
]


@REFERENCE
@given(
    st.lists(st.sampled_from(TEMPLATE_PIECES), min_size=1, max_size=5),
    st.lists(st.text("abcdefgh0123", min_size=1, max_size=9), min_size=2, max_size=2),
    st.integers(0, 2**32),
)
def test_valid_transform_keeps_valid_ascii_subjects_valid(
    pieces: list[str], values: list[str], seed: int
) -> None:
    """Without split (which may drop every piece), functions never produce an empty or invalid token."""
    transform = compile_transform("src.*.*", ".".join(pieces))
    out = transform.apply("src." + ".".join(values), rng=random.Random(seed))
    assert is_valid_publish_subject(out)
    assert transform.accepts("src." + ".".join(values), out)


@REFERENCE
@given(st.text("ab-", min_size=1, max_size=8))
def test_split_may_yield_empty_tokens_only_from_leading_or_all_separators(token: str) -> None:
    """The one documented-rule exception: split output with an empty token (observed, undeliverable)."""
    transform = compile_transform("s.*", "d.{{split(1,-)}}.e")
    out = transform.apply("s." + token)
    if not is_valid_publish_subject(out):
        stripped = token.strip("-")
        assert stripped == "" or token.startswith("--")
        assert transform.delivers("s." + token) == NOT_DELIVERED  # no subject written: delivered nowhere
    else:
        assert transform.delivers("s." + token) == out


@REFERENCE
@given(subjects, st.sampled_from(["2.8", "2.9", "2.10", "2.12", "2.14"]))
def test_wildcard_reordering_roundtrip(subject: str, version: str) -> None:
    n = subject.count(".") + 1
    source = ".".join(["*"] * n)
    forward = compile_transform(source, ".".join(f"${n - i}" for i in range(n)), for_version(version))
    backward = compile_transform(source, ".".join(f"{{{{wildcard({n - i})}}}}" for i in range(n)))
    assert backward.apply(forward.apply(subject)) == subject


patterns = st.lists(st.sampled_from(["a", "b", "*", "c"]), min_size=1, max_size=4).flatmap(
    lambda toks: st.sampled_from([".".join(toks), ".".join([*toks, ">"])])
)


@REFERENCE
@given(st.lists(patterns, max_size=30), st.lists(st.sampled_from("abcd"), min_size=1, max_size=5))
def test_subject_index_agrees_with_matches(pattern_list: list[str], subject_tokens: list[str]) -> None:
    subject = ".".join(subject_tokens)
    index = SubjectIndex(pattern_list)
    assert index.match(subject) == frozenset(p for p in pattern_list if matches(p, subject))


@REFERENCE
@given(st.text(max_size=30), st.text(max_size=30), st.sampled_from(["2.2", "2.8", "2.9", "2.10", "2.14"]))
def test_compile_never_fails_with_anything_but_a_mapping_error(
    source: str, destination: str, version: str
) -> None:
    error: MappingError | None = None
    try:
        compile_transform(source, destination, for_version(version))
    except MappingError as exc:
        error = exc
    if error is not None:
        assert error.kind in MAPPING_ERROR_KINDS
        assert "\n" not in str(error)
