"""One version type: parsing, semver precedence, lines, stability, one-line errors."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.reference import ConformanceError, InvalidVersionError, Version


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.14.5", Version(2, 14, 5)),
        ("v2.14.5", Version(2, 14, 5)),
        (" 2.14.5\n", Version(2, 14, 5)),
        ("2.10", Version(2, 10)),
        ("2.14.6-RC.1", Version(2, 14, 6, ("RC", "1"))),
        ("2.11.0-beta.2", Version(2, 11, 0, ("beta", "2"))),
        ("2.14.0-dev", Version(2, 14, 0, ("dev",))),
        ("v2.12.1-0.20250101123456-abcdef123456", Version(2, 12, 1, ("0", "20250101123456-abcdef123456"))),
        ("2.10.0+incompatible", Version(2, 10, 0, (), ("incompatible",))),
    ],
)
def test_documented_forms_parse(text: str, version: Version) -> None:
    assert Version.parse(text) == version


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("v2.14.5", "2.14.5"),
        ("2.10", "2.10"),
        ("2.14.6-RC.1", "2.14.6-RC.1"),
        ("v2.12.1-0.20250101123456-abcdef123456", "2.12.1-0.20250101123456-abcdef123456"),
        ("2.10.0+build.7", "2.10.0+build.7"),
    ],
)
def test_str_is_the_text_without_v(text: str, shown: str) -> None:
    assert str(Version.parse(text)) == shown
    assert Version.parse(str(Version.parse(text))) == Version.parse(text)


def test_order_follows_semver_precedence() -> None:
    texts = [
        "2.9.25",
        "2.10",
        "2.10.0-RC.1",
        "2.10.0",
        "2.10.16",
        "2.11.0-beta.2",
        "2.11.0-beta.11",
        "2.11.0-preview.2",
        "2.11.0",
        "2.12.1-0.20250101123456-abcdef123456",
        "2.12.1",
        "2.14.0-dev",
        "2.14.5",
        "2.14.6-RC.1",
        "2.14.6",
    ]
    versions = [Version.parse(text) for text in texts]
    assert all(earlier < later for earlier, later in pairwise(versions))
    assert Version.parse("2.11.0-RC.1") < Version.parse("2.11.0-beta.1")  # ASCII: upper case first
    assert Version.parse("1.0.0-alpha") < Version.parse("1.0.0-alpha.1") < Version.parse("1.0.0-alpha.beta")


def test_build_metadata_is_ignored_by_equality_and_order() -> None:
    built = Version.parse("2.10.0+a")
    assert built == Version.parse("2.10.0+b") == Version(2, 10, 0)
    assert hash(built) == hash(Version(2, 10, 0))
    assert not built < Version(2, 10, 0)


def test_line_stability_and_release() -> None:
    candidate = Version.parse("2.14.6-RC.1")
    assert candidate.line == Version(2, 14)
    assert str(candidate.line) == "2.14"
    assert candidate.release == Version(2, 14, 6)
    assert not candidate.is_stable
    assert not candidate.is_line
    assert Version.parse("2.14.5").is_stable
    assert Version.parse("2.14").is_line
    assert not Version.parse("2.14").is_stable
    assert not Version.parse("v2.12.1-0.20250101123456-abcdef123456").is_stable
    assert not Version.parse("2.14.0-dev").is_stable


@pytest.mark.parametrize(
    ("text", "base"),
    [
        ("v2.12.1-0.20250101123456-abcdef123456", "2.12.0"),
        ("v2.14.6-RC.1.0.20260821135011-1787eee035cf", "2.14.6-RC.1"),
        ("v2.0.0-20260821135011-1787eee035cf", "2.0.0-20260821135011-1787eee035cf"),
        ("2.14.6-RC.1", "2.14.6-RC.1"),
        ("2.14.6-0.dev", "2.14.6-0.dev"),
        ("2.14.5", "2.14.5"),
        ("2.10", "2.10"),
    ],
)
def test_a_pseudo_version_is_based_on_the_release_before_it(text: str, base: str) -> None:
    assert Version.parse(text).base == Version.parse(base)


def test_a_version_is_found_inside_text() -> None:
    assert Version.search("nats-server: v2.14.5") == Version(2, 14, 5)
    assert Version.search("nats-server: v2.14.6-RC.1\n") == Version(2, 14, 6, ("RC", "1"))
    assert Version.search("no version here") is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "v",
        "2",
        "latest",
        "2.x",
        "2.9.x",
        "02.1.0",
        "2.01.0",
        "2.1.00",
        "2.10-rc.1",
        "2.1.0-01",
        "2.1.0-",
        "V2.1.0",
    ],
)
def test_invalid_text_raises_one_typed_line(text: str) -> None:
    with pytest.raises(InvalidVersionError) as caught:
        Version.parse(text)
    assert isinstance(caught.value, ConformanceError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.kind == "invalid-version"
    assert "\n" not in str(caught.value)


def test_a_line_has_no_prerelease() -> None:
    with pytest.raises(InvalidVersionError):
        Version(2, 10, None, ("rc",))


numbers = st.integers(0, 30)
identifiers = st.one_of(
    st.integers(0, 30).map(str), st.text("abcRCZ-", min_size=1, max_size=4).filter(lambda s: not s.isdigit())
)
versions = st.one_of(
    st.builds(Version, numbers, numbers),
    st.builds(Version, numbers, numbers, numbers, st.lists(identifiers, max_size=3).map(tuple)),
)


@given(versions, versions)
def test_order_is_total_and_antisymmetric(a: Version, b: Version) -> None:
    assert (a < b) + (a == b) + (a > b) == 1
    assert (a <= b) == (not a > b)


@given(versions, versions, versions)
def test_order_is_transitive(a: Version, b: Version, c: Version) -> None:
    if a <= b <= c:
        assert a <= c


@given(versions)
def test_text_round_trips_and_stays_in_its_line(version: Version) -> None:
    assert Version.parse(str(version)) == version
    assert Version.parse(f"v{version}") == version
    assert version.line <= version
    assert version.line.is_line
    assert version.release <= Version(version.major, version.minor + 1)


@given(versions)
def test_a_prerelease_sorts_before_its_release(version: Version) -> None:
    if version.prerelease:
        assert version < version.release
        assert not version.is_stable
