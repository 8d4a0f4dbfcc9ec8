"""Every-context family: one drawn (source, destination) applied, one place after the other, in every place
a transform applies on the same server, each judged by that place's own family.

docs.nats.io, "Subject Mapping and Partitioning" (nats-concepts/subject_mapping), introduction: subject
mappings apply in the account's mappings and "as part of the imports and exports between accounts"; the
"Streams" page (nats-concepts/jetstream/streams), "Subject Transforms", applies the same functions in a
stream; the JetStream RePublish ADR (github.com/nats-io/nats-architecture-and-design, adr/ADR-28) takes a
destination for republished messages. The server runs two accounts (the first with JetStream, the
second exporting every subject to it), and a unit is one pair with subjects of its source:

- ``validation`` and ``mapping``: the pair as an account mapping, accepted or refused, then the subjects
  published through it;
- ``stream-import``: the pair as a stream import's subject and ``to``;
- ``stream-transform``: the pair as a stream's ``subject_transform`` (2.10 and later);
- ``republish``: a stream of the source republishing to the destination (2.8.3 and later).

A place a release lacks is left out of the unit on that release. The report's contexts matrix (place x
function x release) then shows, from the same pairs, where a destination is accepted and what it gives.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from nats_conformance.fixtures.clients.jetstream import jetstream_config
from nats_conformance.fixtures.config import Account, ServerConfig
from nats_conformance.fixtures.errors import ServerError
from nats_conformance.fixtures.layouts import EXPORTER, EXPORTS, IMPORTER, NAMESPACE
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.republish import RePublish
from nats_conformance.reference.subjects import is_valid_subject
from nats_conformance.suites.engine.family import (
    Description,
    JetStreamSlots,
    Judged,
    Schedule,
    ServerFamily,
    TargetServer,
    beside,
    execute_many,
)
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.imports import ImportFamily, ImportRun
from nats_conformance.suites.families.mapping import MappingFamily, random_tokens
from nats_conformance.suites.families.republish import Publish, RepublishFamily, RepublishScenario
from nats_conformance.suites.families.streams import StreamTransformFamily, TransformRun
from nats_conformance.suites.families.validation import ValidationFamily
from nats_conformance.suites.strategies import (
    MappingBatch,
    bulk_subjects,
    destination_templates,
    sources,
    swarms,
)

SUBJECTS = 5
PLACES: tuple[ServerFamily[Any, Any], ...] = (
    ValidationFamily(),
    MappingFamily(),
    ImportFamily(),
    StreamTransformFamily(),
    RepublishFamily(),
)
"""The family that judges each place, in the order a unit visits them."""


@dataclass(frozen=True, slots=True)
class ContextsUnit:
    """One pair and the subjects published through it in every place."""

    source: str
    destination: str
    subjects: tuple[str, ...]
    seed: int = 0

    def member_units(self) -> tuple[object, ...]:
        """The unit of each family of `PLACES` that applies this pair in its place."""
        pair = (self.source, self.destination)
        return (
            pair,
            MappingBatch((pair,), (self.subjects,), self.seed),
            ImportRun("stream", self.source, self.destination, self.subjects, self.seed),
            TransformRun("stream", self.source, self.destination, self.subjects, self.seed),
            RepublishScenario(
                (self.source,),
                RePublish(self.source, self.destination),
                operations=tuple(Publish(subject, b"c", ()) for subject in self.subjects),
                seed=self.seed,
            ),
        )


def places(
    unit: ContextsUnit, version: str, backend: str
) -> list[tuple[int, ServerFamily[Any, Any], object]]:
    """The places of `unit` on a release (those it has): (index in `PLACES`, family, unit). RePublish
    needs a stream of the source, which only a valid subject can be ("Subject-Based Messaging",
    docs.nats.io), so a source that is not one leaves it out."""
    chosen = []
    for index, (family, member) in enumerate(zip(PLACES, unit.member_units(), strict=True)):
        if family.placement.unsupported(version, backend):
            continue
        if isinstance(member, RepublishScenario) and not is_valid_subject(unit.source):
            continue
        chosen.append((index, family, member))
    return chosen


@st.composite
def contexts_units(draw: st.DrawFn, profile: ReleaseProfile) -> ContextsUnit:
    """A source under the stream place's namespace, a destination of a swarm of functions, and subjects
    of the source (the mapping strategies, so every boundary they reach)."""
    source = draw(sources(namespace=NAMESPACE))
    destination = draw(destination_templates(source, profile, draw(swarms())))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    subjects = bulk_subjects(source, rng, SUBJECTS, pool=random_tokens(rng, 40))
    return ContextsUnit(source, destination, tuple(dict.fromkeys(subjects)), seed)


@dataclass(frozen=True, slots=True)
class ContextsFamily(TargetServer):
    name: str = "contexts"
    description: Description = Description(
        "one drawn pair applied, one place after the other on one server, as an account mapping "
        "(validation and mapping), a stream import, a stream's `subject_transform` (2.10 and later) "
        "and a RePublish destination (2.8.3 and later), each place judged by its own family",
        1_000,
    )
    features: tuple[str, ...] = tuple(feature for family in PLACES for feature in family.features)

    @property
    def schedule(self) -> Schedule[Session]:
        """16 units a batch (`execute_many`): each account place for all of them at once, their JetStream
        places side by side, each unit's in a JetStream account of its own (`base_config`)."""
        return Schedule(beside, 16, rolling=False, together=self.execute_many)

    def unsupported(self, version: str, backend: str) -> str:
        if backend == "external":
            return "every context needs accounts and JetStream in a configuration this suite writes"
        return ""

    def base_config(self, server: Backend) -> ServerConfig:
        """The importer (the default user's, with JetStream), the exporter, and a JetStream account for
        each unit of a batch (`execute_many`), there from the start rather than added by a reload for
        each batch."""
        slots = (Account(f"cx{number}", jetstream=True) for number in range(self.schedule.side_by_side))
        accounts = (Account(IMPORTER, jetstream=True), Account(EXPORTER, exports=EXPORTS), *slots)
        return replace(jetstream_config(server), accounts=accounts)

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[ContextsUnit]:
        return contexts_units(profile)

    def execute(self, session: Session, unit: ContextsUnit) -> tuple[tuple[int, object], ...]:
        """Each place of the unit, one after the other, each from the base configuration (a place's
        refused configuration leaves the one before in force): (its index in `PLACES`, what it
        observed)."""
        observed = []
        for index, family, member in places(unit, session.server.version, session.server.name):
            session.clear()
            observed.append((index, family.execute(session, member)))
        return tuple(observed)

    def execute_many(
        self, session: Session, units: Sequence[ContextsUnit]
    ) -> list[tuple[tuple[int, object], ...] | ServerError]:
        """`execute` of several units: each account place (validation, mapping, stream import) for every
        unit at once, in one reload, each unit in accounts of its own (the place's family's
        `execute_many`); then the JetStream places (stream transform, RePublish: streams and their
        waits) of every unit side by side, each unit's in a JetStream account of the base configuration,
        its places one after the other. A server error ends the batch: every unit gets it, and each runs
        again alone (`suites.engine.family.check_many`)."""
        version, backend = session.server.version, session.server.name
        observed: list[list[tuple[int, object]]] = [[] for _ in units]
        batched: dict[int, list[tuple[int, object]]] = {}
        jetstream: list[list[tuple[int, ServerFamily[Any, Any], object]]] = [[] for _ in units]
        for number, unit in enumerate(units):
            for index, family, member in places(unit, version, backend):
                if isinstance(family, JetStreamSlots):
                    jetstream[number].append((index, family, member))
                else:
                    batched.setdefault(index, []).append((number, member))
        try:
            for index, members in batched.items():  # each applies its whole configuration itself
                outcomes = execute_many(PLACES[index], session, [member for _, member in members])
                for (number, _), outcome in zip(members, outcomes, strict=True):
                    if isinstance(outcome, ServerError):
                        raise outcome
                    observed[number].append((index, outcome))
            in_force = {account.name for account in session.server.config.accounts}
            if not {account.name for account in session.base.accounts} <= in_force:
                session.clear()  # a place ran a unit alone, in accounts of its own only
        except ServerError as error:
            return [error] * len(units)

        def run(number: int) -> tuple[tuple[int, object], ...] | ServerError:
            slot = replace(session.as_user(session.base.accounts[2 + number].credentials), alongside=True)
            try:
                for index, family, member in jetstream[number]:
                    observed[number].append((index, family.execute(slot, member)))
            except ServerError as error:
                return error
            return tuple(sorted(observed[number], key=lambda place: place[0]))

        with ThreadPoolExecutor(len(units), thread_name_prefix="contexts-unit") as pool:
            outcomes = list(pool.map(run, range(len(units))))
        try:
            session.clear()
        except ServerError as error:
            return [error] * len(units)
        return outcomes

    def judge(
        self,
        context: RunContext,
        profile: ReleaseProfile,
        unit: ContextsUnit,
        observed: tuple[tuple[int, object], ...],
    ) -> Judged:
        members = unit.member_units()
        return [
            case
            for index, seen in observed
            for case in PLACES[index].judge(context, profile, members[index], seen)
        ]

    def unknown(
        self, context: RunContext, profile: ReleaseProfile, unit: ContextsUnit, reason: str
    ) -> Judged:
        """The cases of every place of the unit, all unknown with `reason`."""
        return [
            case
            for _, family, member in places(unit, profile.name, "")
            for case in family.unknown(context, profile, member, reason)
        ]

    def unit_of(self, case: CaseFile) -> ContextsUnit:
        """The case's pair in every place, publishing its subject."""
        return ContextsUnit(case.source, case.destination, (case.subject,) if case.subject else ())
