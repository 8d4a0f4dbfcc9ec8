"""A property that finds several classes of divergence reports each of them (shrunk on its own), not only
the first: `suites.reproduce.assert_agrees` raises one exception type per class, which is how Hypothesis
tells failures apart."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nats_conformance.records.schema import Case
from nats_conformance.suites.reproduce import Divergence, assert_agrees, divergence_type


def judged(n: int) -> list[Case]:
    """Cases as a family would judge them: `n` above 10 diverges, in one of two classes by parity."""
    difference = "wrong-subject" if n % 2 else "not-delivered"
    verdict = "diverge" if n > 10 else "agree"
    return [
        Case(
            "r",
            0,
            "nats-server",
            "2.14.5",
            "process",
            "mapping",
            "wildcard",
            "a.*",
            "b.$1",
            f"a.{n}",
            "",
            "",
            verdict,
            difference=difference,
        )
    ]


def test_each_class_is_its_own_failure() -> None:
    assert divergence_type("mapping:wildcard:wrong-subject") is divergence_type(
        "mapping:wildcard:wrong-subject"
    )
    assert divergence_type("mapping:wildcard:wrong-subject") is not divergence_type("mapping::not-delivered")
    assert issubclass(divergence_type("x"), Divergence)


def test_a_property_reports_every_class_it_finds() -> None:
    @settings(database=None, derandomize=True, max_examples=300, suppress_health_check=list(HealthCheck))
    @given(st.integers(0, 1000))
    def conforms(n: int) -> None:
        assert_agrees(judged(n))

    with pytest.raises(BaseExceptionGroup) as raised:
        conforms()
    names = sorted(type(error).__name__ for error in raised.value.exceptions)
    assert names == [
        "Divergence[mapping:wildcard:not-delivered]",
        "Divergence[mapping:wildcard:wrong-subject]",
    ]
    # Each shrunk to its own smallest example: 12 (even) and 11 (odd).
    shown = {type(error).__name__: str(error) for error in raised.value.exceptions}
    assert "subject:     a.12\n" in shown["Divergence[mapping:wildcard:not-delivered]"]
    assert "subject:     a.11\n" in shown["Divergence[mapping:wildcard:wrong-subject]"]
