"""Import family: a subject transform in an import between two accounts, configured in the server's
configuration file.

docs.nats.io, "Subject Mapping and Partitioning" (nats-concepts/subject_mapping), introduction: subject
mappings also apply "as part of the imports and exports between accounts". The account ``EXP`` exports
every subject (``>``) as a stream and as a service; the account ``IMP`` imports one drawn subject of it
(the source, from the mapping strategies) with a drawn local subject ``to`` (the destination), or a
stream import with a ``prefix`` instead; now and then the exporter exports a subject near the import's
in place of ``>`` (`exports_near`), which must contain the import (`IMPORT_NOT_EXPORTED`); in the
configuration file the exporter may also import from a third account, ``RLY``
(`fixtures.layouts.relay_subject`). The transform maps the exporter's subjects to
the importer's (`reference.contexts`).

- ``stream``: subjects of the source are published in ``EXP``; each must reach an ``IMP`` subscriber of
  ``>`` once, on the reference's subject; in one unit in four a second ``IMP`` subscription near where
  the import delivers (`listens_near`) must receive it once iff its subject matches it.
- ``service``: requests are published in ``IMP`` on subjects of the ``to`` pattern; each must reach an
  ``EXP`` subscriber of ``>`` once, on the one exporter subject the transform maps to it, and the
  exporter's reply must come back to the requester's reply subject.

Per unit: one case for the configuration (the server takes the import iff the reference does in that
place), then one per published subject.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from nats_conformance.fixtures.clients.wire import WireConnection, WireError
from nats_conformance.fixtures.config import Account, ServerConfig
from nats_conformance.fixtures.errors import ConfigRejectedError, ServerError
from nats_conformance.fixtures.layouts import (
    CHAIN_OPTIONS,
    EXPORTER,
    EXPORTS,
    IMPORTER,
    KINDS,
    apart,
    import_accounts,
    import_chain,
    relay_subject,
)
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import RESTARTED, Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.unknowns import UNOBSERVABLE, stated
from nats_conformance.reference.contexts import (
    IMPORT_CYCLE,
    IMPORT_DUPLICATE,
    IMPORT_NOT_EXPORTED,
    compile_in,
    local_pattern,
    prefixed,
    repeats_a_wildcard,
    requested,
)
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.matching import contains, matches
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.subjects import is_valid_subject
from nats_conformance.reference.transform import NOT_DELIVERED, Transform
from nats_conformance.suites.engine.family import (
    Description,
    Judged,
    Schedule,
    TargetServer,
    beside,
    in_operator_mode,
)
from nats_conformance.suites.engine.verdicts import (
    CRASH,
    DUPLICATED,
    NOT_A_SUBJECT,
    NOT_ARRIVED,
    RunContext,
    UnitCases,
    acceptance,
    is_literal,
    judged_as,
    wrong_subject,
)
from nats_conformance.suites.expected import functions_named
from nats_conformance.suites.families.mapping import random_tokens
from nats_conformance.suites.harness import observe_subscriptions
from nats_conformance.suites.strategies import (
    INTEGER_EDGES,
    below,
    bulk_subjects,
    destination_templates,
    function_tokens,
    malformed_function_tokens,
    mostly,
    sources,
    swarms,
)

NAMESPACE = "e"
SUBJECTS = 8
INBOX = "_INBOX.nc"
TIMEOUT = 5.0
NO_FRAME = stated(
    UNOBSERVABLE, "not published: a subject mapped to a 'to' with whitespace cannot be carried by a MSG frame"
)
FUNCTION_TOKEN = re.compile(r"\{\{.*?\}\}")
LITERAL_SOURCE = "-literal-source"
"""Appended to the difference of a case whose source has no wildcard: the server then builds no transform
and delivers on the ``to`` subject as written, which sets those cases apart."""
NARROW_EXPORT = "-narrow-export"
"""Appended after it to the difference of the configuration case of a unit whose exporter exports a
subject near the import's (`exports_near`): whether that export takes the import is a question of its
own, which no divergence listed for an import's `to` explains."""


LISTENER_MISSED = "listener-missed"
"""A message that arrived under `>` and matches the importer's other subscription, yet missed it."""
LISTENER_EXTRA = "listener-extra"
"""A message that reached the importer's other subscription, which it does not match."""
LISTENER_WRONG = "listener-wrong"
"""A message that reached the importer's other subscription on another subject, or more than once."""


REPEATED_WILDCARD = "-repeated-wildcard"
"""Appended to a listener's difference when the import's `to` names one wildcard twice (``$1.$1``):
servers fail such imports' subscriptions in ways of their own (`stream-import-repeated-wildcard-crashes`,
`stream-import-repeated-wildcard-listener-missed`), which this sets apart from the other listeners'."""


def feature_of(kind: str) -> str:
    return f"{kind}-import"


@dataclass(frozen=True, slots=True)
class ImportRun:
    """One import: its kind, the exporter's subject (source), the local subject (destination) and the
    subjects published: the exporter's for a stream, the importer's for a service."""

    kind: str
    source: str
    destination: str
    subjects: tuple[str, ...]
    seed: int = 0
    relay: str = ""
    """What the exporter imports from the relay account ('' nothing: `fixtures.layouts.relay_subject`)."""
    prefix: str = ""
    """A stream import's `prefix`, in place of a `to` ('' none)."""
    cycle: bool = False
    """Whether the exporter imports every subject back from the importer (`IMPORT_CYCLE`)."""
    duplicate: bool = False
    """Whether the importer lists the import twice (`IMPORT_DUPLICATE`)."""
    unexported: bool = False
    """Whether the exporter exports nothing (`IMPORT_NOT_EXPORTED`)."""
    export: str = ""
    """The exporter's subject in place of `>` ('' `>`: `fixtures.layouts.exports`)."""
    listen: str = ""
    """A second subscription of the importer's, near the import's local subjects (`listens_near`; ''
    none)."""

    def to_json(self) -> str:
        step: dict[str, object] = {"kind": self.kind, "source": self.source, "destination": self.destination}
        extra = {name: getattr(self, name) for name in (*CHAIN_OPTIONS, "listen")}
        return json.dumps({**step, **{name: value for name, value in extra.items() if value}})

    def accounts(self) -> tuple[Account, ...]:
        return import_accounts(
            self.kind,
            self.source,
            self.destination,
            self.relay,
            self.prefix,
            cycle=self.cycle,
            duplicate=self.duplicate,
            unexported=self.unexported,
            export=self.export,
        )

    @property
    def refusal(self) -> str:
        """Why the reference refuses the accounts whatever the import's transform ('' when it does not)."""
        twists = (
            (self.cycle, IMPORT_CYCLE),
            (self.duplicate, IMPORT_DUPLICATE),
            (self.unexported, IMPORT_NOT_EXPORTED),
            (bool(self.export) and not contains(self.source, self.export), IMPORT_NOT_EXPORTED),
        )
        return next((kind for twisted, kind in twists if twisted), "")

    @property
    def local(self) -> str:
        """The import's `to`, or the `to` its prefix amounts to (`reference.contexts.prefixed`)."""
        return prefixed(self.source, self.prefix) if self.prefix else self.destination


@dataclass(frozen=True, slots=True)
class ImportObservation:
    """The server's refusal of the configuration ('' when it took it), whether it took it, where each
    publication arrived (by index), which requests' replies came back, and why the unit stopped early
    ('' when it did not)."""

    rejection: str = ""
    configured: bool = False
    arrived: tuple[tuple[str, ...], ...] = ()
    replied: tuple[bool, ...] = ()
    failure: str = ""
    """Why the unit stopped early: the server's panic line when it died (then restarted), else the
    connection's error."""
    crashed: bool = False
    heard: tuple[tuple[str, ...], ...] = ()
    """Where each publication arrived on the unit's `listen` subscription (by index)."""


def published_subjects(
    kind: str, source: str, destination: str, profile: ReleaseProfile, seed: int
) -> list[str]:
    """The subjects a unit publishes: of the source for a stream import, of the local pattern of the
    destination for a service import (of the source when it has no `to`)."""
    rng = random.Random(seed)
    pattern = source if kind == "stream" or not destination else local_pattern(destination, profile)
    return list(dict.fromkeys(bulk_subjects(pattern, rng, SUBJECTS, pool=random_tokens(rng, 40))))


WILDCARD_SPELLINGS = ("${}", "{{{{wildcard({})}}}}", "{{{{ wildcard({}) }}}}")
"""How a `to` may name the source's wildcard n: `$n`, the function, and the function spaced as users
write it."""


@st.composite
def reversible_destinations(draw: st.DrawFn, source: str) -> str:
    """A `to` a service import can reverse: each `*` of the source named once, in any order and any
    spelling, among literal tokens (one holding a space, which the documents' subjects may not; one in
    four a `$` with an index no wildcard has: 0, one past the last, or an integer edge), with `>` last
    when the source ends with it (most drawn templates are refused there, so the family draws these
    too)."""
    tokens = source.split(".")
    count = tokens.count("*")
    order = draw(st.permutations(range(1, count + 1)))
    named = [draw(st.sampled_from(WILDCARD_SPELLINGS)).format(n) for n in order]
    unnamed = st.sampled_from([f"${index}" for index in (0, count + 1, *INTEGER_EDGES[3:])])
    literal = mostly(st.sampled_from(("r", "s", "a b")), unnamed, one_in=4)
    literals = draw(st.lists(literal, min_size=0 if named else 1, max_size=2))
    body = draw(st.permutations([*named, *literals]))
    return ".".join([*body, *([">"] if tokens[-1] == ">" else [])])


@st.composite
def every_token_kind(draw: st.DrawFn, source: str, profile: ReleaseProfile) -> str:
    """A reversible `to` with one of its tokens replaced by a token of another kind: a function of any
    name (which a strict, reversible transform cannot take), a malformed call, a `*` (the older form of
    an import's wildcard), a `>` out of place, or a literal; or with one `*` of the source left unnamed.
    These reach the strict transform of imports and its reverse at their edges."""
    tokens = draw(reversible_destinations(source)).split(".")
    tail = [">"] if tokens[-1] == ">" else []
    body = tokens[: len(tokens) - len(tail)]
    kind = st.one_of(
        function_tokens(source, profile),
        malformed_function_tokens(source),
        st.sampled_from(("*", ">", "x", "$0")),
    )
    drop: bool = draw(st.booleans())
    if body and drop:
        del body[draw(st.integers(0, len(body) - 1))]
        body = body or ["x"]
    else:
        body.insert(draw(st.integers(0, len(body))), draw(kind))
    return ".".join(body + tail)


SIXTEENTHS = below(16)
"""How `exports_near` changes a token, built once."""


@st.composite
def exports_near(draw: st.DrawFn, source: str, *, starred: bool = True) -> str:
    """A subject for the exporter near the import's `source`: after its first token, each token kept
    (half the time; with `starred`, a `*` one time in eight made `*x`, a literal token to the server
    which the documents forbid, "Subject-Based Messaging"), made `*` (seven in sixteen) or made `x`, then
    cut to a `>` after a drawn token past the source's first `*` (if any), or kept whole, or one `*`
    longer (when it does not end in `>`); the source itself is cut one token earlier to a `>`. Imports
    contained in it and not, token by token (`*` in `*`, `>` in `*`, a literal in another), where
    mutants 1494 and 1498 of 2.14.10's `isSubsetMatchTokenized` take an import's `*` under an export's
    `*` for a miss, and mutant 1488 an import's `*` under an export's `*x` for a match."""
    first, *rest = source.split(".")
    tokens = [first]
    for token in rest:
        kind = draw(SIXTEENTHS)
        own = "*x" if starred and token == "*" and kind == 0 else token
        tokens.append(own if kind < 8 else "x" if kind == 15 else "*")
    low = rest.index("*") + 2 if "*" in rest else 2
    end = draw(st.integers(min(low, len(tokens)), len(tokens) + 1))
    if end < len(tokens):
        tokens = [*tokens[:end], ">"]
    elif end > len(tokens) and tokens[-1] != ">":
        tokens.append("*")
    if tokens != [first, *rest]:
        return ".".join(tokens)
    kept = len(tokens) - (2 if tokens[-1] == ">" else 1)
    return ".".join([*tokens[: max(1, kept)], ">"])


@st.composite
def account_function_imports(draw: st.DrawFn, source: str, profile: ReleaseProfile) -> tuple[str, str]:
    """A literal source (`source` with each wildcard made `w`) and a `to` of literal tokens around one
    call of an account function, well formed or not (`function_tokens`). A literal source's `to` is a
    subject, no transform (nats-server's `addMappedStreamImportWithClaim`), so only the resolution of
    the account functions can refuse it: where mutant 889 of 2.14.10 drops that resolution's error,
    ``x.{{account-hash-leaf-remote()}}`` would be taken as it is written."""
    literal = ".".join("w" if token in ("*", ">") else token for token in source.split("."))
    names = sorted(profile.account_functions)
    call = draw(function_tokens(literal, profile, names, account_functions=True))
    tokens = draw(st.lists(st.sampled_from(("r", "s")), max_size=2))
    tokens.insert(draw(st.integers(0, len(tokens))), call)
    return literal, ".".join(tokens)


@st.composite
def listens_near(draw: st.DrawFn, local: str, delivered: str) -> str:
    """A subscription near where an import delivers: near the subject `delivered` ('' none), else near
    its local subjects (its `to` with each token that is not literal made `*`); that subject itself
    one time in four, else one near it (`exports_near`): narrower, wider, overlapping it or not. ''
    when neither makes a valid subject. A subscription in the importer that is not `>` makes the server
    subscribe in the exporter on its behalf, by what the subscription shares with each import's `to`
    (nats-server's `addShadowSubscriptions`, where ``isSubsetMatchTokenized`` decides which of its four
    cases applies); a message must reach it all the same iff its subject matches it
    ("Subject-Based Messaging", wildcards)."""
    pattern = delivered or ".".join(
        token if token == ">" or not any(mark in token for mark in "{$*") else "*"
        for token in local.split(".")
    )
    if not is_valid_subject(pattern):
        return ""
    return draw(mostly(exports_near(pattern, starred=False), st.just(pattern), one_in=4))


def delivered_first(kind: str, source: str, local: str, subjects: list[str], profile: ReleaseProfile) -> str:
    """The subject the first of `subjects` is delivered on through a stream import, by the reference
    ('' when it refuses the import, delivers nothing, or there is no subject)."""
    try:
        transform = compile_in(feature_of(kind), source, local, profile, accounts=(IMPORTER, EXPORTER))
        delivered = transform.delivers(subjects[0]) if subjects else ""
    except (MappingError, ValueError):
        return ""
    return "" if delivered == NOT_DELIVERED else delivered


PREFIXES = ("p", "p.", "p.q", "p.*", "p.>", "p.*q", "q>")
"""Prefixes of a stream import: literal ones, with and without the `.` the server adds, two that are
not literal (refused), and two whose tokens hold a wildcard's character inside, which are literal
(a check of every `*` and `>` character, as mutant 1071 of 2.14.10 makes of `subjectIsLiteral`, would
refuse them)."""


@st.composite
def import_runs(draw: st.DrawFn, profile: ReleaseProfile, *, file_only: bool = True) -> ImportRun:
    """A kind, a source under `e.` and a destination of a swarm of functions (the mapping strategies;
    for a stream import with `file_only`, the release's account functions among them: a service import
    with them is not modelled, its requests would need the resolved local subject),
    one in eight a destination a service import can reverse, one in eight such a destination with a
    token of another kind (`every_token_kind`), and one in sixteen none (an import without `to`). With
    `file_only`, the draws only a configuration file holds: one stream import in eight has a `prefix`
    (`PREFIXES`) in place of its `to`; of the others, one in four has the exporter import from the
    relay account a subject that collides with the import, where it can
    (`fixtures.layouts.relay_subject`), and one in eighteen each has it import every subject back from
    the importer (`IMPORT_CYCLE`), has the importer list its import twice (`IMPORT_DUPLICATE`) or has
    the exporter export nothing (`IMPORT_NOT_EXPORTED`); a service import's `to` is then one it can
    reverse, which the server takes (a refused import leaves the exporter's unread). One in eight of
    the others with no prefix and a valid source has the exporter export a subject near it
    (`exports_near`), and no `to`. With `file_only`, on a release with account functions, one stream
    import in eight is an `account_function_imports` pair, with neither a prefix, a chain nor an export."""
    kind = draw(st.sampled_from(KINDS))
    source = draw(sources(namespace=NAMESPACE))
    in_file = file_only and kind == "stream"
    templates = destination_templates(source, profile, draw(swarms()), account_functions=in_file)
    reversible = mostly(reversible_destinations(source), every_token_kind(source, profile), one_in=2)
    destination = draw(mostly(mostly(templates, reversible, one_in=4), st.just(""), one_in=16))
    scoped = in_file and bool(profile.account_functions) and draw(below(8)) == 0
    if scoped:
        source, destination = draw(account_function_imports(source, profile))
    prefixes = st.sampled_from(PREFIXES)
    prefix = draw(mostly(st.just(""), prefixes, one_in=8)) if in_file and not scoped else ""
    destination = "" if prefix else destination
    chain = draw(st.integers(0, 17)) if file_only and not prefix and not scoped else 0
    relayed, cycle, duplicate, unexported = 11 <= chain <= 14, chain == 15, chain == 16, chain == 17
    if (relayed or chain >= 15) and kind == "service":  # most drawn templates are refused: unread chains
        destination = draw(reversible_destinations(source))
    near = file_only and chain < 11 and not prefix and not scoped and is_valid_subject(source)
    export = draw(mostly(st.just(""), exports_near(source), one_in=8)) if near else ""
    destination = "" if export else destination  # most drawn templates are refused: unread exports
    seed = draw(st.integers(0, 2**32 - 1))
    subjects = published_subjects(kind, source, destination, profile, seed)
    relay = relay_subject(kind, source, destination) if relayed else ""
    local = prefixed(source, prefix) if prefix else destination or source
    listen = ""
    if kind == "stream" and draw(below(4)) == 0:
        listen = draw(listens_near(local, delivered_first(kind, source, local, subjects, profile)))
    return ImportRun(
        kind,
        source,
        destination,
        tuple(subjects),
        seed,
        relay,
        prefix,
        cycle=cycle,
        duplicate=duplicate,
        unexported=unexported,
        export=export,
        listen=listen,
    )


def may_map_to_whitespace(destination: str, profile: ReleaseProfile) -> bool:
    """True iff a subject mapped with `destination` may hold whitespace: it has whitespace outside its
    function tokens, or in them on a release that takes no spaces there."""
    outside = FUNCTION_TOKEN.sub("", destination) if profile.spaces_in_functions else destination
    return any(character.isspace() for character in outside)


@dataclass(frozen=True, slots=True)
class ImportFamily(TargetServer):
    """Imports in the configuration file, or (`operator`) in account JWTs pushed to an operator-mode
    server: the exporter's JWT is preloaded, the importer's pushed with each unit's import (its `to` as
    the claim's local subject)."""

    name: str = "import"
    description: Description = Description(
        "one stream or service import between two accounts of the configuration file, its subject and "
        "`to` drawn by the mapping strategies, and subjects published in the exporting account "
        "(stream) or requests in the importing one (service); in one unit in four the exporter also "
        "imports from a third account (`RLY`) a subject that collides with the import's `to` and that "
        "none of the unit's subjects use, so that the server's cycle checks walk a chain of three "
        "accounts (`nats_conformance.fixtures.layouts.relay_subject`), and one stream import in eight has a "
        "`prefix` in place of its `to` (`p`, `p.`, `p.q`, and two that are not literal; observed: a literal "
        "prefix is put before the subjects, `nats_conformance.reference.contexts.prefixed`); and in one unit "
        "in eighteen each, configurations that must be refused: the exporter imports every subject back "
        'from the importer, a cycle (observed on 2.2.6 to 2.15.2, "import forms a cycle", '
        "`IMPORT_CYCLE`), the importer lists its import twice (`IMPORT_DUPLICATE`), or the exporter "
        "exports nothing (`IMPORT_NOT_EXPORTED`); and in one of the others in eight the exporter exports "
        "a subject near the import's in place of `>`, which must contain it (`IMPORT_NOT_EXPORTED`); one "
        "stream import in four has the importer also subscribe near where it delivers, which must receive "
        "each message iff its subject matches (`listener-missed`, `-extra`, `-wrong`)",
        2_000,
    )
    features: tuple[str, ...] = tuple(feature_of(kind) for kind in KINDS)
    operator: bool = False

    @property
    def schedule(self) -> Schedule[Session]:
        """One unit at a time in the family's own runs; several at once (the `contexts` family's places)
        together (`execute_many`)."""
        return Schedule(beside, together=self.execute_many)

    def server_for(self, server: Backend) -> Backend:
        return in_operator_mode(server, self.operator)

    def unsupported(self, version: str, backend: str) -> str:
        if backend == "external":
            return "imports need two accounts in a configuration this suite writes"
        return ""

    def base_config(self, server: Backend) -> ServerConfig:
        return ServerConfig(accounts=(Account(IMPORTER), Account(EXPORTER, exports=EXPORTS)))

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[ImportRun]:
        """Without relays and prefixes in operator mode, whose server holds two accounts
        (`fixtures.servers.operator`) and whose claims hold a local subject."""
        return import_runs(profile, file_only=not self.operator)

    def execute(self, session: Session, unit: ImportRun) -> ImportObservation:
        """Put the import in force, then publish; a server that died meanwhile is started again.

        A server that dies of a panic while it loads the unit's configuration may have died of an
        earlier unit's, still in force (a refused configuration leaves it, and some imports crash the
        server at a later subscription): the configuration is loaded once more on the restarted server,
        the restart journaled, and the crash is the unit's only when it recurs. On a -cover build the
        counters are saved first (`Session.save_counters`, restarting on the base configuration, which
        drops an earlier unit's imports): a server that panics writes none."""
        session.save_counters(session.base)
        for attempt in range(2):
            try:
                session.configure_accounts(*unit.accounts())
                break
            except ConfigRejectedError as error:
                return ImportObservation(rejection=error.server_message)
            except ServerError as error:
                failed = self._failed(session, f"configuration failed: {error}", configured=False)
                if attempt or not failed.crashed:
                    return failed
                session.restarts.append(f"{RESTARTED} {failed.failure} (loading a unit's configuration)")
        return self._observed(session, unit, session.peer_url)

    def execute_many(
        self, session: Session, units: Sequence[ImportRun]
    ) -> list[ImportObservation | ServerError]:
        """Several units at once (`contexts`; the family's own units run one at a time): the stream
        imports together (`_together`), then each service import alone (`execute`): a service import of
        an account that a reload adds routed no request at once (none of one request on 2.9.25 to
        2.15.2, where the same configuration applied again routed it)."""
        streams = iter(self._together(session, [unit for unit in units if unit.kind == "stream"]))
        return [next(streams) if unit.kind == "stream" else self._alone(session, unit) for unit in units]

    def _alone(self, session: Session, unit: ImportRun) -> ImportObservation | ServerError:
        try:
            return self.execute(session, unit)
        except ServerError as error:
            return error

    def _together(
        self, session: Session, units: Sequence[ImportRun]
    ) -> list[ImportObservation | ServerError]:
        """Each unit's accounts under names of its own (`fixtures.layouts.apart`), all in one reload
        (`Session.configure_apart`; the server's refusal of an import names its `accounts` block's line,
        and the import's subject), then each unit's subjects published side by side, each between its
        own importer and exporter. The units a crash or another server error cut short run again alone
        (`_again_alone`). A batch's importers hold no subscription but the tap's `>`, where a unit alone
        imports into the default account, which also holds the generation probe's: an import that
        crashes the server only once a subscription matches its local subjects
        (stream-import-repeated-wildcard-crashes from 2.10) crashes it alone, not in a batch."""
        if not units:
            return []
        groups = [apart(unit.accounts(), str(number)) for number, unit in enumerate(units)]

        def parts_named(fault: str) -> list[int]:
            """The units whose import the fault names ('Error adding stream import "S": ... from "S" to
            "T"...')."""
            return [
                number
                for number, unit in enumerate(units)
                if f'import "{unit.source}"' in fault and f'to "{unit.local}"' in fault
            ]

        try:
            session.save_counters(session.base)
            refusals = session.configure_apart(groups, parts_named=parts_named)
        except ServerError as error:
            return self._again_alone(session, units, [error] * len(units))

        def observed(number: int) -> ImportObservation | ServerError:
            if refusals[number]:
                return ImportObservation(rejection=refusals[number])
            importer, exporter, *_ = groups[number]
            slot = replace(session.as_user(importer.credentials), alongside=True)
            try:
                return self._observed(slot, units[number], slot.as_user(exporter.credentials).url)
            except ServerError as error:
                return error

        with ThreadPoolExecutor(len(units), thread_name_prefix="import-unit") as pool:
            return self._again_alone(session, units, list(pool.map(observed, range(len(units)))))

    def _again_alone(
        self, session: Session, units: Sequence[ImportRun], outcomes: list[ImportObservation | ServerError]
    ) -> list[ImportObservation | ServerError]:
        """`outcomes`, each unit the server cut short run again alone (`execute`, which finds the unit a
        crash belongs to), the server restarted first when it died (journaled); the other units keep what
        they observed. A server error meanwhile is the outcome of each unit not yet run again."""
        if not any(isinstance(outcome, ServerError) for outcome in outcomes):
            return outcomes
        again = list(outcomes)
        try:
            if not session.is_running():
                session.recover(next(o for o in outcomes if isinstance(o, ServerError)))
            for number, outcome in enumerate(outcomes):
                if isinstance(outcome, ServerError):
                    again[number] = self.execute(session, units[number])
        except ServerError as error:
            return [error if isinstance(outcome, ServerError) else outcome for outcome in again]
        return again

    def _observed(self, session: Session, unit: ImportRun, exporter_url: str) -> ImportObservation:
        """Publish the unit's subjects with its import in force: the exporter's through a stream import,
        to an importer's subscriber of `>`; the importer's requests through a service import."""
        if may_map_to_whitespace(unit.destination, session.profile):
            return ImportObservation(configured=True, failure=NO_FRAME)
        if unit.kind == "stream":
            patterns = [">", *([unit.listen] if unit.listen else [])]
            seen = observe_subscriptions(
                session.url, patterns, unit.subjects, publisher_url=exporter_url, timeout=TIMEOUT
            )
            if seen.failure:
                return self._failed(session, seen.failure, configured=True)
            sids = (1, 2) if unit.listen else (1,)
            arrived, *heard = (
                tuple(tuple(seen.subjects_for(sid, index)) for index in range(len(unit.subjects)))
                for sid in sids
            )
            return ImportObservation(configured=True, arrived=arrived, heard=heard[0] if heard else ())
        try:
            return _request(session.url, exporter_url, unit.subjects)
        except WireError as error:
            return self._failed(session, str(error), configured=True)

    @staticmethod
    def _failed(session: Session, failure: str, *, configured: bool) -> ImportObservation:
        panic = session.crash_of(failure)
        if not panic:
            return ImportObservation(configured=configured, failure=failure)
        return ImportObservation(configured=configured, failure=panic, crashed=True)

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: ImportRun, observed: ImportObservation
    ) -> Judged:
        """The configuration's case, then one per published subject; every case carries the unit's step.
        A unit the server died of is a `server-crash` case, and so is each of its subjects (`judged_as`);
        one whose observation failed otherwise leaves its subjects unknown."""
        feature = feature_of(unit.kind)
        try:
            accounts = None if self.operator else (IMPORTER, EXPORTER)
            transform: Transform | None = compile_in(
                feature, unit.source, unit.local, profile, accounts=accounts
            )
            refusal = unit.refusal
        except MappingError as refused:
            transform, refusal = None, refused.kind
        functions = transform.functions if transform else functions_named(unit.local)
        literal = LITERAL_SOURCE if is_literal(unit.source) else ""
        expected, verdict, difference = acceptance(refusal, observed.rejection or None)
        if observed.crashed:
            difference, verdict = CRASH, ""
        elif observed.failure and not observed.configured:
            difference, verdict = "unknown", ""
        if difference not in ("", "unknown"):
            difference += literal + (NARROW_EXPORT if unit.export else "")
        steps = (unit.to_json(),)
        cases = UnitCases(context, feature, functions, unit.source, unit.destination, unit.seed, steps)
        configured = cases.case(
            expected=expected,
            observed=verdict,
            difference=difference,
            detail=observed.failure if difference in (CRASH, "unknown") else observed.rejection,
        )
        if transform is None or not (verdict == "accept" or observed.failure):
            return [configured]  # a refused one publishes nothing; a cut-off one, its subjects unknown
        judged = [configured]
        for index, subject in enumerate(unit.subjects):
            arrived = list(observed.arrived[index]) if index < len(observed.arrived) else []
            replied = unit.kind == "stream" or (index < len(observed.replied) and observed.replied[index])
            if observed.failure:
                expected, difference = "", "unknown"
            else:
                expected, difference = delivery(unit.kind, transform, subject, arrived, replied)
                # `wrong_subject` sets a literal source apart itself
                if difference and not difference.endswith(LITERAL_SOURCE):
                    difference += literal
            heard = list(observed.heard[index]) if index < len(observed.heard) else []
            shown = "|".join(arrived)
            listened = ""
            if unit.listen and not difference and not observed.failure:
                want, listened = listening(unit.listen, arrived, heard)
                listened += REPEATED_WILDCARD if listened and repeats_a_wildcard(transform) else ""
                expected += f"; {unit.listen}: {'|'.join(want) or 'nothing'}"
                shown += f"; {unit.listen}: {'|'.join(heard) or 'nothing'}"
            case = cases.case(
                subject=subject,
                expected=expected,
                observed=shown,
                difference=difference or listened,
                detail=observed.failure,
            )
            # the server's panic is what it did with the unit: its subjects take that judgement
            judged.append(judged_as(case, configured) if observed.crashed else case)
        return judged

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: ImportRun, reason: str) -> Judged:
        return self.judge(context, profile, unit, ImportObservation(failure=reason))

    def unit_of(self, case: CaseFile) -> ImportRun:
        """The case's import (its kind from its step, else its feature), publishing its subject."""
        step = json.loads(case.steps[0]) if case.steps else {}
        kind = step.get("kind", case.feature.removesuffix("-import"))
        subjects = (case.subject,) if case.subject else ()
        listen = step.get("listen", "")
        return ImportRun(kind, case.source, case.destination, subjects, **import_chain(step), listen=listen)


def delivery(
    kind: str, transform: Transform, subject: str, arrived: list[str], replied: bool
) -> tuple[str, str]:
    """Where the publication on `subject` had to arrive, and what differed ('' when nothing): a stream
    import's message on the transform's subject (nowhere when the transform writes no subject,
    `Transform.delivers`), a service import's request on the one exporter subject
    the transform maps to `subject`, with its reply back. A wrong subject is named as everywhere
    (`suites.engine.verdicts.wrong_subject`)."""
    if kind == "stream":
        expected = transform.delivers(subject)
        if expected == NOT_DELIVERED:  # the transform writes no subject: no subscriber receives it
            return expected, NOT_A_SUBJECT if arrived else ""
        right = len(arrived) == 1 and transform.accepts(subject, arrived[0])
    else:
        expected = requested(transform, subject)
        right = arrived == [expected]
    if not arrived:
        return expected, NOT_ARRIVED
    if len(arrived) > 1:
        return expected, DUPLICATED
    if not right:
        return expected, wrong_subject(transform.source, transform.destination, subject)
    return expected, "" if replied else "no-reply"


def listening(listen: str, arrived: list[str], heard: list[str]) -> tuple[list[str], str]:
    """What the importer's `listen` subscription had to receive of a message that arrived right under
    `>`, and what differed ('' nothing): the message once, on the same subject, iff that subject matches
    `listen`."""
    want = arrived[:1] if arrived and matches(listen, arrived[0]) else []
    if heard == want:
        return want, ""
    return want, LISTENER_MISSED if not heard else LISTENER_EXTRA if not want else LISTENER_WRONG


def _request(url: str, exporter_url: str, subjects: tuple[str, ...]) -> ImportObservation:
    """Publish a request on each subject from the importer; the exporter notes where each arrives and
    replies to it; then note which replies came back."""
    arrived: dict[int, list[str]] = defaultdict(list)
    with (
        WireConnection(url, name="nats-conformance-requester", timeout=TIMEOUT) as importer,
        WireConnection(exporter_url, name="nats-conformance-responder", timeout=TIMEOUT) as exporter,
    ):
        exporter.subscribe(">", 1)
        exporter.flush()
        importer.subscribe(f"{INBOX}.>", 1)
        for index, subject in enumerate(subjects):
            importer.publish(subject, str(index).encode(), reply=f"{INBOX}.{index}")
        importer.flush()
        exporter.flush()
        for message in exporter.pending:
            if message.payload.isdigit() and message.reply:
                arrived[int(message.payload)].append(message.subject)
                exporter.publish(message.reply, message.payload)
        exporter.pending.clear()
        exporter.flush()
        importer.flush()
        replied = {
            int(m.payload) for m in importer.pending if m.payload.isdigit() and m.subject.startswith(INBOX)
        }
    return ImportObservation(
        configured=True,
        arrived=tuple(tuple(arrived[index]) for index in range(len(subjects))),
        replied=tuple(index in replied for index in range(len(subjects))),
    )
