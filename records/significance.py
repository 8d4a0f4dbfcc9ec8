"""The significance rules shared by the distribution checks of the suites (suites/distribution.py) and the
statistics of the reports (reports/stats.py), so a report judges a distribution as the run did."""

from __future__ import annotations

from typing import Final

ALPHA: Final = 1e-6
"""False-alarm rate of one chi-square test (suites/distribution.py gives the per-run rate)."""

MIN_EXPECTED: Final = 5.0
"""Every category must expect at least this many observations, or the chi-square approximation of
Pearson's statistic is poor (the usual rule of thumb)."""

CHANGE_ALPHA: Final = 1e-3
"""Significance of a change in how often a statistical class (a test of shares) shows between two sides
of a comparison: Fisher's exact test of its cases among the feature's judged cases on each side
(`reports.stats.fisher_exact`). One in a thousand such comparisons claims a change by chance."""
