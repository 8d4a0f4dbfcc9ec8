"""reports.stats: chi-square of partition buckets, max/min ratio and Wilson intervals, worked by hand."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from nats_conformance.reports.stats import max_min_ratio, uniform_chi_square, wilson_interval, z_value

Z = 3.2905267  # the 0.9995 quantile of the standard normal distribution (tables)


def test_chi_square_of_10_20_30_is_10_with_p_exp_minus_5() -> None:
    # 60 keys over 3 buckets expect 20 each: (10-20)²/20 + 0 + (30-20)²/20 = 10, and for 2 degrees of
    # freedom the chi-square survival function is exp(-x/2).
    fit = uniform_chi_square({0: 10, 1: 20, 2: 30}, 3)
    assert fit is not None
    assert fit.statistic == pytest.approx(10.0)
    assert fit.dof == 2
    assert fit.p_value == pytest.approx(math.exp(-5))
    assert not fit.rejected  # 0.0067 is far above alpha = 1e-6


def test_empty_buckets_count_as_zero_keys() -> None:
    # 40 keys over 4 buckets expect 10: (20-10)²/10 + (20-10)²/10 + 10 + 10 = 40
    fit = uniform_chi_square({0: 20, 2: 20}, 4)
    assert fit is not None
    assert fit.statistic == pytest.approx(40.0)
    assert fit.rejected  # chi2(3) > 40 has p ~ 1e-8


def test_sparse_chi_square_equals_scipy_on_dense_counts() -> None:
    rng = random.Random(7)
    counts = [rng.randint(5, 60) for _ in range(17)]
    fit = uniform_chi_square(dict(enumerate(counts)), 17)
    expected = stats.chisquare(counts)
    assert fit is not None
    assert fit.statistic == pytest.approx(expected.statistic)
    assert fit.p_value == pytest.approx(expected.pvalue)


@pytest.mark.parametrize(
    ("counts", "partitions"),
    [({0: 4, 1: 5}, 2), ({0: 100}, 1), ({}, 5), ({0: 30, 1: 30}, 100)],
    ids=["under-5-per-bucket", "one-bucket", "no-keys", "huge-n"],
)
def test_no_chi_square_without_enough_keys_per_bucket(counts: dict[int, int], partitions: int) -> None:
    assert uniform_chi_square(counts, partitions) is None


def test_max_min_ratio() -> None:
    assert max_min_ratio({0: 10, 1: 20, 2: 30}, 3) == 3.0
    assert max_min_ratio({0: 10, 2: 30}, 3) == math.inf  # bucket 1 is empty
    assert math.isnan(max_min_ratio({}, 3))


def test_z_of_999_per_mille() -> None:
    assert z_value() == pytest.approx(Z, abs=1e-6)


def test_wilson_interval_of_half() -> None:
    # p = 0.5, n = 100: z²/n = 0.108276, the centre stays 0.5 and the half-width is
    # z / 1.108276 * sqrt(0.25/100 + 10.8276/40000) = 2.969046 * 0.0526374 = 0.156283
    low, high = wilson_interval(50, 100)
    assert low == pytest.approx(0.343717, abs=1e-6)
    assert high == pytest.approx(0.656283, abs=1e-6)


def test_wilson_interval_of_60_in_100() -> None:
    # centre (0.6 + 0.054138) / 1.108276 = 0.590227; half 2.969046 * sqrt(0.0024 + 0.00027069) = 0.153437
    low, high = wilson_interval(60, 100)
    assert low == pytest.approx(0.436790, abs=1e-5)
    assert high == pytest.approx(0.743664, abs=1e-5)


def test_wilson_interval_at_the_bounds() -> None:
    # k = 0: the upper bound is z² / (n + z²) = 10.8276 / 20.8276 = 0.519867, and the lower bound is 0
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.519867, abs=1e-6))
    assert wilson_interval(10, 10) == (pytest.approx(0.480133, abs=1e-6), 1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match=r"'successes' must be 0\.\.10"):
        wilson_interval(11, 10)
