"""The compatibility matrix: features and mapping functions x releases, derived from verdict counts.

A cell sums the cases of its row (a feature, or every case whose ``functions`` include the function)
on one release. Its state, first match wins:

1. ``diverges``: at least one unexpected divergence;
2. ``known divergence``: at least one divergence listed in expectations.toml (``expected``);
3. ``not supported``: the release refuses the function: some validation case was rejected by reference
   and server alike as ``reject:unsupported-function``, and no case exercised the function there
   (`records.aggregates.UNSUPPORTED`, `EXERCISED`); or an adapter does not support the row (its hello leaves
   out the operation or the function). A feature row with no judged cases of its own is in this state
   when its not-supported cases say so, or inherits it from the function of its name (``partition``);
4. ``agrees``: cases, all of them agreeing;
5. ``no evidence``: no case, or only ``unknown`` ones.

The first release where a row behaves as documented is the lowest release from which every later
release with evidence ``agrees``: releases are walked from the newest down over ``no evidence`` cells,
until a cell in another state. A row whose newest evidence is not ``agrees`` has none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from nats_conformance.records.aggregates import EXERCISED, UNSUPPORTED, VerdictCount
from nats_conformance.records.releases import Release, sorted_releases
from nats_conformance.records.schema import FEATURES
from nats_conformance.reference.contexts import CONTEXTS
from nats_conformance.reference.functions import FUNCTIONS, canonical_name

AGREES: Final = "agrees"
DIVERGES: Final = "diverges"
KNOWN: Final = "known divergence"
NOT_SUPPORTED: Final = "not supported"
NO_EVIDENCE: Final = "no evidence"
STATES: Final = (AGREES, KNOWN, DIVERGES, NOT_SUPPORTED, NO_EVIDENCE)

FUNCTION_ORDER: Final = tuple(FUNCTIONS)
"""Matrix rows of mapping functions, in the order they appeared (``reference.functions``)."""

FEATURE_FUNCTION: Final = {"partition": "partition"}
"""Features that exist exactly where a mapping function of the same name does."""


def function_names(functions: str) -> tuple[str, ...]:
    """Canonical names of the mapping functions in a ``functions`` value (``+``-joined, any casing);
    names of no mapping function (an unknown ``{{nosuch()}}``) are left out."""
    names = (canonical_name(name) for name in functions.split("+"))
    return tuple(dict.fromkeys(name for name in names if name))


@dataclass(slots=True)
class Tally:
    """Cases of one row on one release, per verdict, with the support evidence among them."""

    agree: int = 0
    diverge: int = 0
    expected: int = 0
    unknown: int = 0
    unsupported: int = 0
    exercised: int = 0

    def add(self, verdict: str, evidence: str, count: int) -> None:
        if verdict in ("agree", "diverge", "expected", "unknown"):
            setattr(self, verdict, getattr(self, verdict) + count)
        if evidence == UNSUPPORTED:
            self.unsupported += count
        elif evidence == EXERCISED:
            self.exercised += count

    @property
    def total(self) -> int:
        return self.agree + self.diverge + self.expected + self.unknown

    @property
    def judged(self) -> int:
        """Cases with a verdict other than ``unknown``: the evidence."""
        return self.agree + self.diverge + self.expected

    @property
    def refused(self) -> bool:
        """True iff the evidence says the release does not support the function (module rule 3)."""
        return self.unsupported > 0 and self.exercised == 0


@dataclass(frozen=True, slots=True)
class Cell:
    state: str
    tally: Tally


@dataclass(frozen=True, slots=True)
class MatrixRow:
    """One feature or function across the releases of one implementation."""

    kind: str  # "feature" or "function"
    name: str
    cells: tuple[Cell, ...]
    first_documented: Release | None


@dataclass(frozen=True, slots=True)
class Matrix:
    """The compatibility matrix of one implementation."""

    implementation: str
    releases: tuple[Release, ...]
    rows: tuple[MatrixRow, ...] = field(default=())


def cell_state(tally: Tally, *, refused: bool) -> str:
    """The state of one cell (module rules 1-5); ``refused``: the release does not support the row."""
    if tally.diverge:
        return DIVERGES
    if tally.expected:
        return KNOWN
    if refused:
        return NOT_SUPPORTED
    if tally.agree:
        return AGREES
    return NO_EVIDENCE


def first_documented(releases: Iterable[Release], states: Iterable[str]) -> Release | None:
    """The lowest release from which every later release with evidence agrees (module docstring)."""
    first = None
    for release, state in reversed(list(zip(releases, states, strict=True))):
        if state == NO_EVIDENCE:
            continue
        if state != AGREES:
            break
        first = release
    return first


Tallies = dict[tuple[str, str], dict[Release, Tally]]


def tallies(verdicts: Iterable[VerdictCount]) -> Tallies:
    """Per (``"feature"``/``"function"``, name), a tally per release."""
    out: Tallies = defaultdict(lambda: defaultdict(Tally))
    for item in verdicts:
        out[("feature", item.feature)][item.release].add(item.verdict, item.evidence, item.count)
        for name in function_names(item.functions):
            out[("function", name)][item.release].add(item.verdict, item.evidence, item.count)
    return out


def row_order(keys: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Features in records.schema order (unknown ones after, by name), then functions in
    ``FUNCTION_ORDER``."""
    features = sorted(
        (name for kind, name in keys if kind == "feature"),
        key=lambda name: (FEATURES.index(name) if name in FEATURES else len(FEATURES), name),
    )
    present = {name for kind, name in keys if kind == "function"}
    return [("feature", name) for name in features] + [
        ("function", name) for name in FUNCTION_ORDER if name in present
    ]


def compatibility_matrices(verdicts: Iterable[VerdictCount]) -> list[Matrix]:
    """One matrix per implementation, its releases in version order (nats-server first)."""
    counted = list(verdicts)
    table = tallies(counted)

    def refused(key: tuple[str, str], release: Release, tally: Tally) -> bool:
        kind, name = key
        if kind == "function":
            return tally.refused
        own = table.get(("function", FEATURE_FUNCTION.get(name, "")), {}).get(release)
        return not tally.judged and (tally.refused or (own is not None and own.refused))

    return _matrices(table, row_order(table), counted, refused, lambda key: key)


def context_matrices(verdicts: Iterable[VerdictCount]) -> list[Matrix]:
    """Per implementation, the places a transform applies x its functions (rows ``stream: split``), the
    cells as in the compatibility matrix: where a destination using a function is taken and agrees in
    one place but not in another (``reference.contexts``)."""
    context_of = {feature: context.name for context in CONTEXTS for feature in context.features}
    counted = [item for item in verdicts if item.feature in context_of]
    table: Tallies = defaultdict(lambda: defaultdict(Tally))
    for item in counted:
        for name in function_names(item.functions):
            table[(context_of[item.feature], name)][item.release].add(item.verdict, item.evidence, item.count)
    order = [context.name for context in CONTEXTS]
    keys = sorted(table, key=lambda key: (order.index(key[0]), FUNCTION_ORDER.index(key[1])))
    return _matrices(
        table,
        keys,
        counted,
        lambda _key, _release, tally: tally.refused,
        lambda key: ("context", f"{key[0]}: {key[1]}"),
    )


def _matrices(
    table: Tallies,
    keys: Iterable[tuple[str, str]],
    counted: Iterable[VerdictCount],
    refused: Callable[[tuple[str, str], Release, Tally], bool],
    row_of: Callable[[tuple[str, str]], tuple[str, str]],
) -> list[Matrix]:
    """One matrix per implementation of `counted`: a row per key with evidence there (its kind and name
    from `row_of`), a cell per release in version order."""
    releases = sorted_releases(item.release for item in counted)
    keys = list(keys)
    matrices = []
    for implementation in dict.fromkeys(release.implementation for release in releases):
        columns = tuple(release for release in releases if release.implementation == implementation)
        rows = []
        for key in keys:
            by_release = table[key]
            if not any(release in by_release for release in columns):
                continue
            cells = []
            for release in columns:
                tally = by_release.get(release, Tally())
                cells.append(Cell(cell_state(tally, refused=refused(key, release, tally)), tally))
            first = first_documented(columns, (cell.state for cell in cells))
            rows.append(MatrixRow(*row_of(key), tuple(cells), first))
        matrices.append(Matrix(implementation, columns, tuple(rows)))
    return matrices
