"""Validation family: a server accepts a mapping iff the reference compiles it for the server's release.

"Subject Mapping and Partitioning" (docs.nats.io, nats-concepts), every section that names a function or
a wildcard rule. One unit is one (source, destination) pair, valid or not.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from fixtures.session import Session
from records.casefile import CaseFile
from reference.profiles import ReleaseProfile
from suites.differential import RunContext, Verdict, execute_validation, judge_validation
from suites.engine.family import Judged, TargetServer
from suites.strategies import ODD_SOURCES, destination_templates, mostly, odd_destinations, sources, swarms

Pair = tuple[str, str]

EDGE_CALLS = ("{{wildcard(x)}}", "{{split(1,-,x)}}", "{{split(1,a b)}}")
"""Malformed calls that `odd_destinations` draws too rarely for the default budget to meet (each reaches
a refusal of its own in nats-server's parser): a non-integer wildcard index, `split` with three arguments,
and a split separator with a space inside (not after the comma, which the argument separator takes)."""


def edge_destination(source: str) -> st.SearchStrategy[str]:
    """One of `EDGE_CALLS` as the destination of `source` (``.>`` after it when the source ends in ``>``,
    so that the call is parsed rather than refused for a missing ``>``)."""
    tail = ".>" if source.endswith(">") else ""
    return st.sampled_from(EDGE_CALLS).map(lambda call: call + tail)


@dataclass(frozen=True, slots=True)
class ValidationFamily(TargetServer):
    name: str = "validation"
    features: tuple[str, ...] = ("validation",)
    budget: int = 600

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[Pair]:
        @st.composite
        def pair(draw: st.DrawFn) -> Pair:
            """A source and a destination for it, of a swarm of one to three functions (so that each
            function is drawn in depth, its edges included); one destination in ten is empty (required
            by the document), one in eight at the edges of the rules (`odd_destinations`: `>` alone,
            `*`, malformed calls), and one in twenty-five one of `EDGE_CALLS`; one source in thirty is no
            subject or an odd one (`ODD_SOURCES`)."""
            source = draw(mostly(sources(namespace="v"), st.sampled_from(ODD_SOURCES), one_in=30))
            templates = destination_templates(source, profile, draw(swarms()))
            edges = mostly(
                mostly(templates, odd_destinations(source, profile), one_in=8),
                edge_destination(source),
                one_in=25,
            )
            return source, draw(mostly(edges, st.just(""), one_in=10))

        return pair()

    def execute(self, session: Session, unit: Pair) -> Verdict:
        return execute_validation(session, *unit)

    def judge(self, context: RunContext, profile: ReleaseProfile, unit: Pair, observed: Verdict) -> Judged:
        return [judge_validation(context, profile, *unit, observed)]

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: Pair, reason: str) -> Judged:
        return self.judge(context, profile, unit, Verdict("", reason))

    def unit_of(self, case: CaseFile) -> Pair:
        return case.source, case.destination
