"""Validation family: a server accepts a mapping iff the reference compiles it for the server's release.

"Subject Mapping and Partitioning" (docs.nats.io, nats-concepts), every section that names a function or
a wildcard rule. One unit is one (source, destination) pair, valid or not.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from hypothesis import strategies as st

from nats_conformance.fixtures.config import GLOBAL_ACCOUNT, Account, Mapping, ServerConfig
from nats_conformance.fixtures.errors import ConfigRejectedError, ServerError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import Case
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.transform import compile_transform
from nats_conformance.suites.engine.family import Description, Judged, Schedule, TargetServer, beside
from nats_conformance.suites.engine.verdicts import (
    CRASH,
    RunContext,
    is_literal,
    make_case,
    refusal_suffix,
    validation_oracle,
)
from nats_conformance.suites.expected import functions_named, instance_of
from nats_conformance.suites.harness import publish_and_observe
from nats_conformance.suites.strategies import (
    ODD_SOURCES,
    below,
    destination_templates,
    mostly,
    odd_destinations,
    sources,
    swarms,
)

Pair = tuple[str, str]

EDGE_CALLS = (
    "{{wildcard(x)}}",
    "{{split(1,-,x)}}",
    "{{split(1,a b)}}",
    "{{split(x,-)}}",
    "{{left(1,x)}}",
    "{{}}",
    "{x}}}",
    "x..x",
)
"""Malformed calls that `odd_destinations` draws too rarely for the default budget to meet (each reaches
a refusal of its own in nats-server's parser): a non-integer wildcard index, `split` with three arguments,
a split separator with a space inside (not after the comma, which the argument separator takes), a
non-integer `split` index and a non-integer `left` width; and two literal tokens one brace away from a
function token, which the server copies as written (`reference.templates.looks_like_function`): `{{}}`, of
four characters, and `{x}}}`, one brace at its start (mutants 801 and 809 of 2.14.10 survived without
them); and a destination with an empty token, one of `odd_destinations`' ten shapes, which seed 0's
600 units drew only for sources that are no subject (mutant 1166 of 2.14.10, whose check of a
destination's tokens panics on an empty one, survived without it)."""


def edge_destination(source: str) -> st.SearchStrategy[str]:
    """One of `EDGE_CALLS` as the destination of `source` (``.>`` after it when the source ends in ``>``,
    so that the call is parsed rather than refused for a missing ``>``): the one the source's CRC-32
    picks, so that distinct sources spread over all of them (a drawn one clustered: Hypothesis's
    mutations copy a unit's choice into its neighbours, and one seed drew no `{{split(1,-,x)}}` in 600
    units)."""
    tail = ".>" if source.endswith(">") else ""
    return st.just(EDGE_CALLS[zlib.crc32(source.encode("utf-8", "surrogateescape")) % len(EDGE_CALLS)] + tail)


BATCH: Final = 32
"""Units run at once on a server started with accounts: a batch's units share its reload."""

VALIDATION_SOURCES: Final = mostly(sources(namespace="v"), st.sampled_from(ODD_SOURCES), one_in=30)
"""One source in thirty is no subject or an odd one (`ODD_SOURCES`); built once (a strategy built in a
composite is validated again on every draw)."""


@st.composite
def _pairs(draw: st.DrawFn, profile: ReleaseProfile) -> Pair:
    """A source and a destination for it, of a swarm of one to three functions (so that each function is
    drawn in depth, its edges included); one destination in ten is empty (required by the document), one
    in eight at the edges of the rules (`odd_destinations`: `>` alone, `*`, malformed calls), and one in
    ten one of `EDGE_CALLS`. Each choice is drawn as `mostly` draws it, before the one strategy it picks
    is built: the same choices as nested `mostly` strategies, without building the others."""
    source = draw(VALIDATION_SOURCES)
    swarm = draw(swarms())
    if draw(below(10)) == 9:
        return source, ""
    if draw(below(10)) == 9:
        return source, draw(edge_destination(source))
    if draw(below(8)) == 7:
        return source, draw(odd_destinations(source, profile))
    return source, draw(destination_templates(source, profile, swarm, account_functions=True))


@dataclass(frozen=True, slots=True)
class ValidationFamily(TargetServer):
    name: str = "validation"
    description: Description = Description(
        "one mapping: accepted or refused as the release's rules say (and one message through it, to "
        "see a crash)",
        600,
    )
    features: tuple[str, ...] = ("validation",)

    @property
    def schedule(self) -> Schedule[Session]:
        """`BATCH` units a batch, sharing its reload (`execute_validation`), one at a time on a server
        started with no account (`one_without_accounts`)."""
        return Schedule(beside, BATCH, rolling=False, room=one_without_accounts, together=execute_validation)

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[Pair]:
        return _pairs(profile)

    def base_config(self, server: Backend) -> ServerConfig:
        """An account of the default user's, beside which each unit's account runs (`execute_many`); none
        on a server at a URL, which was started with its own configuration (no reload can give it a
        default user), so that its units run one after the other in its default account."""
        return ServerConfig() if server.name == "external" else ServerConfig(accounts=(Account("base"),))

    def execute(self, session: Session, unit: Pair) -> Verdict:
        (outcome,) = execute_validation(session, [unit])
        if isinstance(outcome, ServerError):
            raise outcome
        return outcome

    def judge(self, context: RunContext, profile: ReleaseProfile, unit: Pair, observed: Verdict) -> Judged:
        return [judge_validation(context, profile, *unit, observed)]

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: Pair, reason: str) -> Judged:
        return self.judge(context, profile, unit, Verdict("", reason))

    def unit_of(self, case: CaseFile) -> Pair:
        return case.source, case.destination


@dataclass(frozen=True, slots=True)
class Verdict:
    """A server's answer to one configuration: `accept`, `reject` (with its message) or '' when the
    server could not be asked (with why); `crashed` when an accepted mapping killed the server on the
    first message published through it (`detail` is then the panic line); `panicked` when the refusal
    is a panic of the code checking the mapping (`parser_panicked`)."""

    observed: str
    detail: str = ""
    duration_us: int = 0
    crashed: bool = False
    panicked: bool = False


def one_without_accounts(session: Session) -> int:
    """One unit at a time on a server started with no account (`execute_validation`): a unit cut short
    among others would run again alone, and a server at a URL that one unit kills would be killed twice.
    """
    return BATCH if session.base.accounts else 1


def execute_validation(session: Session, pairs: Sequence[Pair]) -> list[Verdict | ServerError]:
    """Apply every mapping at once, each in an account of its own (`Session.configure_apart`: one reload
    for all but those the server refuses), note whether the server took it and, if it did, whether one
    message published through it leaves the server running (a server that dies of it is restarted with
    the others in force). A server error ends the run: the units not yet decided get it. On a server
    started with no account (the pytest plugin's `nats_server`, a server at a URL), which no reload can
    give one, each mapping goes in the default account, one after the other."""
    if not session.base.accounts:
        outcomes: list[Verdict | ServerError] = []
        for pair in pairs:
            outcomes += _observed(session, [pair], apart=False)
            if isinstance(outcomes[-1], ServerError):  # the server is gone: the rest are cut short too
                return outcomes + [outcomes[-1]] * (len(pairs) - len(outcomes))
        return outcomes
    return _observed(session, pairs, apart=True)


def _observed(session: Session, pairs: Sequence[Pair], *, apart: bool) -> list[Verdict | ServerError]:
    """`execute_validation` of `pairs`: with `apart` each in an account of its own, else the one pair in
    the default account."""
    began = time.perf_counter()
    accounts = [Account(f"v{index}", mappings=(Mapping(*pair),)) for index, pair in enumerate(pairs)]
    urls = [session.as_user(account.credentials).url for account in accounts] if apart else [session.url]
    try:
        if apart:
            refusals = session.configure_apart([(account,) for account in accounts])
        else:
            refusals = [_refusal(session, Mapping(*pairs[0]))]
    except ServerError as error:
        return [error] * len(pairs)
    share = _since(began) // len(pairs)
    outcomes: list[Verdict | ServerError] = []
    for (source, _), url, refusal in zip(pairs, urls, refusals, strict=True):
        if refusal:
            outcomes.append(Verdict("reject", refusal, share, panicked=parser_panicked(refusal)))
            continue
        began = time.perf_counter()
        session.save_counters()  # the probe may crash the server (an empty destination from 2.10)
        observation = publish_and_observe(url, [instance_of(source)], timeout=5.0)
        try:
            panic = session.crash_of(observation.failure, keep=True)
        except ServerError as error:
            return outcomes + [error] * (len(pairs) - len(outcomes))
        spent = share + _since(began)
        if panic:
            detail = f"the server died on a message to {instance_of(source)}: {panic}"
            outcomes.append(Verdict("accept", detail, spent, crashed=True))
        else:
            outcomes.append(Verdict("accept", "", spent))
    return outcomes


CHECK_PANICKED: Final = "check-panicked"
"""The difference of a mapping the server refused with a panic of the code checking it."""
RUNTIME_ERROR: Final = "runtime error: "
"""How a Go runtime panic (an index out of range, a nil dereference) prints: the start of every
`runtime.Error`'s text."""


def parser_panicked(refusal: str) -> bool:
    """True when a refusal holds a Go runtime error: nats-server's configuration parser recovers a panic
    of the code it calls into an error on the entry being read (``convertPanicToErrorList``, opts.go), so
    a check of the mapping that crashed reads as a refusal. It is judged as the failure it is
    (`CHECK_PANICKED`), not as the refusal the reference may expect."""
    return RUNTIME_ERROR in refusal


def _refusal(session: Session, mapping: Mapping) -> str:
    """The server's words refusing `mapping` in the default account ('' when it took it)."""
    try:
        session.configure(mapping)
    except ConfigRejectedError as error:
        return error.server_message
    return ""


def _since(began: float) -> int:
    return int((time.perf_counter() - began) * 1e6)


def judge_validation(
    context: RunContext,
    profile: ReleaseProfile,
    source: str,
    destination: str,
    verdict: Verdict,
    *,
    seed: int = 0,
) -> Case:
    """The server must accept a mapping iff the reference compiles it for this release, survive a
    message through a mapping it accepted, and refuse one without a panic of its checks. A mapping of
    a source without wildcards the reference rejects and the server accepts is told apart
    (``...-server-accept-literal-source``). Whether a mapping is taken does not depend on its account's
    name (`reference.functions`, account functions)."""
    try:
        compile_transform(source, destination, profile, account=GLOBAL_ACCOUNT)
        expected = "accept"
    except MappingError as error:
        expected = f"reject:{error.kind}"
    if verdict.crashed:
        difference = CRASH
    elif verdict.panicked:
        difference = CHECK_PANICKED
    elif not verdict.observed:
        difference = "unknown"
    elif expected.split(":")[0] == verdict.observed:
        difference = ""
    else:
        difference = f"reference-{expected.replace(':', '-')}-server-{verdict.observed}"
        if verdict.observed == "accept" and is_literal(source):
            difference += "-literal-source"
        if verdict.observed == "reject":
            difference += refusal_suffix(verdict.detail)
    return make_case(
        context,
        feature="validation",
        functions=functions_named(destination),
        source=source,
        destination=destination,
        expected=expected,
        observed=verdict.observed,
        difference=difference,
        detail=verdict.detail,
        seed=seed,
        duration_us=verdict.duration_us,
        oracle=validation_oracle(context, source, destination, expected.split(":")[0], verdict.observed),
    )
