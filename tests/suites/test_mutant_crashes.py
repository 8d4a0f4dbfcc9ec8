"""A mutant is killed `by crash` only by a crash whose reason the original's runs never give, confirmed by
one more run of each (`suites.mutants.new_crash`): the number of restarts after the same panic varies
from run to run with the same seed, so a count is no evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nats_conformance.suites import mutants
from nats_conformance.suites.engine.campaign import CampaignPlan
from nats_conformance.suites.mutants import Context, Original, new_crash

PANIC, OTHER = (
    "server restarted after: panic: nil pointer",
    "server restarted after: panic: index out of range",
)


def restarts(*reasons: str) -> list[dict[str, str]]:
    return [{"family": "import", "reason": reason} for reason in reasons]


@pytest.mark.parametrize(
    ("runs", "crash", "ran"),
    [
        # the original's panic, more often: no evidence, nothing runs again
        (((PANIC,), (PANIC, PANIC, PANIC), (), ()), "", []),
        # a new panic the original gives once more: none
        (((PANIC,), (PANIC, OTHER), (OTHER,), ()), "", [0]),
        # a new panic the mutant does not give again: none
        (((), (OTHER,), (PANIC,), (PANIC,)), "", [0, 9]),
        # a new panic, absent from both runs of the original, given twice by the mutant
        (((PANIC,), (PANIC, OTHER), (PANIC,), (OTHER,)), OTHER, [0, 9]),
    ],
)
def test_only_a_new_reason_given_twice_and_never_by_the_original_kills(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    runs: tuple[tuple[str, ...], ...],
    crash: str,
    ran: list[int],
) -> None:
    """`runs`: the restart reasons of the original's run, the mutant's, the original's again and the
    mutant's again."""
    original_run, mutant_run, original_again, mutant_again = runs
    sides: list[int] = []

    def campaign(context: Context, mutant: int, run_dir: Path, family: str) -> dict[str, Any]:
        sides.append(mutant)
        assert run_dir.parent == tmp_path / "m00009"
        return {"restarts": restarts(*(original_again if mutant == 0 else mutant_again))}

    monkeypatch.setattr(mutants, "campaign", campaign)
    context = Context("2.14.10", tmp_path / "nats-server", CampaignPlan(budgets={}), tmp_path, tmp_path)
    family = Original("import", tmp_path / "original", frozenset(original_run), 1.0)
    found = new_crash(context, 9, tmp_path / "m00009" / "import", family, restarts(*mutant_run))
    assert found == crash
    assert sides == ran
