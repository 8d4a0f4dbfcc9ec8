"""The `leaf-deny` family: a leaf node remote's `deny_exports` and `deny_imports`, with account functions
where the release has them (`reference.leafnode`).

One unit is the remote's two deny lists and the subjects published past them: the leaf node starts with
the lists (`fixtures.servers.leafnode`), each subject is published on the leaf node and observed on the
hub (exported), then published on the hub and observed on the leaf node (imported). The configuration's
case says whether the leaf node took the lists; each subject has a case per direction, `delivered` or
`denied`.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from nats_conformance.fixtures.errors import ConfigRejectedError, ServerStartError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.servers.leafnode import (
    LEAF_ACCOUNT,
    REMOTE_ACCOUNT,
    DenyLists,
    LeafNodeBackend,
)
from nats_conformance.fixtures.servers.process import ProcessBackend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.replay import LEAF_SUFFIX
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.functions import account_hash
from nats_conformance.reference.leafnode import DenyList, deny_list
from nats_conformance.reference.matching import matching_subject
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.suites.engine.family import Description, Judged, TargetServer
from nats_conformance.suites.engine.verdicts import CRASH, RunContext, UnitCases, acceptance, judged_as
from nats_conformance.suites.expected import functions_named
from nats_conformance.suites.harness import NOT_FORWARDED, Observation, publish_and_observe
from nats_conformance.suites.strategies import DENY_PREFIX, below, deny_entries, pick, sizes

DIRECTIONS = ("export", "import")
"""The two ways a subject is published: on the leaf node to the hub, on the hub to the leaf node."""
SUBJECT_TOKENS = ("a", "b", "c", account_hash(LEAF_ACCOUNT), account_hash(REMOTE_ACCOUNT))
"""Tokens of the subjects published: the entries' letters, another, and both accounts' hashes."""
TIMEOUT = 5.0
"""Seconds an observation waits for the leaf node to pass messages on (it connects within one)."""
STALLED = "not-forwarding"
"""The difference of a leaf node that took its lists and runs, yet passes nothing on either way."""
LOGGED = "logged-deny-error"
"""The difference of a leaf node that took its lists and logged an error about them (documents silent:
the servers of 2.14.10 log none for lists they take)."""
DENY_ERROR = re.compile(r"\[ERR\].*\bdeny\b")
"""A line of the leaf node's log that is an error about its deny lists."""


@dataclass(frozen=True, slots=True)
class DenyRun:
    """The remote's deny lists (None: the key left out) and the subjects published past them."""

    exports: tuple[str, ...] | None
    imports: tuple[str, ...] | None
    subjects: tuple[str, ...]
    seed: int = 0

    @property
    def entries(self) -> tuple[str, ...]:
        """Every entry of both lists, exports first."""
        return (*(self.exports or ()), *(self.imports or ()))

    def to_json(self) -> str:
        return json.dumps({"exports": self.exports, "imports": self.imports})


@dataclass(frozen=True, slots=True)
class DenyObservation:
    """Whether the leaf node took the lists (`refusal`: its words when it did not), and of each subject
    whether it arrived, exported then imported; `failure` says what cut the observation short, and
    `crashed` that a server died of the unit (`failure` is then its panic line)."""

    refusal: str | None = None
    exported: tuple[bool, ...] = ()
    imported: tuple[bool, ...] = ()
    failure: str = ""
    crashed: bool = False
    stalled: bool = False
    """The leaf node took the lists and runs, yet passed nothing on (`failure` says how long it waited)."""
    duration_us: int = 0
    logged: str = ""
    """The first error the leaf node logged about its deny lists ('' for none)."""


def resolved(entries: tuple[str, ...] | None, profile: ReleaseProfile) -> DenyList:
    """`entries` as the reference resolves them for this layout's accounts (None: an empty list)."""
    return deny_list(entries or (), profile, LEAF_ACCOUNT, REMOTE_ACCOUNT)


@st.composite
def deny_runs(draw: st.DrawFn, profile: ReleaseProfile) -> DenyRun:
    """Two deny lists (`deny_entries`) and subjects: for each entry the reference takes, one it matches
    and a near miss (one token after `DENY_PREFIX` changed), then one to four of `SUBJECT_TOKENS`, and one
    unit in ten an entry's own text published as a subject."""
    listed = DenyRun(draw(deny_entries(profile)), draw(deny_entries(profile)), ())
    subjects: list[str] = []
    for entry in listed.entries:
        try:
            [pattern] = resolved((entry,), profile).patterns
        except MappingError:
            continue
        tokens = matching_subject(pattern, pick(draw, SUBJECT_TOKENS)).split(".")
        subjects.append(".".join(tokens))
        tokens[1 + draw(below(len(tokens) - 1))] = pick(draw, SUBJECT_TOKENS)
        subjects.append(".".join(tokens))
    for _ in range(draw(sizes(1, 4))):
        subjects.append(
            ".".join([DENY_PREFIX, *(pick(draw, SUBJECT_TOKENS) for _ in range(draw(sizes(1, 3))))])
        )
    if listed.entries and draw(below(10)) == 0:
        subjects.append(pick(draw, listed.entries))
    seed = draw(st.integers(0, 2**31))
    return replace(listed, subjects=tuple(dict.fromkeys(subjects)), seed=seed)


def arrived(observation: Observation, count: int) -> tuple[bool, ...]:
    """Of each of the `count` subjects, whether it reached the tap."""
    return tuple((observation.first[:count] >= 0).tolist())


@dataclass(frozen=True, slots=True)
class LeafDenyFamily(TargetServer):
    name: str = "leaf-deny"
    description: Description = Description(
        "a leaf node remote's `deny_exports` and `deny_imports` (account functions where the release has "
        "them), each subject published both ways between the hub and the leaf node (process backend)",
        1_500,
    )
    features: tuple[str, ...] = ("leaf-deny",)

    @property
    def layout(self) -> str:
        return LEAF_SUFFIX.removeprefix("-")

    def server_for(self, server: Backend) -> Backend:
        return LeafNodeBackend(server) if isinstance(server, ProcessBackend) else server

    def unsupported(self, version: str, backend: str) -> str:
        if not backend.endswith(LEAF_SUFFIX):
            return "the leaf node is a second server this suite starts on the process backend"
        return ""

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[DenyRun]:
        return deny_runs(profile)

    def execute(self, session: Session, unit: DenyRun) -> DenyObservation:
        """Start the leaf node with the unit's lists; when it takes them, publish every subject both
        ways, then read the errors it logged about them. A server that dies meanwhile is restarted, its
        panic line kept."""
        servers = session.server
        if not isinstance(servers, LeafNodeBackend):
            raise ServerStartError(self.unsupported(servers.version, servers.name))
        began = time.perf_counter()
        try:
            servers.connect(DenyLists(unit.exports, unit.imports))
        except (ConfigRejectedError, ServerStartError) as error:
            panic = session.panic_line()
            if panic:
                session.restart()
                return DenyObservation(failure=panic, crashed=True)
            words = error.server_message if isinstance(error, ConfigRejectedError) else str(error)
            return DenyObservation(refusal=words.splitlines()[0] if words else "refused")
        seen = []
        for tap, publisher in ((servers.url, servers.leaf_url), (servers.leaf_url, servers.url)):
            seen.append(publish_and_observe(tap, unit.subjects, publisher_url=publisher, timeout=TIMEOUT))
            failure = seen[-1].failure
            if failure:
                panic = session.crash_of(failure)
                stalled = not panic and NOT_FORWARDED in failure
                return DenyObservation(failure=panic or failure, crashed=bool(panic), stalled=stalled)
        count = len(unit.subjects)
        duration = int((time.perf_counter() - began) * 1e6 / max(1, 2 * count))
        logged = next((line for line in servers.leaf.logs().splitlines() if DENY_ERROR.search(line)), "")
        exported, imported = (arrived(observation, count) for observation in seen)
        return DenyObservation(None, exported, imported, duration_us=duration, logged=logged)

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: DenyRun, observed: DenyObservation
    ) -> Judged:
        """The configuration's case (a leaf node that took the lists yet passes nothing on, or logs an
        error about them, differs), then one per subject and direction: denied when the direction's list
        matches it. A unit a server died of is a `server-crash` case, and so is each of its subjects
        (`judged_as`), as is each subject of a leaf node that passes nothing on; one whose observation
        failed otherwise leaves its subjects unknown; a refused one publishes nothing."""
        try:
            lists = (resolved(unit.exports, profile), resolved(unit.imports, profile))
            refusal = ""
            functions = tuple(dict.fromkeys(f for listed in lists for f in listed.functions))
        except MappingError as refused:
            lists, refusal = None, refused.kind
            functions = tuple(dict.fromkeys(f for entry in unit.entries for f in functions_named(entry)))
        expected, verdict, difference = acceptance(refusal, observed.refusal)
        detail = observed.refusal or ""
        if observed.crashed:
            difference, verdict, detail = CRASH, "", observed.failure
        elif observed.failure and not difference:
            difference = STALLED if observed.stalled else "unknown"
            verdict, detail = (f"{verdict}:{STALLED}" if observed.stalled else ""), observed.failure
        elif observed.logged and not difference:
            difference, verdict, detail = LOGGED, f"{verdict}:{LOGGED}", observed.logged
        source = json.dumps(unit.exports) if unit.exports is not None else ""
        destination = json.dumps(unit.imports) if unit.imports is not None else ""
        steps = (unit.to_json(),)
        cases = UnitCases(context, self.features[0], functions, source, destination, unit.seed, steps)
        configured = cases.case(expected=expected, observed=verdict, difference=difference, detail=detail)
        if lists is None or observed.refusal is not None:
            return [configured]
        judged = [configured]
        for direction, listed, seen in zip(
            DIRECTIONS, lists, (observed.exported, observed.imported), strict=True
        ):
            for index, subject in enumerate(unit.subjects):
                want = f"{direction}:{'denied' if listed.denies(subject) else 'delivered'}"
                if observed.failure:
                    case = cases.case(subject=subject, expected=want, observed="", difference="unknown")
                    judged.append(
                        judged_as(case, configured) if observed.crashed or observed.stalled else case
                    )
                    continue
                got = f"{direction}:{'delivered' if seen[index] else 'denied'}"
                judged.append(
                    cases.case(
                        subject=subject,
                        expected=want,
                        observed=got,
                        difference=f"{got.replace(':', '-')}-reference-{want.split(':')[1]}"
                        if got != want
                        else "",
                        duration_us=observed.duration_us,
                    )
                )
        return judged

    def unit_of(self, case: CaseFile) -> DenyRun:
        """The case's deny lists (from its step), publishing its subject."""
        step = json.loads(case.steps[0]) if case.steps else {}
        listed = {
            key: tuple(step[key]) if step.get(key) is not None else None for key in ("exports", "imports")
        }
        subjects = (case.subject,) if case.subject else ()
        return DenyRun(listed["exports"], listed["imports"], subjects)
