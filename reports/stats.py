"""Statistics on aggregated counts: uniformity of partition buckets and intervals of observed shares.

Chi-square: Pearson's statistic of bucket counts against equal shares, computed from the observed
buckets only (``sum(o**2 / e) - N`` over n buckets of expectation ``e = N / n``, so a mapping with
2**31 partitions needs no dense list), with the p-value from ``scipy.special.chdtrc`` (what
``scipy.stats.chi2.sf`` calls, without importing ``scipy.stats``: most of a second) on ``n - 1`` degrees
of freedom. It is computed only when every bucket expects at least ``records.significance.MIN_EXPECTED``
keys, the usual validity condition of the approximation, and judged at the suites' ``ALPHA``.

Intervals: the Wilson score interval at 99.9 % (``z = 3.2905``, the two-sided normal quantile). Unlike
the Wald interval it stays inside [0, 1] and keeps its coverage for shares near 0 or 1, such as a 2 %
remainder or a 0 % loss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from scipy import special

from nats_conformance.records.significance import ALPHA, MIN_EXPECTED

CONFIDENCE: Final = 0.999


@dataclass(frozen=True, slots=True)
class Uniformity:
    """Chi-square test of keys over ``partitions`` buckets against equal shares."""

    statistic: float
    p_value: float
    dof: int

    @property
    def rejected(self) -> bool:
        """True iff equal shares are implausible: ``p_value < ALPHA`` (the suites' false-alarm rate)."""
        return self.p_value < ALPHA


def uniform_chi_square(counts: Mapping[int, int], partitions: int) -> Uniformity | None:
    """Chi-square of ``counts`` (bucket -> keys, buckets 0..partitions-1; absent buckets count 0)
    against equal shares; None when there are fewer than 2 buckets or too few keys per bucket."""
    total = sum(counts.values())
    if partitions < 2 or total == 0 or total / partitions < MIN_EXPECTED:
        return None
    expected = total / partitions
    statistic = max(0.0, sum(count * count for count in counts.values()) / expected - total)
    dof = partitions - 1
    return Uniformity(statistic, float(special.chdtrc(dof, statistic)), dof)


def max_min_ratio(counts: Mapping[int, int], partitions: int) -> float:
    """The fullest bucket's count over the emptiest's (``inf`` when a bucket is empty, ``nan`` when
    there are no keys at all)."""
    if partitions < 1 or not any(counts.values()):
        return math.nan
    filled = [count for count in counts.values() if count > 0]
    if len(filled) < partitions:
        return math.inf
    return max(filled) / min(filled)


def z_value(confidence: float = CONFIDENCE) -> float:
    """The two-sided standard normal quantile for ``confidence`` (3.2905 at 99.9 %)."""
    return float(special.ndtri(1 - (1 - confidence) / 2))


def wilson_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of a share ``successes / trials``; (0, 1) when there are no trials.

    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``, exactly 0 (1) at the bound when no (every)
    trial succeeded, where the formula gives it up to rounding.

    Raises:
        ValueError: ``successes`` is negative or above ``trials``.
    """
    if not 0 <= successes <= max(trials, 0):
        raise ValueError(f"'successes' must be 0..{trials} (got {successes})")
    if trials == 0:
        return 0.0, 1.0
    z = z_value(confidence)
    share = successes / trials
    z2n = z * z / trials
    centre = (share + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(share * (1 - share) / trials + z2n / (4 * trials))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def fisher_exact(hits: int, trials: int, other_hits: int, other_trials: int) -> float:
    """The two-sided p-value of Fisher's exact test that two shares, ``hits / trials`` and
    ``other_hits / other_trials``, are one: the probability, with the margins fixed, of every table no
    likelier than the one observed (hypergeometric, summed in log space)."""
    if not (0 <= hits <= trials and 0 <= other_hits <= other_trials):
        raise ValueError(f"shares {hits}/{trials} and {other_hits}/{other_trials} are not counts")
    column, total = hits + other_hits, trials + other_trials
    if column in (0, total):
        return 1.0

    def log_probability(a: int) -> float:
        return _log_choose(trials, a) + _log_choose(other_trials, column - a) - _log_choose(total, column)

    observed = log_probability(hits)
    tables = range(max(0, column - other_trials), min(column, trials) + 1)
    p_value = sum(math.exp(p) for a in tables if (p := log_probability(a)) <= observed + 1e-9)
    return min(1.0, p_value)


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
