"""Statistics for the distribution properties: chi-square goodness of fit, and how many messages a
weighted check must publish.

Used by ``suites/test_partition.py`` ("Deterministic Subject token Partitioning": the hash distribution
"tending towards perfectly balanced") and ``suites/test_weighted.py`` ("Weighted Mappings": traffic split
by percentage). Both compare observed counts per category with expected shares by Pearson's chi-square
test.

False alarms: every test is run at ``ALPHA`` = 1e-6. A full CI run (``ci`` profile, 60 examples, two
distribution properties, seven releases, plus the documented examples) performs under 1,000 such tests,
so the chance that a correct server fails any of them in a run is below 1e-3 (Bonferroni bound).

Power: :func:`sample_size` gives the number of messages for which a shift of ``DEVIATION`` = 5
percentage points in any one category (the rest re-spread in proportion) is detected with probability
``POWER`` = 0.99 at ``ALPHA``, from the non-central chi-square distribution. The least detectable such
shift moves the category whose share is nearest 1/2, and its effect size is
``w² = δ² / (p (1 - p))`` (Cohen's w; see :func:`effect_size`). The worst case, a category of share 1/2,
needs 5,210 messages with 2 categories, 5,630 with 3 and 5,946 with 4; a 98/2 split needs 409.

The chi-square test's p-value is in closed form (:func:`chi_square_tail`), and so are the power and the
sample size: the non-central chi-square distribution is a Poisson mixture of central ones
(:func:`noncentral_chi_square_cdf`), and the critical value and the non-centrality are found by
bisection. No SciPy: ``scipy.stats`` took most of a second to load, which every command paid
(`campaign --help`, farm-bench, 7 runs: median 1.53 s against 2.69 s at e538b32), and ``scipy.special``
a quarter of a second, which every process drawing weighted lists paid for its first one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final

from nats_conformance.records.significance import ALPHA, MIN_EXPECTED

__all__ = [
    "ALPHA",
    "DEVIATION",
    "MIN_EXPECTED",
    "POWER",
    "GoodnessOfFit",
    "chi_square",
    "chi_square_quantile",
    "chi_square_tail",
    "effect_size",
    "noncentral_chi_square_cdf",
    "power_of",
    "sample_size",
    "uniformity",
]

POWER: Final = 0.99
"""Probability that a deviation of ``DEVIATION`` is detected with the sample :func:`sample_size` gives."""

DEVIATION: Final = 0.05
"""The smallest shift of one category's share (5 percentage points) a weighted check must detect."""


@dataclass(frozen=True, slots=True)
class GoodnessOfFit:
    """The outcome of one chi-square test of ``observed`` counts against ``expected`` counts."""

    observed: tuple[int, ...]
    expected: tuple[float, ...]
    statistic: float
    p_value: float
    dof: int
    alpha: float

    @property
    def rejected(self) -> bool:
        """True iff the counts are implausible under the expected shares: ``p_value < alpha``."""
        return self.p_value < self.alpha

    def describe(self) -> str:
        """One line: the counts, the expected counts, the statistic and the p-value against alpha."""
        expected = ", ".join(f"{value:.1f}" for value in self.expected)
        return (
            f"observed {list(self.observed)}, expected [{expected}]: chi2={self.statistic:.2f} "
            f"dof={self.dof} p={self.p_value:.3g} (alpha={self.alpha:g})"
        )


def _check_shares(shares: Sequence[float]) -> None:
    if not shares or any(share < 0 for share in shares) or not math.isclose(sum(shares), 1.0):
        raise ValueError(f"'shares' must be non-negative and sum to 1 (got {list(shares)})")


def chi_square(observed: Sequence[int], shares: Sequence[float], *, alpha: float = ALPHA) -> GoodnessOfFit:
    """Pearson's chi-square test of ``observed`` counts against the category ``shares`` (summing to 1).

    A count in a category of share 0 is impossible under the expected shares: the p-value is 0. With one
    possible category there is nothing to test (p = 1 when every count is in it).

    Raises:
        ValueError: the lists differ in length, or ``shares`` are negative or do not sum to 1.
    """
    if len(observed) != len(shares):
        raise ValueError(f"'observed' and 'shares' differ in length ({len(observed)} != {len(shares)})")
    _check_shares(shares)
    total = sum(observed)
    expected = tuple(total * share for share in shares)
    counts = tuple(int(count) for count in observed)
    if any(count and share == 0 for count, share in zip(counts, shares, strict=True)):
        return GoodnessOfFit(counts, expected, math.inf, 0.0, len(counts) - 1, alpha)
    live = [(count, exp) for count, exp in zip(counts, expected, strict=True) if exp > 0]
    if len(live) < 2 or total == 0:
        return GoodnessOfFit(counts, expected, 0.0, 1.0, 0, alpha)
    statistic = float(sum((count - exp) ** 2 / exp for count, exp in live))
    dof = len(live) - 1
    return GoodnessOfFit(counts, expected, statistic, chi_square_tail(statistic, dof), dof, alpha)


def chi_square_tail(statistic: float, dof: int) -> float:
    """P(X >= `statistic`) for X chi-square with `dof` degrees of freedom (a whole number), in closed form:
    the upper regularised gamma function Q(k/2, x/2) is, for even k, e^(-x/2) times the sum over
    i < k/2 of (x/2)^i / i!, and for odd k, erfc(sqrt(x/2)) plus e^(-x/2) times the sum over
    1 <= i <= (k-1)/2 of (x/2)^(i-1/2) / Gamma(i+1/2). Each term is taken from its logarithm, so that
    none overflows; every term is positive, so nothing cancels."""
    if dof < 1:
        raise ValueError(f"'dof' must be a whole number of at least 1 (got {dof})")
    if statistic <= 0:
        return 1.0
    half = statistic / 2
    log_half = math.log(half)
    if dof % 2 == 0:
        terms = (i * log_half - math.lgamma(i + 1) for i in range(dof // 2))
        tail = 0.0
    else:
        terms = ((i - 0.5) * log_half - math.lgamma(i + 0.5) for i in range(1, (dof - 1) // 2 + 1))
        tail = math.erfc(math.sqrt(half))
    return min(1.0, tail + sum(math.exp(term - half) for term in terms))


def chi_square_quantile(tail: float, dof: int) -> float:
    """The x at which `chi_square_tail` (x, `dof`) is `tail`: the critical value of a test at level `tail`."""
    return _bisect(lambda x: chi_square_tail(x, dof) > tail, max(1.0, float(dof)))


def noncentral_chi_square_cdf(x: float, dof: int, noncentrality: float) -> float:
    """P(X <= `x`) for X non-central chi-square with `dof` degrees of freedom and non-centrality λ: the
    Poisson(λ/2) mixture of the central chi-square distributions with `dof` + 2j degrees of freedom,
    whose cumulative probabilities fall by e^(-x/2) (x/2)^(k/2) / Gamma(k/2 + 1) from k to k + 2 degrees;
    summed until the Poisson weights left are below 1e-20 of the whole."""
    if x <= 0:
        return 0.0
    mean, half = noncentrality / 2, x / 2
    log_mean, log_half = (math.log(mean) if mean > 0 else -math.inf), math.log(half)
    central = 1.0 - chi_square_tail(x, dof)
    total, j = 0.0, 0
    while True:
        weight = math.exp(j * log_mean - mean - math.lgamma(j + 1)) if mean > 0 else float(j == 0)
        total += weight * central
        if j > mean and weight < 1e-20:
            return min(1.0, max(0.0, total))
        central -= math.exp((dof / 2 + j) * log_half - half - math.lgamma(dof / 2 + j + 1))
        j += 1


@cache
def _noncentrality(dof: int, alpha: float, power: float) -> float:
    """The non-centrality at which a chi-square test with `dof` degrees of freedom at level `alpha`
    rejects with probability `power`."""
    critical = chi_square_quantile(alpha, dof)
    return _bisect(lambda nc: noncentral_chi_square_cdf(critical, dof, nc) > 1.0 - power, 1.0)


def _bisect(below: Callable[[float], bool], start: float) -> float:
    """The point, to a float's precision, where the decreasing condition `below` turns false: its upper
    bound doubled from `start` until false, then halved."""
    low, high = 0.0, start
    while below(high):
        low, high = high, high * 2
    while True:
        middle = (low + high) / 2
        if middle in (low, high):
            return high
        low, high = (middle, high) if below(middle) else (low, middle)


def uniformity(observed: Sequence[int], *, alpha: float = ALPHA) -> GoodnessOfFit:
    """Chi-square test of ``observed`` counts against equal shares (one count per category)."""
    return chi_square(observed, [1 / len(observed)] * len(observed), alpha=alpha)


def effect_size(shares: Sequence[float], deviation: float = DEVIATION) -> float:
    """Cohen's ``w²`` of the least detectable shift of one category's share by ``deviation``.

    Moving ``δ`` into category i and taking it from the others in proportion to their shares gives
    ``w² = Σ (Δ_j)² / p_j = δ² / p_i + δ² / (1 - p_i) = δ² / (p_i (1 - p_i))``; spreading the change in
    proportion is the least visible way (Cauchy-Schwarz), and the category with ``p_i`` nearest 1/2 is
    the least visible one to move. Shares of 0 or 1 are skipped (nothing to shift); with no other
    category the result is ``inf`` (any change is a category that cannot occur).
    """
    _check_shares(shares)
    spread = max((p * (1 - p) for p in shares if 0 < p < 1), default=0.0)
    return math.inf if spread == 0 else deviation**2 / spread


def power_of(
    messages: int, shares: Sequence[float], *, deviation: float = DEVIATION, alpha: float = ALPHA
) -> float:
    """The probability that a chi-square test on ``messages`` observations rejects at ``alpha`` when one
    category's share is off by ``deviation`` (non-central chi-square with ``λ = messages * w²``)."""
    dof = sum(1 for p in shares if p > 0) - 1
    w2 = effect_size(shares, deviation)
    if dof < 1 or math.isinf(w2):
        return 1.0
    return 1.0 - noncentral_chi_square_cdf(chi_square_quantile(alpha, dof), dof, messages * w2)


def sample_size(
    shares: Sequence[float],
    *,
    deviation: float = DEVIATION,
    alpha: float = ALPHA,
    power: float = POWER,
    min_expected: float = MIN_EXPECTED,
    floor: int = 100,
) -> int:
    """How many messages to publish so that a ``deviation`` in one category's share is detected with
    probability ``power`` at false-alarm rate ``alpha``, and every category expects ``min_expected``.

    No cap is applied here: callers that must bound their run time cap the result themselves and say so
    (a capped sample is still a valid test, with less power).

    Raises:
        ValueError: ``shares`` are negative or do not sum to 1.
    """
    _check_shares(shares)
    live = [p for p in shares if p > 0]
    needed = max(floor, math.ceil(min_expected / min(live)))
    dof = len(live) - 1
    w2 = effect_size(live, deviation)
    if dof < 1 or math.isinf(w2):
        return needed
    return max(needed, math.ceil(_noncentrality(dof, alpha, power) / w2))
