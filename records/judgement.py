"""An adapter target judged by a nats-server release's engine (`--judge-by engine`): its verdict, as
the run's manifest journals it (`judgements`) and the campaign and the reports read it.

With `--against engine:R` every question put to an adapter is asked of release R's transform engine too,
and each case records which of the reference, the adapter and that engine agree (`Case.oracle`,
`suites.oracle`). A divergence valued `reference-alone` is one where the adapter does what R's engine
does and both differ from the documents (docs.nats.io, "Subject Mapping and Partitioning"). An adapter
with divergences, every one of them `reference-alone`, "conforms to nats-server R": the run's own
verdict and exit status 4 (`reference.cli.CONFORMS_TO_ENGINE`; README, "Exit statuses").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from nats_conformance.records.schema import Case, CaseBlock

JUDGE_BY: Final = ("engine", "documents")
"""`--judge-by`: the release's engine (divergences the release shares are its conformance) or the
documents alone (every divergence counts)."""
SHARED: Final = "reference-alone"
"""The three-way value of a divergence the engine shares with the adapter (`suites.oracle`)."""


@dataclass(frozen=True, slots=True)
class EngineJudgement:
    """One adapter target (`implementation@profile`) judged by the engine of `release`: its unexpected
    divergences, and those of them the engine shares, per divergence class."""

    target: str
    release: str
    diverge: int
    shared: Mapping[str, int] = field(default_factory=dict)

    @property
    def conforms(self) -> bool:
        """Divergences, every one the engine's too."""
        return bool(self.diverge) and sum(self.shared.values()) == self.diverge

    @property
    def verdict(self) -> str:
        if not self.diverge:
            return "agrees with the documents"
        if self.conforms:
            return f"conforms to nats-server {self.release}"
        return f"diverges from the documents and from nats-server {self.release}"

    def lines(self) -> list[str]:
        """The verdict line, then one line per class where the release and the documents differ."""
        own = self.diverge - sum(self.shared.values())
        counted = f"{self.diverge:,} divergence{'s' if self.diverge != 1 else ''}"
        why = (
            ""
            if not self.diverge
            else f" (all {counted} are nats-server {self.release}'s own)"
            if self.conforms
            else f" ({own:,} of {counted} not nats-server {self.release}'s)"
        )
        lines = [f"verdict: {self.target} {self.verdict}{why}"]
        lines += [
            f"  where nats-server {self.release} and the documents differ: {name} "
            f"({cases:,} case{'s' if cases != 1 else ''})"
            for name, cases in sorted(self.shared.items())
        ]
        return lines

    def describe(self) -> dict[str, Any]:
        """The manifest's entry."""
        return {
            "target": self.target,
            "release": self.release,
            "verdict": self.verdict,
            "diverge": self.diverge,
            "shared": dict(sorted(self.shared.items())),
        }

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> EngineJudgement:
        """A manifest's entry read back."""
        shared = entry.get("shared") or {}
        return cls(
            str(entry.get("target", "")),
            str(entry.get("release", "")),
            int(entry.get("diverge", 0) or 0),
            {str(name): int(cases) for name, cases in shared.items()},
        )


def judgements(manifest: Mapping[str, Any]) -> tuple[EngineJudgement, ...]:
    """The adapter targets a run judged by a release's engine (none before this field existed)."""
    return tuple(EngineJudgement.of(entry) for entry in manifest.get("judgements") or ())


def run_conforms(manifest: Mapping[str, Any]) -> bool:
    """Whether a run's every unexpected divergence is one an engine-judged adapter shares with its
    release (and it has one): the run's verdict is conformance, not divergence."""
    diverge = int((manifest.get("verdicts") or {}).get("diverge", 0) or 0)
    shared = sum(item.diverge for item in judgements(manifest) if item.conforms)
    return bool(diverge) and shared == diverge


@dataclass(slots=True)
class DivergenceTally:
    """The unexpected divergences of the cases recorded through it, per class and three-way value."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, judged: Iterable[Case | CaseBlock]) -> None:
        """Count the diverging cases of `judged` (a block holds agreeing cases only)."""
        for item in judged:
            if isinstance(item, Case) and item.verdict == "diverge":
                self.counts[(item.case_class, item.oracle)] += 1

    def judgement(self, target: str, release: str) -> EngineJudgement:
        shared = {name: n for (name, oracle), n in self.counts.items() if oracle == SHARED}
        return EngineJudgement(target, release, sum(self.counts.values()), shared)
