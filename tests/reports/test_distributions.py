"""reports.distributions: partition distributions and weighted shares from grouped counts."""

from __future__ import annotations

import math

import pytest

from nats_conformance.records.aggregates import BucketCount, WeightedCount
from nats_conformance.records.releases import Release
from nats_conformance.records.schema import DELIVERED
from nats_conformance.records.schema import LOST as LOST_OUTCOME
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.reports.distributions import (
    ELSEWHERE,
    LOST,
    UNCHANGED,
    expected_shares,
    partition_distributions,
    weighted_shares,
)

R = Release("nats-server", "2.10.27")


def weighted_list(*entries: tuple[str, int], cluster: str = "") -> tuple[WeightedDestination, ...]:
    items = [WeightedDestination(d, w) for d, w in entries]
    if cluster:
        items.append(WeightedDestination("c.only", 100, cluster))
    return tuple(items)


def test_partition_distribution_of_one_mapping() -> None:
    buckets = [
        BucketCount(R, "p.*", "p.{{partition(3,1)}}", 3, b, n)
        for b, n in ((None, 2), (0, 10), (1, 20), (2, 30))
    ]
    (item,) = partition_distributions(buckets)
    assert item.counts == {0: 10, 1: 20, 2: 30}
    assert item.dense() == [10, 20, 30]
    assert (item.keys, item.outside) == (60, 2)
    assert item.fit is not None
    assert item.fit.statistic == pytest.approx(10.0)
    assert item.fit.p_value == pytest.approx(math.exp(-5))
    assert item.ratio == 3.0


def test_partition_distributions_are_per_release_and_mapping() -> None:
    other = Release("nats-server", "2.9.25")
    buckets = [
        BucketCount(R, "p.*", "d1", 2, 0, 5),
        BucketCount(other, "p.*", "d1", 2, 1, 5),
        BucketCount(R, "p.*", "d2", 2, 1, 7),
    ]
    found = {(d.release.version, d.destination): d.dense() for d in partition_distributions(buckets)}
    assert found == {("2.10.27", "d1"): [5, 0], ("2.9.25", "d1"): [0, 5], ("2.10.27", "d2"): [0, 7]}


def test_expected_shares_with_the_remainder_lost() -> None:
    shares, labels = expected_shares("w.s", weighted_list(("w.a", 60), ("w.b", 30)))
    assert shares == {0: 0.6, 1: 0.3, LOST: pytest.approx(0.1), UNCHANGED: 0.0, ELSEWHERE: 0.0}
    assert labels[UNCHANGED] == "w.s (unchanged)"


def test_expected_shares_with_the_remainder_lost_when_the_source_is_listed() -> None:
    shares, _ = expected_shares("foo.loss.>", weighted_list(("foo.loss.>", 50)))
    assert shares == {0: 0.5, LOST: 0.5, UNCHANGED: 0.0, ELSEWHERE: 0.0}


def test_expected_shares_leave_cluster_scoped_entries_out() -> None:
    shares, _ = expected_shares("w.s", weighted_list(("w.a", 100), cluster="east"))
    assert shares[0] == 1.0
    assert 1 not in shares
    assert shares[UNCHANGED] == 0.0


def test_lists_with_a_weight_above_100_are_refused() -> None:
    with pytest.raises(ValueError, match="weight"):
        expected_shares("w.s", weighted_list(("a", 140)))


def test_weighted_shares_with_intervals_and_loss_rate() -> None:
    text = weighted_list(("w.l", 50))
    (item,) = weighted_shares(
        [
            WeightedCount(R, "w.l", text, 0, DELIVERED, 40),
            WeightedCount(R, "w.l", text, None, LOST_OUTCOME, 60),
        ]
    )
    assert item.messages == 100
    assert item.loss_rate == 0.6
    by = {share.category: share for share in item.shares}
    assert set(by) == {0, LOST}
    assert (by[0].expected, by[0].count, by[0].observed) == (0.5, 40, 0.4)
    # Wilson 99.9 % of 60/100: (0.436790, 0.743664), which holds 0.5; of 40/100 its mirror image
    assert (by[LOST].low, by[LOST].high) == (
        pytest.approx(0.436790, abs=1e-5),
        pytest.approx(0.743664, abs=1e-5),
    )
    assert (by[0].low, by[0].high) == (pytest.approx(0.256336, abs=1e-5), pytest.approx(0.563210, abs=1e-5))
    assert item.consistent


def test_weighted_shares_flag_loss_and_strays_where_the_list_allows_none() -> None:
    text = weighted_list(("w.a", 100))
    counts = [
        WeightedCount(R, "w.s", text, 0, DELIVERED, 900),
        WeightedCount(R, "w.s", text, None, LOST_OUTCOME, 60),  # lost: a diverging case
        WeightedCount(R, "w.s", text, None, DELIVERED, 40),  # delivered somewhere impossible
    ]
    (item,) = weighted_shares(counts)
    by = {share.category: share for share in item.shares}
    assert {c: (s.expected, s.count) for c, s in by.items()} == {
        0: (1.0, 900),
        LOST: (0.0, 60),
        ELSEWHERE: (0.0, 40),
    }
    assert item.loss_rate == 0.06
    assert not by[LOST].consistent
    assert not item.consistent


def test_weighted_shares_of_an_impossible_list_say_why() -> None:
    (item,) = weighted_shares([WeightedCount(R, "w.s", weighted_list(("a", 140)), 0, DELIVERED, 10)])
    assert "weight" in item.problem
    assert not item.consistent
    assert [share.label for share in item.shares] == ["entry 0"]
