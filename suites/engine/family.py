"""What a feature family declares, and the target it runs on.

A family is four things: how it draws *units* (one case or one batch of cases that share a server
configuration or a round trip), how a unit is executed on a target (returning what was observed, never
judging), how that observation is judged against the reference (cases with verdicts, never touching the
target), and which unit a recorded case file spells (replay, bisection, shrinking). The engine
(`suites.engine.run`) and the pytest properties only ever call these. A target is a started server
(`fixtures.session.Session`, the families of `suites.families.FAMILIES`) or a transform library asked
questions (`suites.families.library.AdapterSession`, the library family).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from hypothesis import strategies as st

from nats_conformance.fixtures.clients.jetstream import jetstream_config
from nats_conformance.fixtures.config import Account, ServerConfig
from nats_conformance.fixtures.errors import (
    ServerError,
    ServerStartError,
    ServerStoppedError,
)
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.local import LocalServer
from nats_conformance.fixtures.servers.operator import OperatorBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.fixtures.unobserved import unobserved, unobserved_reason
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import CRASH_UNCONFIRMED, Case, CaseBlock
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.suites.engine.verdicts import RunContext, make_case
from nats_conformance.suites.strategies import runs_of_units

Unit = TypeVar("Unit")
Observed = TypeVar("Observed")
Judged = Sequence[Case | CaseBlock]
"""A unit's cases: single cases (every divergence is one) and blocks of cases sharing one verdict."""


@dataclass(frozen=True, slots=True)
class Draws:
    """What a family's drawing is asked for: units handed to `on_units` a few at a time (it runs them
    and returns their score, which Hypothesis's target phase climbs) until `drawn()` reaches `budget` or
    `on_units` raises `Enough`; the same `seed` draws the same units in any process. `after_run` follows
    each Hypothesis run."""

    budget: int
    seed: int | str
    on_units: Callable[[list[Any]], float]
    drawn: Callable[[], int]
    after_run: Callable[[], object] = lambda: None


class Target(Protocol):
    """Where a family's units run: what the engine asks of it besides the family's own calls."""

    @property
    def profile(self) -> ReleaseProfile:
        """The release whose rules the target is judged by."""
        ...

    @property
    def restarts(self) -> list[str]:
        """Why the target was restarted, once per restart (journaled in the run)."""
        ...

    def recover(self, error: ServerError) -> str:
        """Bring the target back after `error` cut a unit short; returns the reason its cases get."""
        ...

    def is_running(self) -> bool: ...


On = TypeVar("On", bound=Target)


@dataclass(frozen=True, slots=True)
class Schedule(Generic[On]):
    """How a family's units share a target of type `On`, read by the engine (`suites.engine.run`).

    `slot` is the session the `index`-th of units running side by side uses (its own account's user where
    units would otherwise share subjects or streams), marked `alongside` when others run beside it.
    `side_by_side` units run at once (1: one after the other): a family whose units share nothing on the
    server but the server itself (no subject, stream or account of one unit is another's), and spend
    their time waiting or in setup they can share, sets more (`check_many`); `room` says how many fit on
    a session where that is fewer (None: `side_by_side`). `together` executes several units in one go
    where they share server actions (one reload for every unit's accounts), returning what each observed
    or the server error that cut it short; None: each unit in a thread of its own on its slot. `rolling`:
    units side by side share nothing but their slots, so that a slot takes the next unit as soon as its
    own has ended (`suites.engine.rolling`); otherwise a batch runs at a time. `steered`: the run's
    unexpected divergences steer its draws once one shows; a family whose drawing shares its budget out
    in a fixed way is drawn the same way to the end."""

    slot: Callable[[On, int, bool], On]
    side_by_side: int = 1
    rolling: bool = True
    steered: bool = True
    room: Callable[[On], int] | None = None
    together: Callable[[On, Sequence[Any]], Sequence[Any]] | None = None

    def width(self, session: On) -> int:
        """How many units run at once on `session`: `room`'s answer, else `side_by_side`."""
        return self.side_by_side if self.room is None else self.room(session)


@dataclass(frozen=True, slots=True)
class Description:
    """A family's row in the campaigns guide's table of families (generated from the registry when the
    documentation is built, `docs/hooks.py`): what one unit is, in a sentence, and its default number of
    cases per target in a campaign (`--budget NAME=N` overrides it)."""

    summary: str
    budget: int


class Family(Protocol, Generic[Unit, Observed, On]):
    """One feature family on targets of type `On`. `name` is its registry key (and `--budget NAME=N`);
    `features` are the `feature` values of its records; `schedule` how its units share a target."""

    @property
    def name(self) -> str: ...

    @property
    def features(self) -> tuple[str, ...]: ...

    @property
    def description(self) -> Description: ...

    @property
    def schedule(self) -> Schedule[On]: ...

    def draw(self, profile: ReleaseProfile, draws: Draws) -> None:
        """Draw units for a target of this release, as `draws` asks."""
        ...

    def execute(self, session: On, unit: Unit) -> Observed:
        """Runs the unit on the target and returns what was observed."""
        ...

    def judge(self, context: RunContext, profile: ReleaseProfile, unit: Unit, observed: Observed) -> Judged:
        """The verdict of every case of the unit, against the reference of `profile`'s release."""
        ...

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: Unit, reason: str) -> Judged:
        """The cases of a unit its server cut short (see `check`), every one `unknown` with `reason`."""
        ...

    def unit_of(self, case: CaseFile) -> Unit:
        """The unit a case file spells, to run it again."""
        ...

    def shrinking(self, profile: ReleaseProfile, case: Case) -> st.SearchStrategy[Unit] | None:
        """Where a run looks for a smaller unit showing `case`'s class of divergence
        (`suites.engine.shrink`); None: the family's runs record what they drew, unshrunk (its pytest
        properties shrink)."""
        ...


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a server family runs, read by the campaign and replay. `layout` is how it lays out the
    target's servers (`records.replay.LAYOUTS`; '' for the target's one server): the suffix of its
    records' backend, which replay's ``--layout`` brings back. `server_for` makes the server it runs on
    from a target's unstarted backend; `unsupported` says why it cannot run on a target ('' when it can),
    in a few words; `base_config` is the configuration its server starts with."""

    layout: str
    server_for: Callable[[Backend], Backend]
    unsupported: Callable[[str, str], str]
    base_config: Callable[[Backend], ServerConfig]


class ServerFamily(Family[Unit, Observed, Session], Protocol):
    """A family run on a server of a target (`suites.families.FAMILIES`)."""

    @property
    def placement(self) -> Placement: ...

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[Unit]:
        """Draws one unit for a target of this release."""
        ...


def beside(session: Session, index: int, alongside: bool) -> Session:
    """The session itself for every slot (units that share nothing on it but the server), marked
    `alongside` when other units run beside the slot's (`Session.alongside`)."""
    return replace(session, alongside=alongside)


class TargetServer:
    """What most families need of a server: the target's own, as started with no extra configuration,
    on any release, one unit at a time. A family overrides what differs (operator mode, JetStream, a
    release gate, units side by side); its `placement` is its `layout`, `server_for`, `unsupported` and
    `base_config`."""

    __slots__ = ()
    features: tuple[str, ...]
    operator = False

    @property
    def schedule(self) -> Schedule[Session]:
        return Schedule(beside)

    @property
    def placement(self) -> Placement:
        return Placement(self.layout, self.server_for, self.unsupported, self.base_config)

    @property
    def layout(self) -> str:
        return "operator" if self.operator else ""

    def server_for(self, server: Backend) -> Backend:
        return server

    def unsupported(self, version: str, backend: str) -> str:
        return ""

    def base_config(self, server: Backend) -> ServerConfig:
        return ServerConfig()

    def draw(self, profile: ReleaseProfile, draws: Draws) -> None:
        """Runs of Hypothesis drawing one unit of `units` per example (`runs_of_units`)."""
        family: Any = self
        rng = random.Random(draws.seed)
        runs_of_units(
            family.units(profile), draws.budget, rng, draws.on_units, draws.drawn, after_run=draws.after_run
        )

    def shrinking(self, profile: ReleaseProfile, case: Case) -> None:
        return None

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: Any, reason: str) -> Judged:
        """One `unknown` case standing for the whole unit, for a family whose cases depend on the server's
        answers (republish, streaming); a family whose cases are known before it runs says each of them
        instead, so that every case the unit would have recorded ends in exactly one verdict."""
        case = make_case(
            context,
            feature=self.features[0],
            functions=(),
            source="",
            destination="",
            expected="",
            observed="",
            difference="unknown",
            detail=reason,
        )
        return [case]


def execute_many(
    family: Family[Unit, Observed, On], session: On, units: Sequence[Unit]
) -> list[Observed | ServerError]:
    """Runs up to `side_by_side` units at once and returns what was observed of each, or the server error
    that cut it short (`check_many` restarts the server and runs each such unit again alone): the
    family's `Schedule.together`, or else each unit's `execute` in a thread of its own, the `index`-th on
    its slot, with the others `alongside` when there are several."""
    together = family.schedule.together
    if together is not None:
        return [*together(session, units)]
    alongside = len(units) > 1
    with ThreadPoolExecutor(len(units), thread_name_prefix=f"{family.name}-unit") as pool:
        return list(
            pool.map(lambda i, u: in_slot(family, session, i, u, alongside), range(len(units)), units)
        )


def in_slot(
    family: Family[Unit, Observed, On], session: On, index: int, unit: Unit, alongside: bool
) -> Observed | ServerError:
    """`family.execute` of `unit` on the session of its `index`-th slot (`Schedule.slot`), with other
    units `alongside` or not: what it observed, or the server error that cut it short."""
    try:
        return family.execute(family.schedule.slot(session, index, alongside), unit)
    except ServerError as error:
        return error


class JetStreamSlots(TargetServer):
    """A JetStream family whose units run side by side (`Schedule.side_by_side`), each in a JetStream
    account of its own: the same stream names and subjects in another account are other streams, and a
    stream's messages stay in its account. A unit's time is mostly waiting (quiet waits for late
    republished messages, a source or mirror copying), which overlaps. The configuration of a server
    this suite starts holds one account per slot, the first the default user's, so that a unit run alone
    (`check`, replay) uses it; an external server keeps its own configuration."""

    __slots__ = ()

    def base_config(self, server: Backend) -> ServerConfig:
        config = jetstream_config(server)
        if server.name == "external":
            return config
        slots = self.schedule.side_by_side
        accounts = tuple(Account(f"js{index}", jetstream=True) for index in range(slots))
        return replace(config, accounts=accounts)


def account_slot(session: Session, index: int, alongside: bool) -> Session:
    """The `index`-th account's user (`JetStreamSlots.base_config`), or the session itself without such
    accounts, marked `alongside` or not."""
    accounts = session.base.accounts
    slot = session.as_user(accounts[index].credentials) if index < len(accounts) else session
    return replace(slot, alongside=alongside)


def in_operator_mode(server: Backend, operator: bool, *, leaf: bool = False) -> Backend:
    """With `operator`, the server of a target this suite starts, its mappings pushed in an account JWT
    ("Subject Mapping and Partitioning", docs.nats.io: "[...] define the mappings [...] in the account
    JWT"), with `leaf` a leaf node beside it on the process backend (`OperatorBackend`); else the
    target's server."""
    return OperatorBackend(server, leaf=leaf) if operator and isinstance(server, LocalServer) else server


class ServerLostError(ServerStartError):
    """A unit's server stopped and could not be started again; `judged` is the unit's cases, all
    `unknown`, for the caller to record before the run ends."""

    def __init__(self, message: str, judged: Judged) -> None:
        super().__init__(message)
        self.judged = judged


def check(family: Family[Unit, Observed, On], session: On, context: RunContext, unit: Unit) -> Judged:
    """Execute one unit and judge it: what every caller of a family does. A unit its server cut short
    (a server, wire or JetStream error: the server died of something other than the unit, or a wait on it
    passed its deadline) restarts the server, and its cases are `unknown` with the reason; those of a
    unit during which a server at a URL stopped answering say `server-crash-unconfirmed`. A server that
    cannot be restarted raises `ServerLostError` with the unit's cases."""
    try:
        observed = family.execute(session, unit)
    except ServerError as error:
        try:
            reason = session.recover(error)
        except ServerStartError as failed:
            judged = family.unknown(context, session.profile, unit, _lost(session, error))
            raise ServerLostError(str(failed), _unconfirmed(judged, error)) from failed
        return _unconfirmed(family.unknown(context, session.profile, unit, reason), error)
    return family.judge(context, session.profile, unit, observed)


def check_many(
    family: Family[Unit, Observed, On], session: On, context: RunContext, units: Sequence[Unit]
) -> list[Judged]:
    """`check` of several units executed at once on the session's server (`execute_many`, never more
    than the family's `Schedule.side_by_side`), judged one after the other in their order. A unit whose
    execution the server cut short is never judged from a shared run: once every execution has ended, a
    server that stopped is restarted (`Session.recover`, journaled) and each such unit runs again alone
    through `check`, so that a crash is isolated to the unit that causes it and every unit's cases end in
    exactly one verdict."""
    if len(units) < 2:
        return [check(family, session, context, unit) for unit in units]
    room = family.schedule.side_by_side
    if len(units) > room:  # a unit past the family's slots would share another's
        raise ValueError(f"{len(units)} units at once, where {family.name} has room for {room}")
    outcomes = execute_many(family, session, units)
    return judge_outcomes(family, session, context, units, outcomes)


def judge_outcomes(
    family: Family[Unit, Observed, On],
    session: On,
    context: RunContext,
    units: Sequence[Unit],
    outcomes: Sequence[Observed | ServerError],
) -> list[Judged]:
    """The judged cases of units that ran side by side, in their order, from what each execution observed
    or the server error that cut it short (`check_many`; `suites.engine.rolling`)."""
    cut = [outcome for outcome in outcomes if isinstance(outcome, ServerError)]
    judged: list[Judged] = []

    def lost(failed: ServerStartError, error: ServerError, cases: Judged) -> ServerLostError:
        """The error that ends the run, holding every case of the batch: those judged so far, `cases`,
        and the rest judged from their shared run when it ended well, else `unknown`."""
        rest: list[Case | CaseBlock] = [item for items in judged for item in items]
        rest += _unconfirmed(cases, error)
        for unit, outcome in zip(units[len(judged) + 1 :], outcomes[len(judged) + 1 :], strict=True):
            if isinstance(outcome, ServerError):
                reason = _lost(session, outcome)
                rest += _unconfirmed(family.unknown(context, session.profile, unit, reason), outcome)
            else:
                rest += family.judge(context, session.profile, unit, outcome)
        return ServerLostError(str(failed), rest)

    if cut and not session.is_running():
        try:
            session.recover(cut[0])
        except ServerStartError as failed:
            first = family.unknown(context, session.profile, units[0], _lost(session, cut[0]))
            if not isinstance(outcomes[0], ServerError):
                first = family.judge(context, session.profile, units[0], outcomes[0])
            raise lost(failed, cut[0], first) from failed
    for unit, outcome in zip(units, outcomes, strict=True):
        if isinstance(outcome, ServerError):
            try:
                judged.append(check(family, session, context, unit))
            except ServerLostError as again:
                raise lost(again, outcome, again.judged) from again
        else:
            judged.append(family.judge(context, session.profile, unit, outcome))
    return judged


def _lost(session: Target, error: ServerError) -> str:
    """What the cases of a unit `error` cut short say when the server could not be started again: the
    restart's journal line, with the error's reason (`fixtures.unobserved.unobserved`)."""
    return unobserved(session.restarts[-1], unobserved_reason(error))


def _unconfirmed(judged: Judged, error: ServerError) -> Judged:
    """`judged` with the difference of its `unknown` cases `CRASH_UNCONFIRMED` when `error` says the server
    stopped answering during the unit (`ServerStoppedError`)."""
    if not isinstance(error, ServerStoppedError):
        return judged
    marked: list[Case | CaseBlock] = []
    for item in judged:
        case = item.shared if isinstance(item, CaseBlock) else item
        if case.verdict == "unknown" and case.difference == "unknown":
            case = replace(case, difference=CRASH_UNCONFIRMED)
        marked.append(replace(item, shared=case) if isinstance(item, CaseBlock) else case)
    return marked


def cases_of(judged: Judged) -> list[Case]:
    """Every case of a judged unit, blocks expanded (for small units: properties, replays, examples)."""
    return [case for item in judged for case in (item.cases() if isinstance(item, CaseBlock) else [item])]


def divergences(judged: Judged) -> list[Case]:
    """The cases of a judged unit whose verdict is `diverge`."""
    return [case for case in cases_of(judged) if case.verdict == "diverge"]


def verdicts(judged: Judged) -> Counter[str]:
    """How many cases of a judged unit have each verdict (blocks counted, not expanded)."""
    counts = Counter[str]()
    for item in judged:
        if isinstance(item, CaseBlock):
            counts[item.shared.verdict] += len(item)
        else:
            counts[item.verdict] += 1
    return counts


def record(writer: RecordWriter, judged: Judged) -> None:
    """Write every case of a judged unit, blocks as blocks."""
    for item in judged:
        if isinstance(item, CaseBlock):
            writer.add_block(item)
        else:
            writer.add(item)
