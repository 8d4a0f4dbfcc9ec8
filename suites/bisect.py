"""Release bisection: the first and last nats-server release where a case file's divergence occurs.

A case *occurs* on a release when replaying it there (`suites.replay.replay_file_on_server`, on a
server provisioned on demand) gives a case of the file's class with the verdict `diverge` or
`expected`. The search starts from the release the file was found on, which must show it, and
binary-searches downward for the first release and upward for the last, **assuming the releases where
it occurs are contiguous** (a divergence that comes, goes and comes back is reported as one range). A
release whose probe cannot tell (the server does not build or start) is `unknown`: the search skips it
and goes on with its neighbours, and the result lists it. A release newer than every rule set of the
reference is judged by the nearest rules, as a campaign judges it, and the command says so.

`python -m nats_conformance.suites bisect FILE` considers the stable releases the Go module proxy serves
(`fixtures.releases`; `--since`, default 2.2.0, the oldest line of `reference.profiles`) or
`--releases`, writes every probe's cases to a run directory and the result to its `bisection.json`,
which `python -m nats_conformance.reports build` shows. With `--engine` each probe asks the case's question of
the transform engine of the release (`engine:RELEASE`, built once per release) instead: no server starts,
and the divergence occurs where the engine's answer differs from the reference's (any class: the engine
names its differences apart from the server's).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from nats_conformance.fixtures.engine import ENGINE_NAME, engine_command
from nats_conformance.fixtures.errors import VersionSpecError
from nats_conformance.fixtures.options import build_run_config, parse_backend, split_list
from nats_conformance.fixtures.provision import NATS_SERVER, parse_version_spec
from nats_conformance.fixtures.releases import ReleaseSelection, stable_releases
from nats_conformance.records.bisection import (
    ABSENT,
    ASSUMPTION,
    BISECTION_FILE,
    OCCURS,
    UNKNOWN,
    Bisection,
    Probe,
    document,
)
from nats_conformance.records.casefile import CaseFile, read_case_file
from nats_conformance.records.expectations import DEFAULT_PATH, Expectations, load_expectations
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordWriter, new_run_id
from nats_conformance.reference.cli import Parser
from nats_conformance.reference.errors import ConformanceError, InvalidVersionError, UnknownVersionError
from nats_conformance.reference.profiles import RELEASE_LINES, has_profile, nearest_profile
from nats_conformance.reference.versions import Version
from nats_conformance.suites.replay import replay_file_on_server, replay_on_adapter

OLDEST: Final = f"{RELEASE_LINES[0].name}.0"
"""The default lower bound: the first release of the oldest line the reference profiles know."""


class BisectError(ConformanceError):
    """A bisection that cannot start or finish: no release list, a bad option, or a case file that
    does not name a release it occurs on."""

    kind = "bisect"


class NotOccurringError(BisectError):
    """The case does not occur (or cannot be checked) on the release it was found on."""

    def __init__(self, probe: Probe) -> None:
        why = f" ({probe.detail})" if probe.detail else ""
        verb = "does not occur" if probe.outcome == ABSENT else "cannot be checked"
        super().__init__(f"the case {verb} on {probe.release}, where it was found{why}: nothing to bisect")
        self.probe = probe


def release_key(release: str) -> Version:
    """Version order of a release (2.9.25 before 2.10.0)."""
    version = _version(release)
    if version is None or version.is_line:
        raise BisectError(f"{release!r} is not a release such as 2.10.27")
    return version


def _version(text: str) -> Version | None:
    try:
        return Version.parse(text)
    except InvalidVersionError:
        return None


def bisect_releases(releases: Iterable[str], found: str, probe: Callable[[str], Probe]) -> Bisection:
    """Probe `found`, then binary-search below it for the first release where the case occurs and above
    it for the last, skipping `unknown` probes; assumes the releases where it occurs are contiguous.

    Raises:
        NotOccurringError: the case does not occur, or cannot be checked, on `found`.
    """
    order = sorted(set(releases) | {found}, key=release_key)
    index = order.index(found)
    probes: list[Probe] = []
    unknown: set[int] = set()

    def outcome(position: int) -> str:
        result = probe(order[position])
        probes.append(result)
        if result.outcome == UNKNOWN:
            unknown.add(position)
        return result.outcome

    def narrow(low: int, high: int, *, occurs_low: bool) -> tuple[int, int]:
        """Halve the releases strictly between `low` and `high` (one side shows the case, the other
        not) until none is left that could still be probed."""
        while candidates := [i for i in range(low + 1, high) if i not in unknown]:
            middle = candidates[len(candidates) // 2]
            result = outcome(middle)
            if result != UNKNOWN:
                low, high = (middle, high) if (result == OCCURS) == occurs_low else (low, middle)
        return low, high

    if outcome(index) != OCCURS:
        raise NotOccurringError(probes[0])
    before, first = narrow(-1, index, occurs_low=False)
    last, after = narrow(index, len(order), occurs_low=True)
    return Bisection(
        releases=tuple(order),
        found_on=found,
        first=order[first],
        last=order[last],
        absent_before=order[before] if before >= 0 else None,
        absent_after=order[after] if after < len(order) else None,
        unknown_before=tuple(order[before + 1 : first]),
        unknown_after=tuple(order[last + 1 : after]),
        probes=tuple(probes),
    )


def select_releases(listed: Iterable[str], since: str = OLDEST) -> tuple[list[str], list[str]]:
    """(releases at or after `since` that some rules judge, the ones left out as older than every rule
    set), both in numeric order. A release newer than every rule set is judged by the nearest rules, as a
    campaign judges it (`reference.profiles.nearest_profile`)."""
    bound = release_key(since)
    recent = sorted((r for r in set(listed) if release_key(r) >= bound), key=release_key)
    judged = [r for r in recent if _judgeable(r)]
    return judged, [r for r in recent if r not in judged]


def _judgeable(release: str) -> bool:
    try:
        nearest_profile(release)
    except UnknownVersionError:
        return False
    return True


def judged_by_nearer(releases: Iterable[str]) -> dict[str, str]:
    """The releases among `releases` that no rule set of their own covers, each with the release whose
    rules judge it."""
    return {r: nearest_profile(r).name for r in releases if not has_profile(r)}


def parse_releases(texts: Sequence[str]) -> list[str]:
    """`--releases` values: releases (2.10.27) or pinned lines (2.10), comma-separated or repeated."""
    releases = []
    for text in split_list(texts):
        try:
            spec = parse_version_spec(text)
        except VersionSpecError as error:
            raise BisectError(f"--releases: {error}") from error
        if spec.release is None:
            raise BisectError(f"--releases takes releases such as 2.10.27 (got {text!r})")
        releases.append(spec.release)
    if not releases:
        raise BisectError("--releases names no release")
    return releases


def parse_since(text: str) -> str:
    """`--since`: a release (2.9.0) or a line (2.9, meaning 2.9.0)."""
    version = _version(text)
    if version is None:
        raise BisectError(f"--since takes a release such as 2.9.0 or a line such as 2.9 (got {text!r})")
    return str(Version(version.major, version.minor, 0) if version.is_line else version)


def found_release(case: CaseFile, *, engine: bool = False) -> str:
    """The release a case file was found on; it must be a nats-server release (or, for an engine
    bisection, the engine of one)."""
    implementation = case.found_on.get("implementation") or NATS_SERVER.name
    if implementation != NATS_SERVER.name and not (engine and implementation.startswith(ENGINE_NAME)):
        raise BisectError(f"bisection covers nats-server releases; this case was found on {implementation}")
    if not case.case_class:
        raise BisectError("the case file names no case_class: there is no divergence to look for")
    release = (case.found_on.get("server_version") or case.server_version).strip()
    version = _version(release)
    if version is None or version.is_line:
        raise BisectError(f"the case was found on {release!r}, not on a release such as 2.10.27")
    return str(version)


def judge(case: CaseFile, cases: Sequence[Case], release: str, *, any_class: bool = False) -> Probe:
    """A replay's cases as one probe outcome for the case file's class (or, `any_class`, any)."""
    if any(
        (any_class or c.case_class == case.case_class) and c.verdict in ("diverge", "expected") for c in cases
    ):
        return Probe(release, OCCURS)
    others = sorted({c.case_class for c in cases if c.verdict in ("diverge", "expected")})
    if others:
        return Probe(release, ABSENT, "diverges as " + ", ".join(others))
    failed = [c for c in cases if c.verdict == "unknown"]
    if failed or not cases:
        return Probe(release, UNKNOWN, failed[0].detail if failed else "the replay gave no case")
    return Probe(release, ABSENT, "agrees")


def replay_probe(
    case: CaseFile,
    backend: str,
    writer: RecordWriter,
    expectations: Expectations,
    say: Callable[[str], None],
) -> Callable[[str], Probe]:
    """A probe that replays `case` on a fresh server of each release it is given and records the
    cases (known divergences as `expected`); a server that cannot be built or started is `unknown`.
    A family names a case of several differences by the first one the expectations do not list, so
    the replay is judged with every entry but those of the class sought: where the case shows that
    class among others, it is named by it, listed or not."""
    choosing = replace(
        expectations,
        entries=tuple(
            entry
            for entry in expectations.entries
            if not entry.explains(case.feature, case.functions, case.difference)
        ),
    )

    def probe(release: str) -> Probe:
        run = build_run_config([release], [backend], None, None)
        try:
            cases = replay_file_on_server(case, run, expectations=choosing)
        except ConformanceError as error:
            result = Probe(release, UNKNOWN, str(error))
        else:
            cases = [classified(c, writer, expectations) for c in cases]
            writer.extend(cases)
            result = judge(case, cases, release)
        say(result.describe())
        return result

    return probe


def engine_probe(
    case: CaseFile,
    writer: RecordWriter,
    expectations: Expectations,
    say: Callable[[str], None],
) -> Callable[[str], Probe]:
    """A probe that asks `case`'s question of the transform engine of each release it is given; an
    engine that cannot be built or does not answer the question is `unknown`."""

    def probe(release: str) -> Probe:
        try:
            cases = replay_on_adapter(replace(case, server_version=release), engine_command(release))
        except ConformanceError as error:
            result = Probe(release, UNKNOWN, str(error))
        else:
            cases = [classified(c, writer, expectations) for c in cases]
            writer.extend(cases)
            result = judge(case, cases, release, any_class=True)
        say(result.describe())
        return result

    return probe


def classified(case: Case, writer: RecordWriter, expectations: Expectations) -> Case:
    """A replayed case renumbered into the bisection's run, `expected` when the expectations list it."""
    renumbered = replace(case, run_id=writer.run_id, case_id=writer.next_case_id())
    if case.verdict != "diverge":
        return renumbered
    entry = expectations.classify(
        case.implementation,
        case.server_version,
        feature=case.feature,
        functions=case.functions,
        difference=case.difference,
    )
    return renumbered if entry is None else replace(renumbered, verdict="expected", expectation=entry.id)


def describe(case_class: str, result: Bisection) -> str:
    """The result in one line."""
    parts = [f"{case_class} occurs from {result.first} to {result.last} (found on {result.found_on})"]
    if result.absent_before:
        parts.append(f"not on {result.absent_before}, the release before")
    else:
        parts.append(f"it occurs on the oldest release considered, {result.releases[0]}")
    if result.absent_after:
        parts.append(f"not on {result.absent_after}, the release after")
    else:
        parts.append(f"it still occurs on the newest release considered, {result.releases[-1]}")
    for gap, where in ((result.unknown_before, "below"), (result.unknown_after, "above")):
        if gap:
            parts.append(f"the boundary {where} may lie among {', '.join(gap)} (could not be probed)")
    parts.append(f"{len(result.probes)} probes of {len(result.releases)} releases, assuming {ASSUMPTION}")
    return "; ".join(parts)


def bisect_command(arguments: argparse.Namespace) -> int:
    case_path = Path(arguments.case_file)
    case = read_case_file(case_path)
    found = found_release(case, engine=arguments.engine)
    backend = "engine" if arguments.engine else parse_backend(arguments.backend)
    if backend == "external":
        raise BisectError("--backend external cannot bisect: every probe starts a server of its own")
    expectations = load_expectations(Path(arguments.expectations))
    if arguments.releases:
        listed = parse_releases(arguments.releases)
        releases, left_out = select_releases(listed, min(listed, key=release_key))
    else:
        since = parse_since(arguments.since)
        served = stable_releases(NATS_SERVER, ReleaseSelection(since=Version.parse(since)))
        releases, left_out = select_releases(map(str, served), since)
        print(f"{len(releases)} releases from the Go module proxy since {since}")
    if left_out:
        print(f"left out (older than every rule set of the reference): {', '.join(left_out)}")
    for release, rules in judged_by_nearer(releases).items():
        print(f"nats-server {release} judged by the rules of {rules} (the nearest known release)")
    if not releases:
        raise BisectError("no release to bisect over")
    run_id = new_run_id()
    run_dir = Path(arguments.out) / run_id
    settings = {"command": "bisect", "case_file": str(case_path), "backend": backend, "releases": releases}
    began = time.monotonic()
    with RecordWriter(run_dir, run_id=run_id, settings=settings) as writer:
        say = lambda line: print(line, flush=True)  # noqa: E731
        probe = (
            engine_probe(case, writer, expectations, say)
            if arguments.engine
            else replay_probe(case, backend, writer, expectations, say)
        )
        result = bisect_releases(releases, found, probe)
    seconds = time.monotonic() - began
    try:
        (run_dir / BISECTION_FILE).write_text(
            document(case, result, backend=backend, run_id=run_id, seconds=seconds)
        )
    except OSError as error:
        raise BisectError(f"cannot write {run_dir / BISECTION_FILE}: {error.strerror or error}") from error
    print(f"result: {describe(case.case_class, result)} ({seconds:.0f} s)")
    print(f"run directory: {run_dir}")
    return 0


def add_bisect_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register `bisect` on the `python -m nats_conformance.suites` sub-command parser."""
    parser = commands.add_parser(
        "bisect", help="find the first and last release where a case file's divergence occurs"
    )
    parser.add_argument("case_file", metavar="FILE", help="a case file (a run's divergences/*.json)")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument(
        "--releases", action="append", default=[], help="releases to consider, comma-separated"
    )
    chosen.add_argument(
        "--since",
        default=OLDEST,
        help=f"oldest release of the Go module proxy's list to consider (default {OLDEST})",
    )
    parser.add_argument("--backend", default="process", help="process (default) or container")
    parser.add_argument(
        "--engine",
        action="store_true",
        help="ask each release's transform engine (engine:RELEASE) the case's question; no server starts",
    )
    parser.add_argument("--out", default="runs", help="parent of the run directory (default runs)")
    parser.add_argument("--expectations", default=str(DEFAULT_PATH))
    parser.set_defaults(handler=bisect_command)
