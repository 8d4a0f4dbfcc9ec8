"""Release profiles: the subject-mapping rules of each nats-server release, as data.

The mapping functions and the release each appeared in are listed once, in ``reference.functions``
(docs.nats.io, "Subject Mapping and Partitioning"). What the document states holds for every release:
wildcards are numbered from 1 (``$1``, ``{{wildcard(1)}}``), so an index outside ``1..number of *`` is
out of range, also in a source without ``*``; a partition number lies between 0 and the number of
partitions - 1, so that number is at least 1. Where the document is silent, the rules below were
observed on live servers (``nats-server -t -c`` for acceptance, raw-protocol publishes for outputs) on
2.2.6, 2.8.4, every 2.9 patch, 2.10.27, 2.11.17, every 2.12 patch, 2.14.5 to 2.14.9 and 2.15.0 to
2.15.2. Lines 2.3-2.7 are assumed to follow 2.2.6.

2.14.6 to 2.14.9 and 2.15.0 to 2.15.2 change no rule of the reference (their transform engine, subject
checks, weights and integer checks are those of 2.14.5). 2.14.10 and 2.15.3 add the account functions
(``{{account-hash()}}`` and its two relatives, ``reference.functions``; ``account_functions`` below).
Their other changes (``$GR.`` subjects refused, permissions checked on an import's delivered subject,
RePublish to reserved subjects dropped, ...) lie outside these rules; docs/guide/campaigns.md lists them.
Two server changes of theirs end listed divergences instead: from
2.14.7 and 2.15.0 the mapping validator accepts ``left`` and ``right``, which the document and the
transform engine had since 2.10.16 (nats-server pull request 8568, "Accept {{left}} and {{right}} mapping
functions in ValidateMapping"); from 2.14.8 and 2.15.1 (not 2.15.0) an account JWT whose mappings would
not install is refused when pushed (pull request 8627, "Reject JWT account mappings that
AddWeightedMappings would discard").

=========  ===========================================================================================
release    rule (observed where the document is silent)
=========  ===========================================================================================
2.2        only ``$n``; ``{{...}}`` tokens are literal text; the number of ``$n`` tokens must *equal* the
           number of ``*`` (``foo.*.*`` -> ``bar.$1`` rejected, ``$1.$1`` accepted); ``$1a`` reads as
           ``$1`` (source: ``Sscanf``); weights total <= 100 over all entries, clusters included.
2.8        ``wildcard`` and ``partition`` (>= 2 args), lower-case names only; any other ``{{...}}`` token
           is literal text (``{{Wildcard(1)}}`` stays as written); placeholder *tokens* must be at least
           the number of ``*``; spaces anywhere in the destination are rejected.
2.9        + ``split``, ``splitFromLeft/Right``, ``sliceFromLeft/Right``; each word's initial may be upper
           case (``SplitFromLeft``; ``WILDCARD`` is an unknown function); unknown ``{{...}}`` tokens are
           rejected; spaces are allowed inside function tokens; placeholder *tokens* must be at least
           the number of ``*`` (as 2.8), so ``a.*.*`` -> ``{{partition(3,1,2)}}`` is rejected.
2.9.15     the *listed indexes* (repeats count) must be at least the number of ``*`` instead (observed:
           2.9.14 rejects ``a.*.*`` -> ``{{partition(3,1,2)}}``, 2.9.15 accepts it; nats-server pull
           request 3887, "Using partition with multiple wildcard token positions").
2.10       no wildcard-usage rule for account mappings; weights total <= 100 per cluster.
2.10.16    + ``left``/``right`` (``reference.functions``).
2.11.8     the integer argument of ``splitFrom*``/``sliceFrom*`` must fit 32 bits (source; observed
           on 2.11.17 rejecting 4294967297, 2.10.27 accepting it).
2.12       + ``random(n)`` and ``partition(n)`` (hashes the whole subject, dots included), also in a
           source without ``*``; counts above 2**31-1 are rejected.
all        functions cut tokens at UTF-8 *byte* offsets; ``random(-k)`` draws in ``[0, k)`` and
           ``random(0)`` gives ``0`` (observed from 2.12).
=========  ===========================================================================================

Where a server contradicts this, the reference does not follow it: the difference is a finding,
reported by the suites and listed in ``expectations.toml`` for the releases it affects (for example
index 0 and negative indexes, partition counts below 1, functions in a source without ``*`` before
2.10, an empty destination from 2.10, ``left``/``right`` in ``mappings {}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from nats_conformance.reference.errors import InvalidVersionError, UnknownVersionError
from nats_conformance.reference.functions import LEGACY_WILDCARD, MAPPING_FUNCTIONS
from nats_conformance.reference.versions import Version

__all__ = [
    "ALL_FUNCTIONS",
    "NEWEST",
    "OLDEST_RULES",
    "RELEASE_LINES",
    "ReleaseLine",
    "ReleaseProfile",
    "for_version",
    "has_profile",
    "nearest_profile",
]

Casing = Literal["lower", "initial"]
WildcardUsage = Literal["exact-count", "per-token", "per-index", "none"]
IntWidth = Literal["truncate-32", "check-32"]

#: Canonical names of every mapping function, in the order the server tries them on a token.
ALL_FUNCTIONS: Final = tuple(
    f.name for f in sorted((f for f in MAPPING_FUNCTIONS if f.tried is not None), key=lambda f: f.tried or 0)
)


@dataclass(frozen=True, slots=True)
class ReleaseLine:
    """One release line: ``2.10`` runs from 2.10.0 to its newest known patch."""

    newest: Version

    @property
    def name(self) -> str:
        """The line as text, ``"2.10"``."""
        return str(self.newest.line)


#: Release lines known to the reference, oldest first, with the newest patch tagged today.
RELEASE_LINES: Final = tuple(
    ReleaseLine(Version.parse(newest))
    for newest in (
        *("2.2.6", "2.3.4", "2.4.0", "2.5.0", "2.6.6", "2.7.4", "2.8.4"),
        *("2.9.25", "2.10.29", "2.11.17", "2.12.15", "2.14.10", "2.15.3"),
    )
)


@dataclass(frozen=True, slots=True)
class ReleaseProfile:
    """The subject-mapping rules of one nats-server release (see the module table for sources).

    Attributes:
        version: the release (a pre-release follows the rules of the release it precedes).
        functions: canonical names the release's transform engine parses.
        mapping_functions: the functions a destination in ``mappings {}`` may use (all of them).
        casing: ``"lower"`` (names as documented in lower case only) or ``"initial"`` (each word's first
            letter in either case: ``splitFromLeft``, ``SplitFromLeft``, ``splitfromleft``).
        unknown_function_is_literal: a ``{{...}}`` token naming no known function stays literal text.
        wildcard_usage: what must reference the source's ``*`` wildcards: ``exact-count`` (as many
            ``$n`` tokens as wildcards), ``per-token`` (at least as many placeholder tokens),
            ``per-index`` (at least as many listed indexes), ``none``.
        spaces_in_functions: whitespace is allowed inside ``{{...}}`` tokens.
        partition_single_argument: ``partition(n)`` hashes the whole subject.
        int_width: integer arguments of ``splitFrom*``/``sliceFrom*``/``left``/``right``: ``truncate-32``
            (64-bit parse, silently cut to 32 bits) or ``check-32`` (rejected beyond 32 bits).
        count_range_check: a partition/random count above ``2**31-1`` is rejected (else truncated).
        weight_total_per_cluster: the 100 limit applies per ``cluster`` (else over the whole list).
        dollar_prefix_parse: ``$1a`` reads as ``$1`` (2.2's ``Sscanf``) instead of a literal.
        account_functions: the account functions the release resolves in account subjects (before them,
            such a token is an unknown function, or literal text where unknown functions are).
        observed: the rules were checked on a live server of this line.
    """

    version: Version
    functions: frozenset[str]
    mapping_functions: frozenset[str]
    casing: Casing
    unknown_function_is_literal: bool
    wildcard_usage: WildcardUsage
    spaces_in_functions: bool
    partition_single_argument: bool
    int_width: IntWidth
    count_range_check: bool
    weight_total_per_cluster: bool
    dollar_prefix_parse: bool = False
    account_functions: frozenset[str] = frozenset()
    observed: bool = field(default=True, compare=False)

    @property
    def name(self) -> str:
        """The release as text, ``"2.9.25"``."""
        return str(self.version)

    def __repr__(self) -> str:
        return f"for_version({self.name!r})"


def _functions(version: Version, scope: str = "message") -> frozenset[str]:
    """The ``{{...}}`` functions of ``scope`` that ``version`` has."""
    return frozenset(
        f.name
        for f in MAPPING_FUNCTIONS
        if f.name != LEGACY_WILDCARD and f.scope == scope and f.in_release(version)
    )


def _build(version: Version) -> ReleaseProfile:
    """The profile for a known ``version`` (rules by first release, see the module table; a
    pre-release follows the release it precedes)."""
    minor, release = version.minor, version.release
    if minor < 8:
        return ReleaseProfile(
            version=version,
            functions=frozenset(),
            mapping_functions=frozenset(),
            casing="lower",
            unknown_function_is_literal=True,
            wildcard_usage="exact-count",
            spaces_in_functions=False,
            partition_single_argument=False,
            int_width="truncate-32",
            count_range_check=False,
            weight_total_per_cluster=False,
            dollar_prefix_parse=True,
            observed=version.line == Version(2, 2),
        )
    if minor in (8, 9):
        lower_only = minor == 8  # 2.8: lower-case names, unknown functions literal, no spaces
        return ReleaseProfile(
            version=version,
            functions=_functions(release),
            mapping_functions=_functions(release),
            casing="lower" if lower_only else "initial",
            unknown_function_is_literal=lower_only,
            wildcard_usage="per-index" if release >= Version(2, 9, 15) else "per-token",
            spaces_in_functions=not lower_only,
            partition_single_argument=False,
            int_width="truncate-32",
            count_range_check=False,
            weight_total_per_cluster=False,
        )
    newer = minor >= 12
    return ReleaseProfile(
        version=version,
        functions=_functions(release),
        mapping_functions=_functions(release),
        casing="initial",
        unknown_function_is_literal=False,
        wildcard_usage="none",
        spaces_in_functions=True,
        partition_single_argument=newer,
        int_width="check-32" if release >= Version(2, 11, 8) else "truncate-32",
        count_range_check=newer,
        weight_total_per_cluster=True,
        account_functions=_functions(release, "account"),
    )


_LINES: Final = {line.name: line for line in RELEASE_LINES}


def for_version(spec: str) -> ReleaseProfile:
    """The profile of a release given as ``"2.9.10"``, ``"v2.14.5"``, a pre-release ``"2.14.5-RC.1"``
    (the rules of its line, compared as a version) or a line ``"2.10"`` (its newest patch).

    Raises:
        UnknownVersionError: not a version, an unknown line, or a version newer than the newest known.
    """
    try:
        version = Version.parse(spec)
    except InvalidVersionError as error:
        raise UnknownVersionError(f"'server_version': {error}") from error
    line = _LINES.get(str(version.line))
    known = ", ".join(line.name for line in RELEASE_LINES)
    if line is None:
        raise UnknownVersionError(f"unknown nats-server release line {spec!r}; known lines: {known}")
    if version.is_line:
        version = line.newest
    if version > line.newest:
        raise UnknownVersionError(
            f"unknown nats-server release {spec!r}; the newest known {line.name} release is {line.newest}"
        )
    return _build(version)


def nearest_profile(spec: str) -> ReleaseProfile:
    """The profile of the nearest known release at or below ``spec``: its own for a known release or
    line, the release a pre-release precedes (``2.12.0-RC.1``: 2.12.0), a Go pseudo-version's base
    release (``Version.base``), else the newest known release below it (``2.14.6`` and
    ``2.15.0-dev``: 2.14.5).

    Raises:
        UnknownVersionError: not a version, or older than every known release.
    """
    try:
        version = Version.parse(spec).base
    except InvalidVersionError as error:
        raise UnknownVersionError(f"'server_version': {error}") from error
    line = _LINES.get(str(version.line))
    if line is not None and (version.is_line or version.release <= line.newest):
        return for_version(str(version if version.is_line else version.release))
    below = [line.newest for line in RELEASE_LINES if line.newest < version]
    if not below:
        raise UnknownVersionError(
            f"no known nats-server release at or below {spec!r} "
            f"(the oldest known line is {RELEASE_LINES[0].name})"
        )
    return _build(max(below))


def has_profile(spec: str) -> bool:
    """Whether the reference has rules for a release (``for_version`` knows it)."""
    try:
        for_version(spec)
    except UnknownVersionError:
        return False
    return True


#: The newest known release's profile (used when no version is given).
NEWEST: Final = _build(RELEASE_LINES[-1].newest)


#: The oldest release the rules describe (account mappings appeared in 2.2.0).
OLDEST_RULES: Final = Version(RELEASE_LINES[0].newest.major, RELEASE_LINES[0].newest.minor, 0)
