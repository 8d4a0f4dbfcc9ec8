"""A mutant is killed `by crash` only when its run of a family restarts more servers than the original's
runs do, confirmed by one more run of each (`suites.mutants.crashes_more`): the count varies from run to
run with the same seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nats_conformance.suites import mutants
from nats_conformance.suites.engine.campaign import CampaignPlan
from nats_conformance.suites.mutants import Context, Original, crashes_more


@pytest.mark.parametrize(
    ("counts", "more", "runs"),
    [
        ((4, 4, None, None), False, []),  # not above the original: nothing runs again
        ((3, 4, 4, None), False, [0]),  # the original reaches it once more
        ((3, 5, 4, 4), False, [0, 9]),  # the mutant falls back once more
        ((3, 5, 4, 6), True, [0, 9]),  # above both runs of the original, twice
    ],
)
def test_a_crash_count_above_the_originals_is_confirmed_by_one_more_run_of_each(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    counts: tuple[int, int, int | None, int | None],
    more: bool,
    runs: list[int],
) -> None:
    """`counts`: restarts of the original's run, the mutant's, the original's again, the mutant's again."""
    original, crashes, original_again, mutant_again = counts
    ran: list[int] = []

    def campaign(context: Context, mutant: int, run_dir: Path, family: str) -> dict[str, Any]:
        ran.append(mutant)
        count = original_again if mutant == 0 else mutant_again
        assert count is not None
        assert run_dir.parent == tmp_path / "m00009"
        return {"restarts": [{"reason": "panic"}] * count}

    monkeypatch.setattr(mutants, "campaign", campaign)
    context = Context("2.14.10", tmp_path / "nats-server", CampaignPlan(budgets={}), tmp_path, tmp_path)
    family = Original("import", tmp_path / "original", original, 1.0)
    assert crashes_more(context, 9, tmp_path / "m00009" / "import", family, crashes) is more
    assert ran == runs
