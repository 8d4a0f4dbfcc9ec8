"""The account functions of 2.14.10 and 2.15.3 (``reference.functions``): where they are resolved, to
what, and where they are refused."""

from __future__ import annotations

import pytest

from nats_conformance.reference import for_version
from nats_conformance.reference.contexts import compile_in
from nats_conformance.reference.errors import (
    FunctionNotAvailableError,
    InvalidSourceError,
    MappingError,
    UnknownFunctionError,
    WrongArgumentCountError,
)
from nats_conformance.reference.functions import FUNCTIONS, account_hash
from nats_conformance.reference.transform import compile_transform
from nats_conformance.reference.versions import Version
from nats_conformance.suites.expected import ExpectedSubjects

GLOBAL_HASH = "szMpdrwD"
"""What 2.14.10 delivered ``a.x`` on, mapped by ``a.*: b.{{account-hash()}}.$1`` in the global account
``$G`` (a live server, raw protocol, 2026-11-29)."""


def test_the_hash_of_the_global_account_is_the_one_the_server_delivered() -> None:
    assert account_hash("$G") == GLOBAL_HASH
    assert len(account_hash("m0")) == 8
    assert account_hash("m0") != GLOBAL_HASH


@pytest.mark.parametrize(
    ("release", "has"),
    [
        ("2.12.15", False),
        ("2.14.9", False),
        ("2.14.10", True),
        ("2.15.0", False),
        ("2.15.2", False),
        ("2.15.3", True),
        ("2.16.0", True),
    ],
)
def test_a_line_gets_the_functions_with_its_own_patch(release: str, has: bool) -> None:
    assert FUNCTIONS["account-hash"].in_release(Version.parse(release)) is has
    if Version.parse(release) <= Version(2, 15, 3):
        assert bool(for_version(release).account_functions) is has


def test_left_keeps_its_single_first_release() -> None:
    left = FUNCTIONS["left"]
    assert not left.in_release(Version(2, 10, 15))
    assert left.in_release(Version(2, 10, 16))
    assert left.in_release(Version(2, 11, 0))
    assert not left.in_release(Version(2, 9, 25))


def test_an_account_mapping_resolves_them_in_source_and_destination() -> None:
    profile = for_version("2.14.10")
    transform = compile_transform("a.*", "b.{{account-hash()}}.$1", profile, account="$G")
    assert transform.apply("a.x") == f"b.{GLOBAL_HASH}.x"
    assert transform.destination == "b.{{account-hash()}}.$1"  # as written, for the configuration
    assert transform.functions == ("account-hash", "wildcard")
    spaced = compile_transform("c.{{Account-Hash()}}.*", "d.{{ account-Hash( ) }}", profile, account="$G")
    assert spaced.apply(f"c.{GLOBAL_HASH}.q") == f"d.{GLOBAL_HASH}"
    assert not spaced.matches("c.{{Account-Hash()}}.q")


def test_a_source_is_checked_as_written_first() -> None:
    with pytest.raises(InvalidSourceError):
        compile_transform("c.{{ account-hash() }}", "d", for_version("2.15.3"), account="$G")


@pytest.mark.parametrize(
    ("destination", "error"),
    [
        ("b.{{account-hash(1)}}", WrongArgumentCountError),
        ("b.{{account-hash-import()}}", FunctionNotAvailableError),
        ("b.{{account-hash-leaf-remote()}}", FunctionNotAvailableError),
    ],
)
def test_an_account_mapping_refuses_arguments_and_names_it_lacks(
    destination: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        compile_transform("a", destination, for_version("2.15.3"), account="acc")


def test_the_transform_engine_refuses_them() -> None:
    profile = for_version("2.14.10")
    with pytest.raises(FunctionNotAvailableError):
        compile_transform("a", "b.{{account-hash()}}", profile, engine_only=True)
    with pytest.raises(FunctionNotAvailableError):
        compile_transform("a", "b.{{account-hash()}}", profile)  # no account named


def test_older_releases_know_no_such_function() -> None:
    with pytest.raises(UnknownFunctionError):
        compile_transform("a", "b.{{account-hash()}}", for_version("2.14.9"), account="$G")
    literal = compile_transform("a", "b.{{account-hash()}}", for_version("2.8.4"), account="$G")
    assert literal.apply("a") == "b.{{account-hash()}}"


def test_a_batch_computed_in_the_worker_process_resolves_them_in_the_same_account() -> None:
    """Batches of 50,000 subjects and more are computed in a worker process (`suites.expected`), which
    compiles each mapping again: with its account, or it would refuse the function."""
    transform = compile_transform("a.*", "b.{{account-hash()}}.$1", for_version("2.15.3"), account="m0")
    computed = ExpectedSubjects([(transform, ["a.x", "a.y"])], parallel=True)
    _, expected, _ = computed.of(transform)
    hashed = account_hash("m0")
    assert expected.to_pylist() == [f"b.{hashed}.x", f"b.{hashed}.y"]


def test_an_import_takes_the_importers_hash_and_the_exporters() -> None:
    """Observed on 2.14.10: `t.*` of `EXP` imported into `IMP` to this `to` delivers `t.a` as
    `x.7bLjePac.6bnb23H0.a`."""
    destination = "x.{{account-hash()}}.{{account-hash-import()}}.$1"
    profile = for_version("2.14.10")
    transform = compile_in("stream-import", "t.*", destination, profile, accounts=("IMP", "EXP"))
    assert transform.apply("t.a") == "x.7bLjePac.6bnb23H0.a"
    assert set(transform.functions) >= {"account-hash", "account-hash-import"}
    with pytest.raises(FunctionNotAvailableError):
        compile_in(
            "stream-import", "t.a", "x.{{account-hash-leaf-remote()}}", profile, accounts=("IMP", "EXP")
        )
    with pytest.raises(WrongArgumentCountError):
        compile_in(
            "service-import", "t.*", "x.{{account-hash-import(1)}}.$1", profile, accounts=("IMP", "EXP")
        )
    with pytest.raises(MappingError):  # without the accounts, as where the transform engine meets them
        compile_in("stream-import", "t.*", destination, profile)
