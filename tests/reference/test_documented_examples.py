"""Every worked example of the mapping and subject documents, as a test (ground truth)."""

from __future__ import annotations

import pytest

from nats_conformance.reference import (
    WeightedDestination,
    compile_transform,
    compile_weighted,
    is_valid_publish_subject,
    is_valid_subject,
    matches,
)

W = WeightedDestination


# https://docs.nats.io/nats-concepts/subject_mapping, "Simple Mapping"
def test_simple_mapping_foo_to_bar() -> None:
    assert compile_transform("foo", "bar").apply("foo") == "bar"


# "Subject Token Reordering"
@pytest.mark.parametrize(("subject", "expected"), [("bar.a.b", "baz.b.a"), ("bar.one.two", "baz.two.one")])
def test_token_reordering(subject: str, expected: str) -> None:
    transform = compile_transform("bar.*.*", "baz.{{wildcard(2)}}.{{wildcard(1)}}")
    assert transform.apply(subject) == expected


def test_legacy_dollar_notation_reorders_like_wildcard() -> None:
    assert compile_transform("bar.*.*", "baz.$2.$1").apply("bar.a.b") == "baz.b.a"


# "Splitting Tokens" and "Slicing Tokens"
@pytest.mark.parametrize(
    ("destination", "subject", "expected"),
    [
        ("{{split(1,-)}}", "foo-bar", "foo.bar"),
        ("{{split(1,--)}}", "foo--bar", "foo.bar"),
        ("{{splitfromleft(1,4)}}", "1234567", "1234.567"),
        ("{{splitfromright(1,4)}}", "1234567", "123.4567"),
        ("{{slicefromleft(1,2)}}", "1234567", "12.34.56.7"),
        ("{{slicefromright(1,2)}}", "1234567", "1.23.45.67"),
        # "the upper camel case on all subject mapping function names is optional"
        ("{{SplitFromLeft(1,4)}}", "1234567", "1234.567"),
        ("{{SliceFromRight(1,2)}}", "1234567", "1.23.45.67"),
    ],
)
def test_split_and_slice_examples(destination: str, subject: str, expected: str) -> None:
    assert compile_transform("*", destination).apply(subject) == expected


# "Deterministic Subject token Partitioning", first table
@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("neworders.customerid1", "neworders.customerid1.0"),
        ("neworders.customerid2", "neworders.customerid2.2"),
        ("neworders.customerid3", "neworders.customerid3.1"),
        ("neworders.customerid4", "neworders.customerid4.2"),
        ("neworders.customerid5", "neworders.customerid5.1"),
        ("neworders.customerid6", "neworders.customerid6.0"),
    ],
)
def test_partition_table_neworders(subject: str, expected: str) -> None:
    transform = compile_transform("neworders.*", "neworders.{{wildcard(1)}}.{{partition(3,1)}}")
    assert transform.apply(subject) == expected


# second table: partition(10,1,2)
@pytest.mark.parametrize(
    ("subject", "expected"),
    [("foo.1.a", "foo.1.a.1"), ("foo.1.b", "foo.1.b.0"), ("foo.2.b", "foo.2.b.9"), ("foo.2.a", "foo.2.a.2")],
)
def test_partition_table_composite_key(subject: str, expected: str) -> None:
    transform = compile_transform("foo.*.*", "foo.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(10,1,2)}}")
    assert transform.apply(subject) == expected


def test_partition_hint_mapping_gives_five_partitions_of_the_form_foo_star_star_n() -> None:
    transform = compile_transform("foo.*.*", "foo.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(5,1,2)}}")
    outputs = {transform.apply(f"foo.k{i}.v{j}") for i in range(20) for j in range(20)}
    assert {o.rsplit(".", 1)[1] for o in outputs} == {"0", "1", "2", "3", "4"}
    assert all(o.startswith("foo.k") and o.count(".") == 3 for o in outputs)


def test_cli_example_partition_3_is_valid() -> None:
    transform = compile_transform("foo.*.*", "foo.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(3,1,2)}}")
    assert transform.functions == ("wildcard", "partition")
    assert transform.apply("foo.1.a").rsplit(".", 1)[1] in {"0", "1", "2"}


# "Weighted Mappings" (distributions over 100 draws)
def test_weighted_all_to_v1() -> None:
    mapping = compile_weighted("myservice.requests", [W("myservice.requests.v1", 100)])
    assert mapping.expected_distribution() == {"myservice.requests.v1": 1.0}
    assert {mapping.apply("myservice.requests", d) for d in range(100)} == {"myservice.requests.v1"}


def test_weighted_canary_98_2() -> None:
    mapping = compile_weighted(
        "myservice.requests", [W("myservice.requests.v1", 98), W("myservice.requests.v2", 2)]
    )
    assert mapping.expected_distribution() == {"myservice.requests.v1": 0.98, "myservice.requests.v2": 0.02}
    outputs = [mapping.apply("myservice.requests", d) for d in range(100)]
    assert outputs.count("myservice.requests.v2") == 2
    assert outputs.count("myservice.requests.v1") == 98


def test_weighted_traffic_shaping_80_20_with_dollar() -> None:
    mapping = compile_weighted(
        "myservice.requests.*",
        [W("myservice.requests.$1", 80), W("myservice.requests.fail.$1", 20)],
    )
    outputs = [mapping.apply("myservice.requests.x", d) for d in range(100)]
    assert outputs.count("myservice.requests.x") == 80
    assert outputs.count("myservice.requests.fail.x") == 20


def test_artificial_loss_50_percent_of_foo_loss() -> None:
    mapping = compile_weighted("foo.loss.>", [W("foo.loss.>", 50)])
    assert mapping.expected_distribution() == {"foo.loss.>": 0.5, None: 0.5}
    outputs = [mapping.apply("foo.loss.a", d) for d in range(100)]
    assert outputs.count(None) == 50
    assert outputs.count("foo.loss.a") == 50


def test_split_and_loss_example_the_remaining_two_percent_is_lost() -> None:
    """ "the remaining 2% is 'lost'" (servers deliver it unchanged: weighted-remainder-not-lost)."""
    mapping = compile_weighted(
        "myservice.requests", [W("myservice.requests.v3", 90), W("myservice.requests.v3.fail", 8)]
    )
    assert mapping.expected_distribution() == {
        "myservice.requests.v3": 0.90,
        "myservice.requests.v3.fail": 0.08,
        None: 0.02,
    }
    assert [mapping.apply("myservice.requests", d) for d in range(100)].count(None) == 2


# https://docs.nats.io/nats-concepts/subjects
@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        ("time.*.east", "time.us.east", True),
        ("time.*.east", "time.eu.east", True),
        ("time.New*.east", "time.NewYork.east", False),  # `*` never matches inside a token
        ("time.us.>", "time.us.east", True),
        ("time.us.>", "time.us.east.atlanta", True),
        ("time.us.*", "time.us.east", True),
        ("time.us.*", "time.us.east.atlanta", False),
        ("*.*.east.>", "time.us.east.atlanta", True),
        (">", "time.us.east.atlanta", True),
        ("time.us.>", "time.us", False),  # `>` needs at least one token
    ],
)
def test_wildcard_examples(pattern: str, subject: str, expected: bool) -> None:
    assert matches(pattern, subject) is expected


@pytest.mark.parametrize(
    "subject",
    [
        "time.us",
        "time.us.east",
        "time.us.east.atlanta",
        "time.eu.east",
        "time.eu.east.warsaw",
        "time.us2.east1",
        "time.new-york",
        "time.SanFrancisco",
        "factory1.tools.group42.unit17",
        "service.deploy.server-acme.app123",
        "orders.online.store123.order171711",
        "location.Malmö",  # deprecated but allowed (UTF-8 is supported)
        "$location.Stockholm",
        "_Subjects_.mysubject",
    ],
)
def test_documented_good_and_deprecated_names_are_valid_literal_subjects(subject: str) -> None:
    assert is_valid_subject(subject)
    assert is_valid_publish_subject(subject)


@pytest.mark.parametrize("subject", ["all*data", "time.us east", "time..us", "time.us.", "time.>.us"])
def test_documented_forbidden_characters_are_invalid(subject: str) -> None:
    assert not is_valid_subject(subject)


@pytest.mark.parametrize("subject", ["time.*.east", "time.us.>", "*.*.east.>", ">"])
def test_wildcard_subjects_are_valid_but_not_publishable(subject: str) -> None:
    assert is_valid_subject(subject)
    assert not is_valid_publish_subject(subject)
