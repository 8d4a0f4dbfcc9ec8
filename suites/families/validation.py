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
            `*`, malformed calls); one source in thirty is no subject or an odd one (`ODD_SOURCES`)."""
            source = draw(mostly(sources(namespace="v"), st.sampled_from(ODD_SOURCES), one_in=30))
            templates = destination_templates(source, profile, draw(swarms()))
            edges = mostly(templates, odd_destinations(source, profile), one_in=8)
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
