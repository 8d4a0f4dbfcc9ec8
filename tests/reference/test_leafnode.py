"""A leaf node remote's deny lists (``reference.leafnode``): which subjects an entry denies, what its
account functions stand for, and which lists a leaf node refuses."""

from __future__ import annotations

import pytest

from nats_conformance.reference import for_version
from nats_conformance.reference.errors import FunctionNotAvailableError, WrongArgumentCountError
from nats_conformance.reference.leafnode import InvalidDenySubjectError, deny_list

LEAF_HASH, GLOBAL_HASH = "XqHlnZPF", "szMpdrwD"
"""What 2.14.10 denied for ``{{account-hash()}}`` in a remote of local account ``LEAF`` and for
``{{account-hash-leaf-remote()}}`` bound to the hub's global account (two live servers, 2026-11-29:
``d.XqHlnZPF`` and ``d.szMpdrwD.x`` held back from the hub, ``d.szMpdrwD`` let through)."""


def test_account_functions_stand_for_the_local_account_and_the_hub_account() -> None:
    listed = deny_list(
        ["d.{{account-hash()}}", "d.{{account-hash-leaf-remote()}}.x", "d.a{{account-hash()}}"],
        for_version("2.14.10"),
        "LEAF",
        "$G",
    )
    assert listed.patterns == (f"d.{LEAF_HASH}", f"d.{GLOBAL_HASH}.x", "d.a{{account-hash()}}")
    assert listed.functions == ("account-hash", "account-hash-leaf-remote")
    denied = [listed.denies(subject) for subject in (f"d.{LEAF_HASH}", f"d.{GLOBAL_HASH}.x")]
    passed = [listed.denies(subject) for subject in (f"d.{GLOBAL_HASH}", f"d.a{LEAF_HASH}")]
    assert (denied, passed) == ([True, True], [False, False])


@pytest.mark.parametrize(
    ("subject", "denied"),
    [("d.a", True), ("d.a.b", True), ("d.b.c", True), ("d", False), ("d.b.c.e", False), ("e.a", False)],
)
def test_entries_deny_the_subjects_they_match(subject: str, denied: bool) -> None:
    listed = deny_list(["d.a.>", "d.*", "d.*.c"], for_version("2.14.5"), "LEAF", "$G")
    assert listed.denies(subject) is denied


def test_before_2_14_10_a_function_call_is_a_literal_token() -> None:
    listed = deny_list(["d.{{account-hash()}}"], for_version("2.14.9"), "LEAF", "$G")
    assert listed.patterns == ("d.{{account-hash()}}",)
    assert listed.functions == ()


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ("d.{{account-hash-import()}}", FunctionNotAvailableError),
        ("d.{{account-hash(1)}}", WrongArgumentCountError),
        ("d.{{ account-hash() }}", InvalidDenySubjectError),
        ("d..a", InvalidDenySubjectError),
    ],
)
def test_a_leaf_node_refuses_a_list_with(entry: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        deny_list(["d.a", entry], for_version("2.14.10"), "LEAF", "$G")
