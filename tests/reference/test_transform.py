"""Transform compilation and application: error kinds and the behaviour observed on live releases."""

from __future__ import annotations

import random

import pytest

from nats_conformance.reference import (
    MappingError,
    SubjectMismatchError,
    compile_transform,
    for_version,
)

NEWEST_LINES = ["2.10", "2.11", "2.12", "2.14"]
ALL_OBSERVED = ["2.2.6", "2.8.4", "2.9.25", "2.10.27", "2.11.17", "2.12.15", "2.14.5"]


@pytest.mark.parametrize(
    ("source", "destination", "kind"),
    [
        ("foo bar.*", "bar.$1", "invalid-source"),
        ("foo..*", "bar.$1", "invalid-source"),
        ("foo.>.x", "bar.>", "invalid-source"),
        ("foo.*", "bar.*", "invalid-destination"),
        ("foo.>", "bar", "invalid-destination"),
        ("foo.*", "bar.>", "invalid-destination"),
        ("foo.*", "bar baz.$1", "invalid-destination"),
        ("foo.*", "bar..$1", "invalid-destination"),
        ("foo.*", "bar.{{nope(1)}}", "unknown-function"),
        ("foo.*", "bar.{{WILDCARD(1)}}", "unknown-function"),
        ("foo.*", "bar.{{wildcard()}}", "wrong-argument-count"),
        ("foo.*", "bar.{{wildcard(1,2)}}", "wrong-argument-count"),
        ("foo.*", "bar.{{splitFromLeft(1)}}", "wrong-argument-count"),
        ("foo.*", "bar.{{split(1,-,x)}}", "wrong-argument-count"),
        ("foo.*", "bar.{{random(1,2)}}", "wrong-argument-count"),
        ("foo.*", "bar.{{wildcard(x)}}", "invalid-argument"),
        ("foo.*", "bar.{{partition(x,1)}}", "invalid-argument"),
        ("foo.*", "bar.{{partition()}}", "invalid-argument"),
        ("foo.*", "bar.{{split(1,a b)}}", "invalid-argument"),
        ("foo.*", "bar.{{splitFromLeft(1,4294967297)}}", "invalid-argument"),
        ("foo.*", "bar.{{partition(2147483648,1)}}", "invalid-argument"),
        ("foo.*", "bar.{{wildcard(2)}}", "wildcard-index-out-of-range"),
        ("foo.*", "bar.{{partition(3,1,2)}}", "wildcard-index-out-of-range"),
        ("foo", "bar.{{wildcard(1)}}", "wildcard-index-out-of-range"),
        ("foo", "bar.$1", "wildcard-index-out-of-range"),
        ("foo.>", "bar.{{partition(3,1)}}.>", "wildcard-index-out-of-range"),
    ],
)
def test_error_kinds_on_newest(source: str, destination: str, kind: str) -> None:
    with pytest.raises(MappingError) as info:
        compile_transform(source, destination)
    assert info.value.kind == kind
    assert "\n" not in str(info.value)


# acceptance by the reference (True = accepted), versions as in ALL_OBSERVED; observed with
# `nats-server -t -c` unless a comment names the expectation that lists where servers differ
ACCEPTANCE = [
    ("foo.*.*", "bar.{{wildcard(1)}}", [False, False, False, True, True, True, True]),
    ("foo.*.*", "bar.$1.$1", [True] * 7),
    ("foo.*.*", "bar.$1", [False, False, False, True, True, True, True]),
    ("foo.*", "bar.{{Wildcard(1)}}", [False, False, True, True, True, True, True]),
    ("foo.*", "bar.{{WILDCARD(1)}}", [False] * 7),
    # left/right: valid from 2.10.16 (its release notes); every server rejects them (expectations.toml,
    # left-right-rejected-in-mappings), so this row is the reference's rule, not an observation.
    ("foo.*", "bar.{{left(1,2)}}", [False, False, False, True, True, True, True]),
    ("foo.*", "bar.{{random(3)}}", [False, False, False, False, False, True, True]),
    ("foo", "bar.{{random(3)}}", [True, True, False, False, False, True, True]),
    # Before 2.10 servers use the destination of a source without `*` verbatim, unparsed; the reference
    # parses it (expectations: literal-source-destination-not-parsed, 2.2-2.9).
    ("foo", "bar.{{partition(3)}}", [True, True, False, False, False, True, True]),
    ("foo.*", "bar.{{partition(3)}}", [False, False, False, False, False, True, True]),
    # index 1 of a source without `*` is out of range; servers accept it before 2.10, and partition's
    # from 2.12 (expectations: literal-source-destination-not-parsed, partition-indexes-of-literal-source)
    ("foo", "bar.{{partition(3,1)}}", [True, False, False, False, False, False, False]),
    ("foo", "bar.{{wildcard(1)}}", [True, False, False, False, False, False, False]),
    # wildcards are numbered from 1; every server accepts index 0 (expectations: wildcard-index-below-one)
    ("foo.*", "bar.{{wildcard(0)}}", [False] * 7),
    ("foo.*", "bar.$0", [False] * 7),
    ("foo.*", "bar.{{ wildcard( 1 ) }}", [False, False, True, True, True, True, True]),
    ("foo.*", "bar.{{partition(3, 1)}}", [False, False, True, True, True, True, True]),
    ("foo.*", "bar.{{nope(1)}}", [False] * 7),
    ("foo.*", "bar.{{split(1,-)}}", [False, False, True, True, True, True, True]),
    ("foo.>", "bar.{{partition(3)}}.>", [True, True, False, False, False, True, True]),
    ("foo.>", "bar.{{random(3)}}.>", [True, True, False, False, False, True, True]),
    ("foo.>", "bar.>", [True] * 7),
    ("foo.>", "bar", [False] * 7),
    ("foo.*", "bar.*", [False] * 7),
    ("foo.*", "bar baz.$1", [False] * 7),
    ("foo.*", "bar.{{wildcard(2)}}", [False] * 7),
    ("foo.*", "bar.{{wildcard()}}", [False] * 7),
    # at least one partition; servers accept 0 and negative counts (expectations: partition-count-below-one)
    ("foo.*", "bar.{{partition(0,1)}}", [False] * 7),
    ("foo.*", "bar.{{partition(-3,1)}}", [False] * 7),
    ("foo.*", "bar.{{random(0)}}", [False, False, False, False, False, True, True]),
    ("foo.*", "bar.{{splitFromLeft(1,4294967297)}}", [False, False, True, True, False, False, False]),
    ("foo.*", "bar.$1a", [True, False, False, True, True, True, True]),
    # 2.10+ accept an empty destination (and crash on publish): a finding, not the reference's rule.
    ("foo.*", "", [False] * 7),
    ("foo.*", "x3.{{wildcard(-1)}}", [False] * 7),
]


@pytest.mark.parametrize(("source", "destination", "accepted"), ACCEPTANCE)
def test_acceptance_matches_observed_releases(source: str, destination: str, accepted: list[bool]) -> None:
    got = []
    for version in ALL_OBSERVED:
        try:
            compile_transform(source, destination, for_version(version))
        except MappingError:
            got.append(False)
        else:
            got.append(True)
    assert got == accepted


# outputs observed by publishing on live servers; None = mapping rejected by that release
OUTPUTS = [
    ("a4", "x4.{{partition(3)}}", "a4", ["x4.{{partition(3)}}"] * 2 + [None, None, None, "x4.0", "x4.0"]),
    ("a6.*.*", "x6.{{partition(1000)}}", "a6.b.c", [None] * 5 + ["x6.417"] * 2),
    ("a7", "x7.{{partition(1000,1)}}", "a7", ["x7.{{partition(1000,1)}}"] + [None] * 6),
    ("a8.*", "x8.{{split(1,)}}", "a8.abc", [None, None] + ["x8.a.b.c"] * 5),
    ("a9.*", "x9.{{split(1,-)}}.z", "a9.-a--b-", [None, None] + ["x9.a.b.z"] * 5),
    ("a9.*", "x9.{{split(1,-)}}.z", "a9.-", [None, None] + ["x9..z"] * 5),
    ("b5", "y5.{{wildcard(1)}}", "b5", ["y5.{{wildcard(1)}}"] + [None] * 6),
    ("b6.*", "y6.{{Wildcard(1)}}.$1", "b6.q", ["y6.{{Wildcard(1)}}.q"] * 2 + ["y6.q.q"] * 5),
    (
        "b7.>",
        "y7.{{partition(3)}}.>",
        "b7.q.r",
        ["y7.{{partition(3)}}.q.r"] * 2 + [None] * 3 + ["y7.0.q.r"] * 2,
    ),
    ("b8.*.>", "y8.$1.>", "b8.a.b.c", ["y8.a.b.c"] * 7),
    (
        "b9.*",
        "y9.{{sliceFromRight(1,2)}}.{{sliceFromLeft(1,2)}}.{{splitFromRight(1,4)}}",
        "b9.1234567",
        [None, None] + ["y9.1.23.45.67.12.34.56.7.123.4567"] * 5,
    ),
    (
        "c2.*",
        "c2x.{{partition(1000,1,1)}}.$1",
        "c2.ab",
        ["c2x.{{partition(1000,1,1)}}.ab"] + ["c2x.913.ab"] * 6,
    ),
    (
        "c4.*",
        "c4x.{{SplitFromLeft(1,2)}}.{{slicefromleft(1,2)}}",
        "c4.abcde",
        [None, None] + ["c4x.ab.cde.ab.cd.e"] * 5,
    ),
    ("c5.*", "c5x.{{ wildcard( 1 ) }}.{{partition(1000, 1)}}", "c5.zz", [None, None] + ["c5x.zz.373"] * 5),
    ("a5.*", "x5.{{splitFromLeft(1,1)}}", "a5.\u00e9a", [None, None] + ["x5.\udcc3.\udca9a"] * 5),
]


@pytest.mark.parametrize(("source", "destination", "subject", "expected"), OUTPUTS)
def test_outputs_match_observed_releases(
    source: str, destination: str, subject: str, expected: list[str | None]
) -> None:
    got: list[str | None] = []
    for version in ALL_OBSERVED:
        try:
            transform = compile_transform(source, destination, for_version(version))
        except MappingError:
            got.append(None)
        else:
            got.append(transform.apply(subject))
    assert got == expected


def test_byte_cut_output_encodes_to_the_bytes_the_server_sends() -> None:
    out = compile_transform("a.*", "x.{{splitFromLeft(1,1)}}").apply("a.\u00e9a")
    assert out.encode("utf-8", "surrogateescape") == b"x.\xc3.\xa9a"


@pytest.mark.parametrize("count", ["0", "-3", "-4294967296"])
@pytest.mark.parametrize("version", ["2.8.4", "2.9.25", "2.12.15"])
def test_a_partition_count_below_one_is_invalid(version: str, count: str) -> None:
    # "a partition number (between 0 and number of partitions-1)": there is at least one partition.
    with pytest.raises(MappingError) as info:
        compile_transform("p0.*", f"q0.{{{{partition({count},1)}}}}", for_version(version))
    assert info.value.kind == "invalid-argument"


def test_a_count_of_2_to_the_32_divides_by_itself_before_2_12() -> None:
    # The document's range, 0 to the count - 1; servers before 2.12 cut the count to 32 bits.
    transform = compile_transform("p.*", "q.{{partition(4294967299,1)}}", for_version("2.10"))
    assert transform.apply("p.abc") == "q.440920331"


def test_random_zero_gives_zero() -> None:
    transform = compile_transform("p.*", "q.{{random(0)}}", for_version("2.12"))
    assert transform.apply("p.a") == "q.0"


@pytest.mark.parametrize("version", ["2.9.25", "2.14.5"])
def test_an_empty_destination_is_invalid(version: str) -> None:
    # 2.10+ accept it and crash on publish: a finding (expectations.toml), not the reference's rule.
    with pytest.raises(MappingError) as info:
        compile_transform("e.*", "", for_version(version))
    assert info.value.kind == "invalid-destination"


def test_left_and_right_exist_in_the_engine_from_2_10_16() -> None:
    transform = compile_transform("a.*", "b.{{left(1,2)}}.{{right(1,2)}}", engine_only=True)
    assert transform.apply("a.abcde") == "b.ab.de"
    with pytest.raises(MappingError) as info:
        compile_transform("a.*", "b.{{left(1,2)}}", for_version("2.10.14"), engine_only=True)
    assert info.value.kind == "unsupported-function"


@pytest.mark.parametrize("version", ["2.9.25", "2.14.5"])
def test_the_engine_does_not_check_whitespace_in_a_source(version: str) -> None:
    # The bare engine's own source check (subjectInfo) looks at empty tokens and '>' only; the account
    # mapping refuses the same source as an invalid subject.
    engine = compile_transform("*. ", "{{split(1,-)}}", for_version(version), engine_only=True)
    assert engine.apply("a-b. ") == "a.b"
    with pytest.raises(MappingError) as info:
        compile_transform("*. ", "{{split(1,-)}}", for_version(version))
    assert info.value.kind == "invalid-source"
    with pytest.raises(MappingError) as info:
        compile_transform("a..b", "x", for_version(version), engine_only=True)
    assert info.value.kind == "invalid-source"


@pytest.mark.parametrize("subject", ["*", ">", "a..b", "a.*", ""])
def test_the_engine_maps_only_literal_subjects(subject: str) -> None:
    # The engine's Match refuses a subject with an empty or a wildcard token (isValidLiteralSubject);
    # an account mapping maps a published '*' token at a '*' position (observed).
    engine = compile_transform("a.>", "x.>", engine_only=True)
    with pytest.raises(SubjectMismatchError):
        engine.apply(f"a.{subject}")
    assert compile_transform("a.*", "x.$1").apply("a.*") == "x.*"
    with pytest.raises(SubjectMismatchError):
        compile_transform("a.*", "x.$1", engine_only=True).apply("a.*")


def test_the_engine_maps_any_subject_through_full_wildcard_to_full_wildcard() -> None:
    # The engine's Match returns the subject unchanged, unchecked, for '>' -> '>'.
    assert compile_transform(">", ">", engine_only=True).apply("a..*") == "a..*"
    with pytest.raises(SubjectMismatchError):
        compile_transform(">", ">").apply("a..*")


def test_apply_rejects_a_subject_that_does_not_match_the_source() -> None:
    transform = compile_transform("foo.*", "bar.$1")
    for subject in ["foo", "foo.a.b", "baz.a"]:
        with pytest.raises(SubjectMismatchError):
            transform.apply(subject)
    with pytest.raises(ValueError, match="does not match"):
        transform.apply("x.y")


def test_full_wildcard_tail_is_appended() -> None:
    transform = compile_transform("foo.*.>", "bar.{{wildcard(1)}}.>")
    assert transform.apply("foo.a.b.c.d") == "bar.a.b.c.d"
    assert compile_transform(">", ">").apply("x.y") == "x.y"
    with pytest.raises(SubjectMismatchError):
        transform.apply("foo.a")


def test_functions_lists_canonical_names_in_first_use_order() -> None:
    transform = compile_transform("a.*.*", "{{partition(3,1)}}.$2.{{SplitFromLeft(1,1)}}.{{wildcard(1)}}")
    assert transform.functions == ("partition", "wildcard", "splitFromLeft")
    assert not transform.is_random


def test_random_uses_the_given_rng_and_accepts_every_possible_output() -> None:
    transform = compile_transform("r.*", "s.{{random(4)}}.$1")
    assert transform.is_random
    outputs = {transform.apply("r.x", rng=random.Random(seed)) for seed in range(200)}
    assert outputs == {"s.0.x", "s.1.x", "s.2.x", "s.3.x"}
    assert all(transform.accepts("r.x", o) for o in outputs)
    for wrong in ["s.4.x", "s.01.x", "s.-1.x", "s.1.y", "s.1", "s.a.x"]:
        assert not transform.accepts("r.x", wrong)


def test_every_output_of_a_random_zero_beside_another_random_is_accepted() -> None:
    """random(0) gives 0 without a draw: the random tokens after it are checked against their own counts
    (a 100,000-case campaign judged 0.4 of {{random(0)}}.{{random(5)}} wrong against random(0)'s count)."""
    transform = compile_transform("r.*", "{{random(0)}}.{{random(5)}}.{{random(2)}}")
    outputs = {transform.apply("r.x", rng=random.Random(seed)) for seed in range(300)}
    assert outputs == {f"0.{i}.{j}" for i in range(5) for j in range(2)}
    assert all(transform.accepts("r.x", o) for o in outputs)
    for wrong in ["1.0.0", "0.5.0", "0.0.2"]:
        assert not transform.accepts("r.x", wrong)


def test_negative_random_count_draws_below_its_magnitude() -> None:
    transform = compile_transform("r.*", "s.{{random(-5)}}")
    outputs = {transform.apply("r.x", rng=random.Random(seed)) for seed in range(300)}
    assert outputs == {f"s.{i}" for i in range(5)}


def test_accepts_for_deterministic_transforms_compares_exactly() -> None:
    transform = compile_transform("foo.*", "bar.$1")
    assert transform.accepts("foo.x", "bar.x")
    assert not transform.accepts("foo.x", "bar.y")


def test_repr_is_a_replay() -> None:
    transform = compile_transform("foo.*", "bar.$1", for_version("2.9.25"))
    assert repr(transform) == "compile_transform('foo.*', 'bar.$1', for_version('2.9.25'))"


@pytest.mark.parametrize(
    "literal", ["{x}", "'q'", '"q"', "a\\b", "{{}}", "}}", "f'{1}'", "%s", "_c0", "t[0]"]
)
def test_literal_tokens_are_copied_verbatim(literal: str) -> None:
    """The specialised apply never splices mapping text into code: odd literals come out unchanged."""
    transform = compile_transform("foo.*.>", f"{literal}.$1.{literal}.>")
    assert transform.apply("foo.x.y.z") == f"{literal}.x.{literal}.y.z"
    assert compile_transform(literal, f"{literal}.x").apply(literal) == f"{literal}.x"


@pytest.mark.parametrize(
    ("source", "subject", "maps"),
    [
        ("foo.*", "foo.a", True),
        ("foo.*", "foo.*", True),
        ("foo.*", "foo.>", False),
        ("foo.*", "foo.", False),
        ("foo.*.>", "foo.a.>", True),
        ("foo.*.>", "foo..b", False),
        ("foo.*.>", "foo.a.b.", False),
        ("foo.>", "foo.a..b", False),
    ],
)
def test_a_source_wildcard_stands_for_one_non_empty_token(source: str, subject: str, maps: bool) -> None:
    # `*` is one token and `>` one or more; observed on 2.9.25 and 2.14.5: `foo.>` published is
    # delivered unmapped by a `foo.*` mapping, `foo.*` is mapped.
    destination = ("x.$1" if "*" in source else "x") + (".>" if source.endswith(">") else "")
    transform = compile_transform(source, destination)
    assert transform.matches(subject) is maps
    if maps:
        transform.apply(subject)
    else:
        with pytest.raises(SubjectMismatchError):
            transform.apply(subject)
