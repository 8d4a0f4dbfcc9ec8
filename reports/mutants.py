"""The texts of a run of `nats-conformance mutants` (`records.mutants.MutantsRun`, read with the records)
that the renderers share."""

from __future__ import annotations

from nats_conformance.records.coverage import percent
from nats_conformance.records.mutants import Figures, MutantsRun, Scored, WrongEquivalent
from nats_conformance.reports.present import count

INTRO = (
    "Mutants of nats-server's mapping code (`nats-conformance mutants`): each is the release with one "
    "wrong statement, killed when the campaign run on it tells it from the original (its server does not "
    "start, a paired replay changes outcome, its servers crash more often, or it gives no verdict in "
    "time). The score is killed / (mutants - equivalent), with unreached mutants (no family of the plan "
    "runs their line) counted as not killed; nats-server's tests are its own tests of mapping, "
    "transforms, placeholders, the sublist and subject validity, run on the same mutants. A survivor is "
    "a wrong server the campaign let through: its diff, and the families that ran on it."
)
WRONG = "Wrong entry of mutants-equivalent.toml"
"""The label of a mutant listed as equivalent, yet killed."""


def tested(figures: Figures) -> str:
    """`7 of 10 killed (70.0 %)`: the figure of nats-server's tests."""
    return f"{figures.killed:,} of {figures.judged:,} killed ({figures.percent})"


def columns(run: MutantsRun) -> list[str]:
    """The headers of a per-file or per-function table after its name columns."""
    return [
        "mutants",
        "equivalent",
        "killed",
        "survived",
        "unreached",
        "score",
        *(["nats-server's tests"] if run.anchor else []),
    ]


def cells(item: Scored) -> list[str]:
    """One file's or function's figures, under `columns`."""
    f = item.campaign
    figures = [count(f.mutants), count(f.equivalent), count(f.killed), count(f.survived), count(f.unreached)]
    return [*figures, f.percent, *([tested(item.anchor)] if item.anchor else [])]


def headline(run: MutantsRun) -> str:
    """One sentence: the release, what ran, and the scores."""
    settings, totals = run.settings, run.totals
    plan = f"{settings.plan} plan"
    plan += f", then {settings.then} on the mutants it left alive" if settings.then else ""
    chosen = [plan, f"seed {settings.seed}"]
    chosen += [f"families {', '.join(settings.families)}"] if settings.families else []
    chosen += [f"a sample of {settings.sample:,}"] if settings.sample is not None else []
    chosen += [f"part {settings.part}"] if settings.part else []
    chosen.append(
        "each mutant run by the families that reach its line" if settings.reach else "every family on each"
    )
    text = (
        f"nats-server {run.release}, {run.folder}: {totals.mutants:,} of the {run.in_build:,} mutants in "
        f"the build ({'; '.join(chosen)}), {totals.equivalent:,} equivalent, {totals.killed:,} killed: "
        f"score {totals.percent}; {totals.unreached:,} unreached (score of the reached ones "
        f"{percent(totals.killed, totals.judged - totals.unreached)})"
    )
    if run.anchor:
        text += f"; nats-server's tests ({settings.anchor_tests:,} of them) {tested(run.anchor)}"
    return text


def unreached_text(run: MutantsRun) -> str:
    """The sentence listing the unreached mutants ('' when there is none)."""
    ids = ", ".join(map(str, run.unreached))
    return f"Unreached (no family runs their line): {ids}." if ids else ""


def how_killed(wrong: WrongEquivalent) -> str:
    """`killed by pair (mapping): CASE`: how a mutant listed as equivalent was killed."""
    family = f" ({wrong.family})" if wrong.family else ""
    return f"killed {wrong.how}{family}" + (f": {wrong.case}" if wrong.case else "")
