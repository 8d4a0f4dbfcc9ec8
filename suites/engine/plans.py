"""Named campaign plans (`campaign --plan NAME`): every family's budget of cases per target, as a share
of the family's own default budget, never below `FLOOR` (one unit of the slowest family). `--budget`
and `--cases` then override single families, and `--family` leaves the others out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from nats_conformance.suites.families import FAMILIES

FLOOR = 20
"""Cases of a family under any plan that runs it: a streaming layout records about 20."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A plan's name, its share of each family's default budget, and what it is for (`--help`)."""

    name: str
    share: float
    purpose: str

    def budgets(self) -> dict[str, int]:
        """Each family's budget under this plan."""
        return {
            name: max(FLOOR, round(family.description.budget * self.share))
            for name, family in FAMILIES.items()
        }


PLANS: Final = {
    plan.name: plan
    for plan in (
        Plan("quick", 0.04, "every family and every known case in a couple of minutes per release"),
        Plan("sweep", 0.04, "the per-release budget of a sweep over every release (--releases all)"),
        Plan("default", 1.0, "each family's default budget"),
        Plan("deep", 10.0, "ten times the default budgets, for nightly runs"),
    )
}
