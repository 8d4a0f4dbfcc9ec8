"""Which families of a campaign reach each mutant (`nats-conformance mutants`): one family at a time, the
plan's campaign runs on release R's -cover build (`fixtures.cover`, the `coverage` command's build) with
the same seed, and the lines of the mutated files its servers ran are read from the counters.

A family whose run on the original never runs a mutant's line cannot tell that mutant apart: a run is
drawn from its seed, so the mutant's run is the original's until the mutated code runs, and here it never
does. Such a family is left out of the mutant's plan, and a mutant no family reaches is `unreached`: it
is not run, and counts neither as killed nor as survived. Where reach is not known the family counts as
reaching every line (sound, never cheaper):

- a line inside no block of the profile (a declaration, or code the -cover build does not count);
- a family whose run restarted a server: a server that died wrote no counters;
- a family whose run wrote no counters at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from nats_conformance.fixtures.cover import counter_files, merge_counters, module_source
from nats_conformance.fixtures.options import build_run_config
from nats_conformance.fixtures.provision import NATS_SERVER, report_to_stderr
from nats_conformance.records.coverage import Block, parse_profile
from nats_conformance.records.expectations import load_expectations
from nats_conformance.records.mutants import Mutant
from nats_conformance.suites.engine.campaign import CampaignPlan, run_campaign

EVERY_LINE: Final = None
"""A family's reach when it is not known: every line."""


def family_plan(plan: CampaignPlan, family: str) -> CampaignPlan:
    """`plan` with every family but `family` left out (the same budget and seed for that one)."""
    return replace(
        plan, budgets={name: budget if name == family else 0 for name, budget in plan.budgets.items()}
    )


def families_of(plan: CampaignPlan) -> list[str]:
    """The families `plan` runs, in its order."""
    return [name for name, budget in plan.budgets.items() if budget]


@dataclass(frozen=True, slots=True)
class Reach:
    """The lines each family's run reached, per mutated file (`EVERY_LINE` where not known), and the lines
    inside any block of the profile."""

    reached: Mapping[str, Mapping[str, frozenset[int]] | None]
    counted: Mapping[str, frozenset[int]]

    def reaching(self, mutant: Mutant, order: Sequence[str]) -> tuple[str, ...]:
        """The names of `order` (families, or the anchor's tests) that reach `mutant`'s line (all of them
        where the line is not counted)."""
        if mutant.line not in self.counted.get(mutant.file, frozenset()):
            return tuple(order)
        found = []
        for name in order:
            lines = self.reached.get(name, EVERY_LINE)
            if lines is EVERY_LINE or mutant.line in lines.get(mutant.file, frozenset()):
                found.append(name)
        return tuple(found)


def lines_of(blocks: Iterable[Block], files: set[str], *, reached_only: bool) -> dict[str, frozenset[int]]:
    """Every line of `files` inside a block (`reached_only`: a block some process reached)."""
    lines: dict[str, set[int]] = {}
    for block in blocks:
        if block.path in files and (block.reached or not reached_only):
            lines.setdefault(block.path, set()).update(range(block.start, block.end + 1))
    return {path: frozenset(found) for path, found in lines.items()}


def measure_reach(
    release: str,
    plan: CampaignPlan,
    folder: Path,
    expectations: Path,
    files: set[str],
    *,
    progress: Callable[[str], None] = report_to_stderr,
) -> Reach:
    """Run each family of `plan` on `release`'s -cover build into `folder/<family>` and read which lines of
    `files` it reached."""
    source = module_source(release, progress=progress)
    known = load_expectations(expectations)
    reached: dict[str, Mapping[str, frozenset[int]] | None] = {}
    counted: dict[str, set[int]] = {}
    for name in families_of(plan):
        run_dir = folder / name
        counters = (run_dir / "counters").absolute()
        run = replace(build_run_config([release], ["process"], None, None), coverage_dir=counters)
        writer, _ = run_campaign(run, family_plan(plan, name), run_dir, known)
        restarts = len(writer.manifest().get("restarts", []))
        if restarts or not counter_files(counters):
            reached[name] = EVERY_LINE
            progress(f"mutants: the reach of {name} is not known ({restarts} restarts): every line")
            continue
        profile = run_dir / "profile.txt"
        merge_counters(counters, source, profile, progress=progress)
        blocks = parse_profile(profile.read_text(), NATS_SERVER.module)
        reached[name] = lines_of(blocks, files, reached_only=True)
        for path, lines in lines_of(blocks, files, reached_only=False).items():
            counted.setdefault(path, set()).update(lines)
    return Reach(reached, {path: frozenset(lines) for path, lines in counted.items()})
