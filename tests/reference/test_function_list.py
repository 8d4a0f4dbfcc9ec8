"""The one list of mapping functions and the canonical form of a ``functions`` value."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.reference import ALL_FUNCTIONS, for_version
from nats_conformance.reference.functions import (
    FUNCTIONS,
    LEGACY_WILDCARD,
    MAPPING_FUNCTIONS,
    canonical_functions,
    canonical_name,
)
from nats_conformance.reference.versions import Version

CANONICAL = (
    "$n",
    "wildcard",
    "partition",
    "split",
    "splitFromLeft",
    "splitFromRight",
    "sliceFromLeft",
    "sliceFromRight",
    "left",
    "right",
    "random",
    "account-hash",
    "account-hash-import",
    "account-hash-leaf-remote",
)


def test_the_list_holds_every_function_once_in_the_order_they_appeared() -> None:
    assert tuple(FUNCTIONS) == CANONICAL
    assert [f.since for f in MAPPING_FUNCTIONS] == sorted(f.since for f in MAPPING_FUNCTIONS)
    assert FUNCTIONS[LEGACY_WILDCARD].tried is None
    engine = {f.name for f in MAPPING_FUNCTIONS if f.scope == "message"}
    assert sorted(ALL_FUNCTIONS) == sorted(engine - {LEGACY_WILDCARD})


def test_per_function_facts() -> None:
    assert {f.name for f in MAPPING_FUNCTIONS if f.one_token} == {
        "$n",
        "wildcard",
        "partition",
        "left",
        "right",
        "random",
        "account-hash",
        "account-hash-import",
        "account-hash-leaf-remote",
    }
    assert FUNCTIONS["left"].since == Version(2, 10, 16)
    assert FUNCTIONS["random"].since == Version(2, 12, 0)
    assert (FUNCTIONS["partition"].min_arguments, FUNCTIONS["partition"].max_arguments) == (1, None)
    assert (FUNCTIONS["sliceFromRight"].min_arguments, FUNCTIONS["sliceFromRight"].max_arguments) == (2, 2)


@pytest.mark.parametrize("line", ["2.2", "2.8", "2.9", "2.10", "2.11", "2.12", "2.14"])
def test_each_release_has_the_functions_that_appeared_by_then(line: str) -> None:
    profile = for_version(line)
    appeared = {f.name for f in MAPPING_FUNCTIONS if f.since <= profile.version} - {LEGACY_WILDCARD}
    assert profile.functions | profile.account_functions == appeared


@pytest.mark.parametrize(
    ("names", "canonical"),
    [
        (["slicefromright"], ("sliceFromRight",)),
        (["SliceFromRight", "slicefromright", "sliceFromRight"], ("sliceFromRight",)),
        (["right", "random", "wildcard", "$n"], ("$n", "wildcard", "right", "random")),
        (["splitfromleft", "NoSuch", "wildcard", "nosuch"], ("wildcard", "splitFromLeft", "nosuch")),
        (["partial", "full"], ("partial", "full")),
        ([], ()),
    ],
)
def test_any_spelling_and_order_gives_one_canonical_tuple(
    names: list[str], canonical: tuple[str, ...]
) -> None:
    assert canonical_functions(names) == canonical


def test_canonical_name_of_any_casing() -> None:
    assert canonical_name("SPLITFROMLEFT") == "splitFromLeft"
    assert canonical_name(" $N ") == "$n"
    assert canonical_name("nosuch") is None


spellings = st.sampled_from(CANONICAL).flatmap(
    lambda name: st.sampled_from([name, name.lower(), name.upper(), name[0].upper() + name[1:]])
)


@given(st.lists(spellings, max_size=8), st.randoms(use_true_random=False))
def test_the_canonical_tuple_depends_on_the_set_of_functions_only(
    names: list[str], rng: random.Random
) -> None:
    shuffled = list(names)
    rng.shuffle(shuffled)
    canonical = canonical_functions(names)
    assert canonical_functions(shuffled) == canonical
    assert canonical == tuple(name for name in CANONICAL if name.lower() in {n.lower() for n in names})
    assert canonical_functions(canonical) == canonical
