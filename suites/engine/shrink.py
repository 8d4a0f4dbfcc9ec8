"""Each class of unexpected divergence a run found, shrunk to a small unit that still shows it.

After a family's run, for every class of unexpected divergence its cases showed (`Sink.smallest`),
Hypothesis looks for the smallest unit it can find within the family's `shrinking` strategy for that
class whose judged cases show the class again; that unit, or the smallest case seen when it is smaller
or none is found, runs once more and its cases of the class are recorded, so the class's case file
(`records.casefile`) is the minimal reproduction. A class `expectations.toml` lists is known already:
its cases are `expected`, never shrunk.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from hypothesis import Phase, find
from hypothesis.errors import NoSuchExample

from nats_conformance.records.casefile import CaseFile, size
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case
from nats_conformance.suites.engine.family import Family, On, cases_of, check, divergences
from nats_conformance.suites.engine.run import Sink
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.strategies import run_settings, seeded_generation


def minimise(
    family: Family[Any, Any, On],
    session: On,
    context: RunContext,
    found: Mapping[str, Case],
    sink: Sink,
    *,
    max_examples: int = 1000,
) -> list[Case]:
    """The recorded minimal cases of every class in `found` (a class's smallest case seen) that
    `family.shrinking` can search; a class whose cases were `unknown` is not shrunk."""
    # Trials judge by the same entries but leave the run's evidence (confirmations, features) alone.
    trial = replace(
        context,
        expectations=Expectations(context.expectations.entries),
        next_case_id=itertools.count().__next__,
    )
    minimal: list[Case] = []
    for case_class, seen in sorted(found.items()):
        strategy = family.shrinking(session.profile, seen)
        if strategy is None or seen.difference == "unknown":
            continue

        def shows(unit: object, wanted: str = case_class) -> bool:
            return any(case.case_class == wanted for case in divergences(check(family, session, trial, unit)))

        unit = family.unit_of(CaseFile.of(seen))
        try:
            with seeded_generation():
                settings = run_settings(max_examples, Phase.shrink)
                smaller = find(strategy, shows, settings=settings, random=random.Random(0))
        except NoSuchExample:
            pass
        else:
            shown = [
                case
                for case in cases_of(check(family, session, trial, smaller))
                if case.case_class == case_class
            ]
            if shown and size(shown[0]) < size(seen):
                unit = smaller
        kept = [
            case for case in cases_of(check(family, session, context, unit)) if case.case_class == case_class
        ]
        sink.record(kept)
        minimal += kept
    return minimal
