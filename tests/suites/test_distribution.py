"""suites.distribution: chi-square verdicts, effect size, power and sample sizes."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance.suites.distribution import (
    ALPHA,
    DEVIATION,
    POWER,
    chi_square,
    chi_square_quantile,
    chi_square_tail,
    effect_size,
    noncentral_chi_square_cdf,
    power_of,
    sample_size,
    uniformity,
)


def test_counts_exactly_at_their_shares_fit() -> None:
    fit = chi_square([98, 2], [0.98, 0.02])
    assert fit.statistic == pytest.approx(0.0)
    assert fit.p_value == pytest.approx(1.0)
    assert not fit.rejected
    assert fit.dof == 1


def test_a_count_in_a_category_of_share_zero_is_rejected() -> None:
    fit = chi_square([10, 1], [1.0, 0.0])
    assert fit.p_value == 0.0
    assert fit.rejected


def test_a_single_possible_category_has_nothing_to_test() -> None:
    fit = chi_square([500], [1.0])
    assert (fit.p_value, fit.dof, fit.rejected) == (1.0, 0, False)


def test_a_clear_imbalance_is_rejected_and_described() -> None:
    fit = uniformity([700, 300])
    assert fit.rejected
    assert "p=" in fit.describe()
    assert "observed [700, 300]" in fit.describe()


@pytest.mark.parametrize(
    ("observed", "shares"),
    [([1, 2], [1.0]), ([1, 2], [0.5, 0.6]), ([1, 2], [1.5, -0.5]), ([], [])],
)
def test_bad_arguments_raise_value_error(observed: list[int], shares: list[float]) -> None:
    with pytest.raises(ValueError, match="'"):
        chi_square(observed, shares)


def test_effect_size_is_deviation_squared_over_the_largest_binomial_variance() -> None:
    assert effect_size([0.5, 0.5]) == pytest.approx(0.01)
    assert effect_size([0.98, 0.02]) == pytest.approx(0.0025 / (0.98 * 0.02))
    assert effect_size([0.2, 0.3, 0.5]) == pytest.approx(0.01)
    assert math.isinf(effect_size([1.0]))


@pytest.mark.parametrize(
    ("shares", "messages"),
    [([0.5, 0.5], 5210), ([0.5, 0.25, 0.25], 5630), ([0.5, 0.2, 0.2, 0.1], 5946), ([0.98, 0.02], 409)],
)
def test_sample_sizes_are_the_documented_ones_and_just_reach_the_power(
    shares: list[float], messages: int
) -> None:
    assert sample_size(shares) == messages
    assert power_of(messages, shares) >= POWER
    assert power_of(messages - 10, shares) < POWER


def test_sample_size_keeps_every_category_at_five_expected() -> None:
    assert sample_size([0.99, 0.01]) >= 500
    assert sample_size([1.0]) == 100


def _rejections(truth: list[float], shares: list[float], messages: int, trials: int, seed: int) -> int:
    rng = random.Random(seed)
    rejected = 0
    for _ in range(trials):
        counts = [0] * len(truth)
        for index in rng.choices(range(len(truth)), weights=truth, k=messages):
            counts[index] += 1
        rejected += chi_square(counts, shares).rejected
    return rejected


def test_simulated_false_alarms_and_detections_match_the_stated_rates() -> None:
    shares = [0.5, 0.3, 0.2]
    messages = sample_size(shares)
    assert _rejections(shares, shares, messages, trials=100, seed=1) == 0  # alpha 1e-6: none expected
    shifted = [0.5 + DEVIATION, 0.3 - DEVIATION * 0.6, 0.2 - DEVIATION * 0.4]
    assert _rejections(shifted, shares, messages, trials=100, seed=2) >= 95  # power 0.99
    assert ALPHA == 1e-6


def test_the_statistics_agree_with_scipy_stats_and_load_no_scipy() -> None:
    """The test, the power and the sample size load no SciPy (`scipy.stats` took most of a second to load
    in every campaign judging a weighted list, `scipy.special` a quarter of a second in every process
    drawing one), with the numbers `scipy.stats` gives."""
    stats = pytest.importorskip("scipy.stats")
    counts, shares = [5100, 2400, 2500], [0.5, 0.25, 0.25]
    reference = stats.chisquare(counts, [sum(counts) * share for share in shares])
    fit = chi_square(counts, shares)
    assert fit.statistic == pytest.approx(reference.statistic)
    assert fit.p_value == pytest.approx(reference.pvalue)
    critical = stats.chi2.isf(ALPHA, 2)
    assert power_of(3000, shares) == pytest.approx(stats.ncx2.sf(critical, 2, 3000 * effect_size(shares)))
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from nats_conformance.suites.distribution import chi_square, sample_size;"
            "chi_square([60, 40], [0.5, 0.5]); sample_size([0.5, 0.3, 0.2]);"
            "print(sorted(m for m in sys.modules if m.startswith('scipy')))",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


def test_the_closed_form_tail_is_scipys_chi_square_survival_function() -> None:
    """`chi_square_tail` against `scipy.special.chdtrc` (loaded here only), down to the smallest p-values
    a test meets: degrees of freedom 1 to 60 (partition counts), statistics from 0.01 to 2,000."""
    special = pytest.importorskip("scipy.special")
    for dof in (*range(1, 21), 31, 47, 60):
        for statistic in (0.01, 0.5, 1.0, 3.7, dof, 2 * dof + 5, 25.0, 60.0, 150.0, 400.0, 2000.0):
            expected = float(special.chdtrc(dof, statistic))
            got = chi_square_tail(statistic, dof)
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-300), (dof, statistic)
    assert chi_square_tail(0.0, 3) == 1.0
    with pytest.raises(ValueError, match="at least 1"):
        chi_square_tail(1.0, 0)


def test_the_closed_form_quantile_non_central_distribution_and_sample_size_are_scipys() -> None:
    """`chi_square_quantile` against `scipy.special.chdtri`, `noncentral_chi_square_cdf` against `chndtr`,
    and `sample_size` against the same size from `chdtri` and `chndtrinc` (what it used), for 300 weighted
    lists of 2 to 12 destinations."""
    special = pytest.importorskip("scipy.special")
    for dof in (1, 2, 3, 5, 8, 13, 21, 40):
        for alpha in (ALPHA, 0.01, 0.05):
            critical = float(special.chdtri(dof, alpha))
            assert chi_square_quantile(alpha, dof) == pytest.approx(critical, rel=1e-12), (dof, alpha)
            for noncentrality in (0.0, 0.5, 10.0, 80.0, 400.0):
                for x in (0.5, critical, 3 * critical):
                    expected = float(special.chndtr(x, dof, noncentrality))
                    got = noncentral_chi_square_cdf(x, dof, noncentrality)
                    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), (x, dof, noncentrality)
    rng = random.Random(1)
    for _ in range(300):
        weights = [rng.randint(1, 100) for _ in range(rng.randint(2, 12))]
        shares = [weight / sum(weights) for weight in weights]
        dof = len(shares) - 1
        noncentrality = float(special.chndtrinc(special.chdtri(dof, ALPHA), dof, 1 - POWER))
        expected = max(100, math.ceil(5 / min(shares)), math.ceil(noncentrality / effect_size(shares)))
        assert sample_size(shares) == expected, shares
