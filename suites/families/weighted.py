"""Weighted family: each message lands on one of the list's destinations, in the list's shares.

"Subject Mapping and Partitioning" (docs.nats.io, nats-concepts), "Weighted Mappings" (for A/B testing,
canary releases and artificial loss). One unit is one weighted list with enough messages to test its
shares. The server is in a cluster of one (`CLUSTER`), so that lists with cluster-scoped entries
(`clustered_lists`, one list in four) select by it, and one list of one entry in three is written as that
entry alone (``source: {destination: D, weight: W%}``). With `refused_only` every list is one the server
must refuse (`refused_lists`, one case each). With `operator` the lists are pushed in account JWTs, with
no weight of 0 (which a JWT cannot hold, `fixtures.operator.mappings_claim`) and no single-entry form (a
JWT holds lists).

https://docs.nats.io/nats-concepts/subject_mapping, "Weighted Mappings", with the exact rule of the
server's source (https://github.com/nats-io/nats-server/blob/main/server/accounts.go) that
``reference.weighted`` models: per message a draw 0..99 walks the destinations in ascending weight; a
remainder below 100 is lost ("For Artificial Loss").

Per message, one case: delivered once on one of the reference's possible subjects (or not at all when
the reference allows loss) agrees; delivered on the published subject itself where the reference has it
lost is ``remainder-delivered``; anything else is ``weighted:<functions>:impossible-destination``.
Per list, one summary case (`kind` ``summary``, no subject): the observed shares against
``expected_distribution()`` by chi-square at ``suites.distribution.ALPHA``,
``weighted:<functions>:distribution`` when rejected. Each list
publishes ``sample_size(shares)`` messages (a 5-point shift detected with power 0.99), at most
``MAX_MESSAGES``. A message case's ``outcome`` is ``delivered`` (``bucket``: the index of the chosen entry in
the list as configured, none when no entry's), ``lost``, or ``unchanged`` for a remainder delivered on its
published subject (which the shares count as the loss it should have been).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from hypothesis import strategies as st

from nats_conformance.fixtures.config import Mapping, ServerConfig
from nats_conformance.fixtures.config import WeightedDestination as ConfigEntry
from nats_conformance.fixtures.errors import ConfigRejectedError
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.schema import DELIVERED, LOST, UNCHANGED, Case, CaseBlock
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.transform import Transform
from nats_conformance.reference.weighted import WeightedDestination, WeightedMapping, compile_weighted
from nats_conformance.suites.distribution import chi_square, sample_size
from nats_conformance.suites.engine.family import Description, Judged, TargetServer, in_operator_mode
from nats_conformance.suites.engine.verdicts import (
    RunContext,
    UnitCases,
    acceptance,
    make_case,
    rejection_case,
)
from nats_conformance.suites.expected import functions_named
from nats_conformance.suites.families.mapping import random_tokens
from nats_conformance.suites.harness import SubscriptionObservation, observe_subscriptions
from nats_conformance.suites.strategies import bulk_subjects, mostly

MAX_MESSAGES = 20_000
"""Cap on messages per list (CI time); ``sample_size`` stays below it for every list of 1-4 shares."""

LOSS: Final = None
"""The category of loss: no entry."""
REMAINDER_DELIVERED = "remainder-delivered"


@dataclass(frozen=True, slots=True)
class Category:
    """One possible outcome of a weighted list: an entry (its ``bucket``), or loss (`LOSS`)."""

    bucket: int | None
    share: float
    template: str | None  # the destination template; None for loss
    transform: Transform | None


@dataclass(slots=True)
class WeightedResult:
    """The cases of one weighted run: the messages that agree, a block per outcome and bucket; the
    others one case each; and its summary case."""

    blocks: list[CaseBlock] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    summary: Case | None = None

    @property
    def all_cases(self) -> list[Case | CaseBlock]:
        return [*self.blocks, *self.cases, *([self.summary] if self.summary else [])]

    def selected(self, bucket: int | None) -> int:
        """How many messages the draw sent to `bucket`: those agreeing on it and, for loss, the remainder
        delivered unchanged instead of lost."""
        agreeing = sum(len(block) for block in self.blocks if block.shared.bucket == bucket)
        if bucket != LOSS:
            return agreeing
        return agreeing + sum(1 for case in self.cases if case.difference == REMAINDER_DELIVERED)


def categories_of(mapping: WeightedMapping) -> tuple[Category, ...]:
    """The outcomes of ``mapping`` with their shares (``expected_distribution``) and transforms."""
    listed = {entry.destination: index for index, entry in enumerate(mapping.entries)}
    transforms = {step.entry.destination: step.transform for step in mapping.steps}
    out = []
    for template, share in mapping.expected_distribution().items():
        if template is None:
            out.append(Category(LOSS, share, None, None))
        else:
            out.append(Category(listed[template], share, template, transforms[template]))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class WeightedRun:
    """One weighted list and the subjects to publish through it, on a server of `cluster` (None: in no
    cluster); `single` writes a list of one entry as that entry alone (`fixtures.config.Mapping`)."""

    source: str
    entries: tuple[WeightedDestination, ...]
    subjects: tuple[str, ...]
    seed: int = 0
    cluster: str | None = None
    single: bool = False

    @property
    def steps(self) -> tuple[str, ...]:
        """What the records keep of the run beyond its list: its form when `single`."""
        return (SINGLE_STEP,) if self.single else ()


SINGLE_STEP = '{"form": "single"}'
"""The step of a case whose list of one entry was written as that entry alone."""


@dataclass(frozen=True, slots=True)
class WeightedObservation:
    """The server's message if it refused the list, else every delivery of the published subjects."""

    rejection: str = ""
    deliveries: SubscriptionObservation | None = None
    duration_us: int = 0


def execute_weighted(session: Session, run: WeightedRun) -> WeightedObservation:
    """Configure ``source: [entries]`` and publish every subject under a ``>`` subscription (none when
    the server refused the list)."""
    config_entries = tuple(ConfigEntry(e.destination, e.weight, e.cluster) for e in run.entries)
    try:
        session.configure(Mapping(run.source, config_entries, single=run.single))
    except ConfigRejectedError as error:
        return WeightedObservation(rejection=error.server_message)
    began = time.perf_counter()
    deliveries = observe_subscriptions(session.url, [">"], run.subjects)
    duration_us = int((time.perf_counter() - began) * 1e6 / max(1, len(run.subjects)))
    return WeightedObservation(deliveries=deliveries, duration_us=duration_us)


def judge_weighted(
    context: RunContext, profile: ReleaseProfile, run: WeightedRun, observed: WeightedObservation
) -> WeightedResult:
    """Every message and the shares against the reference. A list the server refuses although the
    reference accepts it is a validation divergence (no messages were then published); a list the
    reference refuses is one case, which the server must refuse (`refusal_case`)."""
    source, entries, subjects, seed = run.source, run.entries, run.subjects, run.seed
    try:
        mapping = compile_weighted(source, entries, profile, run.cluster)
    except MappingError as error:
        return WeightedResult(summary=refusal_case(context, run, observed, error.kind))
    categories = categories_of(mapping)
    functions = tuple(dict.fromkeys(f for c in categories if c.transform for f in c.transform.functions))
    observation = observed.deliveries
    if observation is None:
        rejected = rejection_case(
            context,
            functions=functions,
            source=source,
            destination="",
            server_message=observed.rejection,
            seed=seed,
        )
        return WeightedResult(summary=replace(rejected, weights=tuple(entries), steps=run.steps))
    cases = UnitCases(context, "weighted", functions, source, "", seed, run.steps, tuple(entries))
    result = judge_messages(cases, categories, subjects, observation, observed.duration_us)
    result.summary = shares_case(cases, categories, result, subjects, observation)
    return result


def message_verdict(
    possible: dict[str, int | None], subject: str, arrived: list[str], *, sent: bool, loss_allowed: bool
) -> tuple[str, int | None, str]:
    """The difference, bucket and outcome of the message published on `subject` that reached the
    subscriber on `arrived` (`sent`: its publication was confirmed). Once on one of the `possible`
    subjects (each its entry's bucket) agrees, as does not at all when the list allows loss; on
    `subject` itself then is ``remainder-delivered``; anything else is ``impossible-destination``; not
    arrived and not confirmed sent is ``unknown``."""
    outcome = DELIVERED if arrived else LOST
    if not arrived and not sent:
        return "unknown", None, outcome
    if len(arrived) == 1 and arrived[0] in possible:
        return "", possible[arrived[0]], outcome
    if not arrived and loss_allowed:
        return "", None, outcome
    if arrived == [subject] and loss_allowed:
        return REMAINDER_DELIVERED, None, UNCHANGED
    return "impossible-destination", None, outcome


def judge_messages(
    cases: UnitCases,
    categories: Sequence[Category],
    subjects: Sequence[str],
    observation: SubscriptionObservation,
    duration_us: int,
) -> WeightedResult:
    """A case per message (`message_verdict`): those that agree as a block per bucket and outcome, the
    others one case each."""
    result = WeightedResult()
    loss_allowed = any(c.bucket == LOSS for c in categories)
    agreed: dict[tuple[int | None, str], tuple[list[str], list[str], list[str]]] = {}
    for index, subject in enumerate(subjects):
        possible = {c.transform.apply(subject): c.bucket for c in categories if c.transform is not None}
        expected = "|".join([*possible, *(["(dropped)"] if loss_allowed else [])])
        arrived = observation.subjects_for(1, index)
        difference, bucket, outcome = message_verdict(
            possible, subject, arrived, sent=observation.received(index), loss_allowed=loss_allowed
        )
        if not difference:
            texts = agreed.setdefault((bucket, outcome), ([], [], []))
            texts[0].append(subject)
            texts[1].append(expected)
            texts[2].append("|".join(arrived))
            continue
        result.cases.append(
            cases.case(
                subject=subject,
                expected=expected,
                observed="|".join(arrived),
                difference=difference,
                detail=observation.failure if difference == "unknown" else "",
                duration_us=duration_us,
                bucket=bucket,
                outcome=outcome,
            )
        )
    for (bucket, outcome), (agreed_subjects, expected_texts, observed_texts) in agreed.items():
        result.blocks.append(
            cases.block(
                subjects=agreed_subjects,
                expected=expected_texts,
                observed=observed_texts,
                duration_us=duration_us,
                bucket=bucket,
                outcome=outcome,
            )
        )
    return result


def shares_case(
    cases: UnitCases,
    categories: Sequence[Category],
    result: WeightedResult,
    subjects: Sequence[str],
    observation: SubscriptionObservation,
) -> Case:
    """The list's summary case: the shares of the messages judged (`result`) against the list's by
    chi-square, ``distribution`` when the fit is rejected (``remainder-delivered`` when
    `remainder_on_itself`), ``unknown`` when no message was observed."""
    counts = [result.selected(c.bucket) for c in categories]
    fit = chi_square(counts, [c.share for c in categories])
    names = ", ".join(f"{c.template or '(dropped)'} {c.share:.0%}" for c in categories)
    difference = "distribution" if fit.rejected else ""
    if fit.rejected and remainder_on_itself(categories, counts, subjects):
        difference = REMAINDER_DELIVERED
    if not any(observation.received(index) for index in range(len(subjects))):
        difference = "unknown"  # no message was observed: the shares say nothing
    return cases.case(
        expected=f"shares {names} (chi-square p >= {fit.alpha:g})",
        observed=fit.describe(),
        difference=difference,
        detail=observation.failure
        if difference == "unknown"
        else f"{sum(counts)} of {len(subjects)} messages judged possible",
        kind="summary",
    )


def refusal_case(context: RunContext, run: WeightedRun, observed: WeightedObservation, kind: str) -> Case:
    """The one case of a list the reference refuses (`kind`): agree when the server refused it too,
    ``reference-reject-<kind>-server-accept`` when it took it, unknown when it was not asked."""
    expected, verdict, difference = acceptance(
        kind, observed.rejection if observed.deliveries is None else None
    )
    if observed.deliveries is not None and observed.deliveries.failure:
        verdict, difference = "", "unknown"
    case = make_case(
        context,
        feature="weighted",
        functions=functions_named(" ".join(entry.destination for entry in run.entries)),
        source=run.source,
        destination="",
        weights=run.entries,
        expected=expected,
        observed=verdict,
        difference=difference,
        detail=observed.rejection or (observed.deliveries.failure if observed.deliveries else ""),
        seed=run.seed,
    )
    return replace(case, steps=run.steps)


def remainder_on_itself(
    categories: Sequence[Category], counts: Sequence[int], subjects: Sequence[str]
) -> bool:
    """Whether shares that fail the fit are the remainder delivered where an entry listing the source
    itself also delivers (``wt.s.*: [{wt.s.$1, 50%}]``): no message lost, and every subject is mapped to
    itself by that entry, so its deliveries cannot be told from the remainder's one by one."""
    lost = [count for category, count in zip(categories, counts, strict=True) if category.bucket == LOSS]
    return (
        bool(lost)
        and lost[0] == 0
        and any(
            category.transform is not None and all(category.transform.apply(s) == s for s in subjects)
            for category in categories
        )
    )


def message_count(
    source: str, entries: Sequence[WeightedDestination], profile: ReleaseProfile, cluster: str | None = None
) -> int:
    """How many messages to publish for this list on a server of `cluster`: ``sample_size`` of its
    shares, capped; none for a list the reference refuses (the server must refuse it too)."""
    try:
        mapping = compile_weighted(source, entries, profile, cluster)
    except MappingError:
        return 0
    return min(MAX_MESSAGES, sample_size(list(mapping.expected_distribution().values())))


def subjects_for(source: str, count: int, rng: random.Random) -> list[str]:
    """``count`` subjects matching ``source`` (`bulk_subjects`: each ``*`` a token of a pool of 40 drawn
    ones, ``>`` one to three)."""
    return bulk_subjects(source, rng, count, pool=random_tokens(rng, 40))


SHAPES = {"literal": "wt.s", "one": "wt.s.*", "two": "wt.s.*.*", "tail": "wt.s.>"}
"""Mapping sources by shape."""


def itself(shape: str, *, named: bool) -> str:
    """The destination that maps every subject of the shape's source to itself ("For Artificial Loss":
    the source listed as a destination). A destination may not hold ``*``, so a source with ``*`` lists
    itself with its wildcards in place (``wt.s.*`` as ``wt.s.$1``)."""
    source = SHAPES[shape]
    if shape not in ("one", "two"):
        return source
    refs = [1, 2] if shape == "two" else [1]
    return ".".join(["wt.s", *(f"{{{{wildcard({n})}}}}" if named else f"${n}" for n in refs)])


def destination_for(shape: str, index: int, *, named: bool, reorder: bool) -> str:
    """Entry ``index``'s destination: its own literal token ``d<index>`` (so no two entries, nor the
    unchanged subject, can map a subject to the same place) and every wildcard of the source, as ``$n`` or
    ``{{wildcard(n)}}`` (``named``, 2.8+), in source order or swapped (``reorder``)."""
    head = f"wt.d{index}"
    if shape == "literal":
        return head
    if shape == "tail":
        return f"{head}.>"
    refs = [1, 2] if shape == "two" else [1]
    if reorder:
        refs.reverse()
    return ".".join([head, *(f"{{{{wildcard({n})}}}}" if named else f"${n}" for n in refs)])


def draw_weights(draw: st.DrawFn, size: int) -> list[int]:
    """`size` weights of at least 1 summing to 100 or less (100 about half the time)."""
    total = draw(st.just(100) | st.integers(size, 100), label="total")
    cuts: list[int] = []
    if size > 1:  # total >= size, so there is room for size - 1 distinct cut points
        cut_points = st.lists(st.integers(1, total - 1), min_size=size - 1, max_size=size - 1, unique=True)
        cuts = sorted(draw(cut_points, label="cuts"))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]


@st.composite
def weighted_lists(
    draw: st.DrawFn, profile: ReleaseProfile, *, zero_weights: bool = True
) -> tuple[str, tuple[WeightedDestination, ...]]:
    """A source and a valid weighted list for it: 1-3 entries of weight >= 1 summing to 100 or less
    (100 about half the time), sometimes the source itself as an entry (artificial loss; with its
    wildcards in place for a source with ``*``), sometimes (`zero_weights`) an extra entry of weight 0.
    Shrinks to ``wt.s: [{wt.d0, 100%}]``.
    """
    shape = draw(st.sampled_from(list(SHAPES)), label="shape")
    source = SHAPES[shape]
    size = draw(st.integers(1, 3), label="size")
    weights = draw_weights(draw, size)
    named = "wildcard" in profile.mapping_functions and draw(st.booleans())
    reorder = draw(st.booleans())
    entries = [
        WeightedDestination(destination_for(shape, i, named=named, reorder=reorder), w)
        for i, w in enumerate(weights)
    ]
    if draw(st.booleans(), label="loss"):
        slot = draw(st.integers(0, size - 1))
        entries[slot] = WeightedDestination(itself(shape, named=named), entries[slot].weight)
    if zero_weights and draw(st.integers(0, 4), label="zero_weight") == 0:
        entries.append(WeightedDestination(destination_for(shape, 9, named=named, reorder=reorder), 0))
    order = draw(st.permutations(range(len(entries))))
    return source, tuple(entries[i] for i in order)


CLUSTER = "nc"
"""The cluster the weighted family's server is in (`cluster { name: nc }`, a cluster of one)."""
OTHER_CLUSTER = "elsewhere"
"""A cluster no server of the family is in: its entries are never used."""


@st.composite
def clustered_lists(draw: st.DrawFn, profile: ReleaseProfile) -> tuple[str, tuple[WeightedDestination, ...]]:
    """A source and a valid list with cluster-scoped entries (``{destination: D, weight: W%, cluster:
    C}``): 1-2 entries scoped to `CLUSTER` (the server's) or to `OTHER_CLUSTER`, after 0-2 unscoped
    ones (none before 2.10, whose server sums the whole list's weights), each scope's weights summing to
    100 or less. The documents do not describe the field; what the server does decides
    (`reference.weighted`): a server of a cluster that has entries uses those alone, any other the
    unscoped ones. Shrinks to one entry of the server's cluster alone."""
    source, unscoped = draw(weighted_lists(profile, zero_weights=False))
    # Before 2.10 one total covers the whole list: the scoped entries then stand alone.
    unscoped = unscoped[: draw(st.integers(0, 2)) if profile.weight_total_per_cluster else 0]
    cluster = draw(st.sampled_from((CLUSTER, OTHER_CLUSTER)), label="cluster")
    weights = draw_weights(draw, draw(st.integers(1, 2), label="scoped"))
    shape = next(name for name, pattern in SHAPES.items() if pattern == source)
    scoped = tuple(
        WeightedDestination(destination_for(shape, 5 + i, named=False, reorder=False), w, cluster)
        for i, w in enumerate(weights)
    )
    return source, (*unscoped, *scoped)


ODD_SOURCE = "wt.>.s"
"""A source no subject rule allows (``>`` not last) that an account JWT's own validation lets through
(it refuses only empty subjects, spaces and empty tokens), so that the server's check of the claim's
sources is what refuses it."""
REFUSALS = ("duplicate", "total", "weight", "destination", "source")
"""What makes a list of `refused_lists` one the server must refuse."""


@st.composite
def refused_lists(
    draw: st.DrawFn, profile: ReleaseProfile, *, zero_weights: bool = True
) -> tuple[str, tuple[WeightedDestination, ...]]:
    """A source and a list the reference refuses for one fault (`REFUSALS`): a destination listed twice,
    weights that total over 100, one weight of 101 or more, a destination naming a wildcard the source
    lacks (never for a source without wildcards, whose mappings the validation family judges), or a
    source with ``>`` before its last token (`ODD_SOURCE`).
    The last two are the list's only entry one time in three. "Weighted Mappings" lists shares that sum
    to 100 or less; the rest is what the server checks (`reference.weighted.compile_weighted`). An
    added entry may weigh 0 (`zero_weights`). Shrinks to a duplicate of a one-entry list."""
    source, listed = draw(weighted_lists(profile, zero_weights=False))
    fault = draw(st.sampled_from(REFUSALS), label="fault")
    if fault == "destination" and source == SHAPES["literal"]:
        fault = "duplicate"
    entries = list(listed)
    if fault in ("weight", "destination") and draw(st.integers(0, 2), label="alone") == 0:
        entries = []
    room = 100 - sum(entry.weight for entry in entries)
    least = 0 if zero_weights else 1
    extra = destination_for(next(k for k, v in SHAPES.items() if v == source), 7, named=False, reorder=False)
    if fault == "duplicate":
        twin = entries[draw(st.integers(0, len(entries) - 1))].destination
        entries.append(WeightedDestination(twin, draw(st.integers(least, max(least, room)))))
    elif fault == "total":
        entries.append(WeightedDestination(extra, draw(st.integers(room + 1, 100))))
    elif fault == "weight":
        entries.append(WeightedDestination(extra, draw(st.integers(101, 200))))
    elif fault == "source":
        return ODD_SOURCE, tuple(entries)
    else:
        weight = draw(st.integers(max(1, least), max(1, room)))
        entries.append(WeightedDestination(f"wt.bad.$9.{extra}", weight))
    order = draw(st.permutations(range(len(entries))))
    return source, tuple(entries[i] for i in order)


@dataclass(frozen=True, slots=True)
class WeightedFamily(TargetServer):
    name: str = "weighted"
    description: Description = Description(
        "one weighted list, with enough messages to test its shares, on a server in a cluster of one "
        "(`nc`): one list in four has entries scoped to that cluster or another, and one list of one "
        "entry in three is written as that entry alone",
        10_000,
    )
    features: tuple[str, ...] = ("weighted",)
    operator: bool = False
    refused_only: bool = False
    """Draw only lists the server must refuse (one case each), for a small budget that valid lists
    (hundreds of messages each) would use up in a unit or two."""

    def server_for(self, server: Backend) -> Backend:
        return in_operator_mode(server, self.operator)

    def base_config(self, server: Backend) -> ServerConfig:
        return ServerConfig(cluster_name=CLUSTER)

    def units(self, profile: ReleaseProfile) -> st.SearchStrategy[WeightedRun]:
        def run(drawn: tuple[str, tuple[WeightedDestination, ...]], seed: int, single: bool) -> WeightedRun:
            source, entries = drawn
            count = message_count(source, entries, profile, CLUSTER)
            subjects = tuple(subjects_for(source, count, random.Random(seed)))
            return WeightedRun(source, entries, subjects, seed, CLUSTER, single and len(entries) == 1)

        valid = mostly(
            weighted_lists(profile, zero_weights=not self.operator), clustered_lists(profile), one_in=4
        )
        single = st.just(False) if self.operator else mostly(st.just(False), st.just(True), one_in=3)
        lists = refused_lists(profile, zero_weights=not self.operator) if self.refused_only else valid
        return st.builds(run, lists, st.integers(0, 2**32 - 1), single)

    def execute(self, session: Session, unit: WeightedRun) -> WeightedObservation:
        return execute_weighted(session, unit)

    def judge(
        self, context: RunContext, profile: ReleaseProfile, unit: WeightedRun, observed: WeightedObservation
    ) -> Judged:
        return judge_weighted(context, profile, unit, observed).all_cases

    def unknown(self, context: RunContext, profile: ReleaseProfile, unit: WeightedRun, reason: str) -> Judged:
        """Every message's case and the shares' case, none observed."""
        observed = WeightedObservation(deliveries=SubscriptionObservation(failure=reason))
        return judge_weighted(context, profile, unit, observed).all_cases

    def unit_of(self, case: CaseFile) -> WeightedRun:
        """The case's list, with its subject published often enough to see the shares, on a server of
        the family's cluster."""
        subject = case.subject or case.source
        single = SINGLE_STEP in case.steps
        return WeightedRun(case.source, case.weights, (subject,) * 1_000, cluster=CLUSTER, single=single)
