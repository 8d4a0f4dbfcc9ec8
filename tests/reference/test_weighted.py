"""Weighted destinations: validation, selection by draw, distributions (the document's shares, the
observed selection order)."""

from __future__ import annotations

import pytest

from nats_conformance.reference import (
    MappingError,
    WeightedDestination,
    compile_weighted,
    for_version,
    parse_weight,
)

W = WeightedDestination


def test_selection_walks_ascending_weights_with_cumulative_sums() -> None:
    mapping = compile_weighted("s", [W("big", 70), W("small", 10), W("mid", 20)])
    chosen = [mapping.select(d) for d in range(100)]
    assert chosen[:10] == [W("small", 10)] * 10
    assert chosen[10:30] == [W("mid", 20)] * 20
    assert chosen[30:] == [W("big", 70)] * 70


def test_an_unaccounted_remainder_is_lost() -> None:
    mapping = compile_weighted("f.*", [W("g.$1", 90)])
    assert mapping.expected_distribution() == {"g.$1": 0.9, None: 0.1}
    assert mapping.apply("f.x", 89) == "g.x"
    assert mapping.apply("f.x", 90) is None


def test_listing_the_source_turns_the_remainder_into_loss() -> None:
    mapping = compile_weighted("w1", [W("w1a", 30), W("w1", 20)])
    assert mapping.expected_distribution() == {"w1": 0.2, "w1a": 0.3, None: 0.5}
    assert [mapping.apply("w1", d) for d in range(100)].count(None) == 50


def test_zero_weight_is_never_chosen_and_left_out_of_the_distribution() -> None:
    mapping = compile_weighted("w2", [W("w2a", 0), W("w2b", 100)])
    assert mapping.expected_distribution() == {"w2b": 1.0}
    assert {mapping.apply("w2", d) for d in range(100)} == {"w2b"}


def test_cluster_scoped_list_is_used_only_on_that_cluster() -> None:
    entries = [W("w3a", 30), W("w3b", 50, "east")]
    assert compile_weighted("w3", entries).expected_distribution() == {"w3a": 0.3, None: 0.7}
    assert compile_weighted("w3", entries, cluster="west").expected_distribution() == {"w3a": 0.3, None: 0.7}
    assert compile_weighted("w3", entries, cluster="east").expected_distribution() == {"w3b": 0.5, None: 0.5}


def test_a_server_whose_cluster_has_no_entries_loses_what_no_unscoped_entry_takes() -> None:
    """Only entries of another cluster: a server of this one uses the (empty) unscoped list, so every
    message is remainder, lost as the document's remainder is (servers deliver it unchanged,
    expectations.toml ``weighted-remainder-not-lost``)."""
    mapping = compile_weighted("w4.*", [W("w4a.$1", 40, "elsewhere")], cluster="nc")
    assert mapping.steps == ()
    assert mapping.expected_distribution() == {None: 1.0}
    assert mapping.apply("w4.x", 0) is None


def test_a_destination_may_appear_once_across_clusters() -> None:
    with pytest.raises(MappingError) as info:
        compile_weighted("w5", [W("w5a", 40, "east"), W("w5a", 40, "west")])
    assert info.value.kind == "duplicate-destination"


def test_cluster_totals_are_separate_from_2_10_and_shared_before() -> None:
    entries = [W("bar", 60), W("baz", 60, "x")]
    compile_weighted("foo", entries, for_version("2.10"))
    with pytest.raises(MappingError) as info:
        compile_weighted("foo", entries, for_version("2.9"))
    assert info.value.kind == "total-weight-exceeded"


@pytest.mark.parametrize(
    ("entries", "kind"),
    [
        ([W("bar", 60), W("baz", 50)], "total-weight-exceeded"),
        ([W("bar", 60), W("bar", 10)], "duplicate-destination"),
        ([W("bar", 101)], "invalid-weight"),
        ([W("bar", -1)], "invalid-weight"),
        ([W("bar.*", 10)], "invalid-destination"),
        ([W("bar.{{nope(1)}}", 10)], "unknown-function"),
    ],
)
def test_invalid_lists_raise_their_kind(entries: list[WeightedDestination], kind: str) -> None:
    with pytest.raises(MappingError) as info:
        compile_weighted("foo", entries)
    assert info.value.kind == kind


def test_invalid_source_is_reported_first() -> None:
    with pytest.raises(MappingError) as info:
        compile_weighted("foo bar", [W("x", 200)])
    assert info.value.kind == "invalid-source"


@pytest.mark.parametrize(("value", "weight"), [(50, 50), ("50", 50), ("50%", 50), (0, 0), ("100%", 100)])
def test_parse_weight_reads_integers_and_percent_text(value: object, weight: int) -> None:
    assert parse_weight(value) == weight


@pytest.mark.parametrize("value", [101, -1, "101%", "x%", "", True, 1.5, None, "5%%"])
def test_parse_weight_rejects_other_values(value: object) -> None:
    with pytest.raises(MappingError) as info:
        parse_weight(value)
    assert info.value.kind == "invalid-weight"


def test_draw_outside_0_99_is_a_value_error() -> None:
    mapping = compile_weighted("s", [W("d", 100)])
    with pytest.raises(ValueError, match="draw"):
        mapping.select(100)
    with pytest.raises(ValueError, match="draw"):
        mapping.apply("s", -1)


def test_distribution_sums_to_one_and_matches_draw_counts() -> None:
    mapping = compile_weighted("a.*", [W("b.$1", 33), W("c.$1", 33), W("d.$1", 1)])
    dist = mapping.expected_distribution()
    assert abs(sum(dist.values()) - 1) < 1e-12
    counts: dict[str | None, int] = {}
    for d in range(100):
        entry = mapping.select(d)
        key = None if entry is None else entry.destination
        counts[key] = counts.get(key, 0) + 1
    assert {k: v / 100 for k, v in counts.items()} == dist
