"""One case run again on a fresh server or asked of an adapter: the `replay` command's work, for
command-line fields or a case file (records.casefile), on any release and backend. Known divergences are
not looked up: a replay shows the comparison with the reference as it is."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Final

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.fixtures.options import RunConfig
from nats_conformance.fixtures.provision import resolve_binary
from nats_conformance.fixtures.servers import open_backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile, CaseFileError
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import Case
from nats_conformance.reference.profiles import NEWEST, for_version
from nats_conformance.reference.protocol import TransformQuestion
from nats_conformance.suites.engine.family import ServerFamily, cases_of, check
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES, LIBRARY, family_of_case
from nats_conformance.suites.families.library import BACKEND, AdapterSession


def replay_on_server(
    run: RunConfig, case: CaseFile, *, layout: str = "", expectations: Expectations | None = None
) -> list[Case]:
    """The cases of the unit a case file spells, run by its family on the run's first target, started
    afresh (in `layout`, `records.replay.LAYOUTS`, or else the layout the case was found in); a case
    whose mapping the reference refuses is asked as a validation case. Divergences `expectations` lists
    are `expected` (none by default)."""
    family = family_of_case(case, layout=layout)
    known = expectations or Expectations()
    cases = _replay(run, family, case, known)
    if not cases and family is not FAMILIES["validation"]:
        cases = _replay(run, FAMILIES["validation"], case, known)
    return cases


def _replay(
    run: RunConfig, family: ServerFamily[Any, Any], case: CaseFile, expectations: Expectations
) -> list[Case]:
    server = family.placement.server_for(open_backend(run.targets[0], run, binary_resolver=resolve_binary))
    counter = itertools.count()
    try:
        server.start(family.placement.base_config(server))
        context = RunContext.for_server(
            server, run_id="replay", expectations=expectations, next_case_id=lambda: next(counter)
        )
        profile = for_version(run.profile) if run.profile else None
        session = Session.of(server, server.config, profile)
        return cases_of(check(family, session, context, family.unit_of(case)))
    finally:
        server.cleanup()


def replay_file_on_server(
    case: CaseFile, run: RunConfig, *, layout: str = "", expectations: Expectations | None = None
) -> list[Case]:
    """A case file's case on a server target; a streaming case whose source names the fault-tolerance
    example runs that whole scenario again."""
    if case.feature == "streaming":
        # Imported here: the streaming client needs protobuf (the `streaming` extra).
        from nats_conformance.suites.streaming.fault_tolerance import EXAMPLE_SOURCE, replay_example

        if case.source.strip() == EXAMPLE_SOURCE:
            return replay_example()
    return replay_on_server(run, case, layout=layout, expectations=expectations)


def replay_on_adapter(case: CaseFile, command: str, *, strict_errors: bool = False) -> list[Case]:
    """A case file's question asked of an adapter (`LIBRARY`) in the mode its hello declares, under the
    rules of the release the case names (else the newest)."""
    unit = LIBRARY.unit_of(case)
    with AdapterProcess(command) as adapter:
        if unit.template.op not in adapter.ops:
            raise CaseFileError(f"{adapter.implementation} does not answer {unit.template.op} questions")
        named = unit.template.server_version if isinstance(unit.template, TransformQuestion) else None
        profile = for_version(named or NEWEST.name)
        counter = itertools.count()
        context = RunContext(
            "replay", adapter.implementation, profile.name, BACKEND, Expectations(), lambda: next(counter)
        )
        session = AdapterSession(adapter, profile, strict_errors=strict_errors)
        return cases_of(check(LIBRARY, session, context, unit))


REPLAY_OUTCOMES: Final = ("fixed", "still failing", "unknown")


def replay_outcome(cases: Sequence[Case]) -> str:
    """What a replayed case file shows now: `still failing` when a case diverges, `fixed` when every
    case agrees or is expected, else `unknown` (nothing judged, or unknown cases)."""
    verdicts = {case.verdict for case in cases}
    if "diverge" in verdicts:
        return "still failing"
    if verdicts and verdicts <= {"agree", "expected"}:
        return "fixed"
    return "unknown"
