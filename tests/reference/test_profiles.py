"""Release profiles: version parsing and the rules of each release line."""

from __future__ import annotations

import dataclasses

import pytest

from nats_conformance.reference import (
    NEWEST,
    RELEASE_LINES,
    UnknownVersionError,
    Version,
    WildcardsNotUsedError,
    compile_transform,
    for_version,
)
from nats_conformance.reference.profiles import nearest_profile


@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ("2.9.10", Version(2, 9, 10)),
        ("2.10", Version(2, 10, 29)),
        ("v2.14.5", Version(2, 14, 5)),
        (" 2.2.0 ", Version(2, 2, 0)),
    ],
)
def test_for_version_accepts_documented_forms(spec: str, version: Version) -> None:
    assert for_version(spec).version == version


@pytest.mark.parametrize(
    "spec", ["", "latest", "2", "1.4.0", "3.0", "2.13", "2.14.99", "2.15.4", "2.9.x", "v"]
)
def test_for_version_rejects_unknown_with_one_line(spec: str) -> None:
    with pytest.raises(UnknownVersionError) as info:
        for_version(spec)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("spec", "profile"),
    [
        ("2.14.5", "2.14.5"),
        ("2.14.6", "2.14.6"),
        ("2.14.10", "2.14.10"),
        ("2.14.11", "2.14.10"),
        ("2.14.6-RC.1", "2.14.6"),
        ("v2.14.6-0.20260821135011-1787eee035cf", "2.14.5"),
        ("2.15.0-dev", "2.15.0"),
        ("2.15.3", "2.15.3"),
        ("2.16.0", "2.15.3"),
        ("3.0.0", "2.15.3"),
        ("2.13.0", "2.12.15"),
        ("2.12.0-RC.1", "2.12.0"),
        ("2.11.8-0.20250101123456-abcdef123456", "2.11.7"),
        ("2.10", "2.10.29"),
        ("2.6.9", "2.6.6"),
    ],
)
def test_the_nearest_known_release_at_or_below_judges_an_unknown_one(spec: str, profile: str) -> None:
    assert nearest_profile(spec).name == profile


def test_a_pseudo_version_takes_its_base_release_rules() -> None:
    assert nearest_profile("2.11.8-0.20250101123456-abcdef123456").int_width == "truncate-32"
    assert nearest_profile("2.11.8").int_width == "check-32"


@pytest.mark.parametrize("spec", ["", "latest", "1.4.0", "2.1.9", "2.1.9-RC.1"])
def test_nearest_profile_refuses_what_no_release_covers(spec: str) -> None:
    with pytest.raises(UnknownVersionError) as info:
        nearest_profile(spec)
    assert "\n" not in str(info.value)


def test_newest_is_the_last_release_line() -> None:
    assert NEWEST.version == RELEASE_LINES[-1].newest == Version(2, 15, 3)
    assert for_version("2.15") == NEWEST
    assert for_version("2.14").version == Version(2, 14, 10)


def test_profiles_are_frozen_and_slotted() -> None:
    profile = for_version("2.9")
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.casing = "lower"  # type: ignore[misc]
    assert not hasattr(profile, "__dict__")


@pytest.mark.parametrize(
    ("spec", "functions"),
    [
        ("2.2.6", set()),
        ("2.8.0", {"wildcard", "partition"}),
        (
            "2.9.0",
            {
                "wildcard",
                "partition",
                "split",
                "splitFromLeft",
                "splitFromRight",
                "sliceFromLeft",
                "sliceFromRight",
            },
        ),
        (
            "2.12.0",
            {
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
            },
        ),
    ],
)
def test_mapping_functions_follow_the_release_table(spec: str, functions: set[str]) -> None:
    assert for_version(spec).mapping_functions == functions


def test_left_right_from_2_10_16() -> None:
    assert "left" not in for_version("2.10.14").mapping_functions
    assert {"left", "right"} <= for_version("2.10.16").mapping_functions
    assert {"left", "right"} <= for_version("2.14").mapping_functions


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        ("2.2", "exact-count"),
        ("2.8", "per-token"),
        ("2.9.0", "per-token"),
        ("2.9.14", "per-token"),
        ("2.9.15", "per-index"),
        ("2.9", "per-index"),
        ("2.10", "none"),
        ("2.14", "none"),
    ],
)
def test_wildcard_usage_rule_by_release(spec: str, rule: str) -> None:
    assert for_version(spec).wildcard_usage == rule


@pytest.mark.parametrize(("spec", "accepted"), [("2.9.14", False), ("2.9.15", True)])
def test_a_partition_of_two_wildcards_uses_both_from_2_9_15(spec: str, accepted: bool) -> None:
    """Observed on every 2.9 patch: 2.9.0-2.9.14 count the partition token once."""
    profile = for_version(spec)
    try:
        compile_transform("a.*.*", "p.{{partition(3,1,2)}}", profile)
    except WildcardsNotUsedError:
        assert not accepted
    else:
        assert accepted


def test_casing_lower_in_2_8_initial_from_2_9() -> None:
    assert for_version("2.8").casing == "lower"
    assert for_version("2.9.0").casing == "initial"


def test_int_width_checked_from_2_11_8() -> None:
    assert for_version("2.11.7").int_width == "truncate-32"
    assert for_version("2.11.8").int_width == "check-32"


def test_repr_is_a_replay() -> None:
    assert repr(for_version("v2.9.25")) == "for_version('2.9.25')"
