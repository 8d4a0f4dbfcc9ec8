"""A campaign: every family on every target, each with a budget of cases, into one run directory.

Each family runs on a server of the target started for it alone (with the configuration the family
needs, e.g. JetStream), so a family that crashes its server leaves the others untouched. A family a
target cannot run (a release without the feature, a missing server build) is skipped with one line.
Divergences never stop a campaign: they are recorded, counted and shown at the end.
"""

from __future__ import annotations

import functools
import gc
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from nats_conformance.fixtures.adapters import packaged
from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.fixtures.engine import engine_command
from nats_conformance.fixtures.errors import TargetLostError
from nats_conformance.fixtures.options import OptionError, RunConfig, Target
from nats_conformance.fixtures.provision import resolve_binary
from nats_conformance.fixtures.servers import open_backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.expectations import Expectations
from nats_conformance.records.judgement import DivergenceTally
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import RecordsError, RecordWriter
from nats_conformance.reference.errors import UnknownVersionError, interruption
from nats_conformance.reference.profiles import ReleaseProfile, for_version, nearest_profile
from nats_conformance.reference.versions import build_note
from nats_conformance.suites.engine.family import ServerFamily, ServerLostError
from nats_conformance.suites.engine.progress import Progress
from nats_conformance.suites.engine.run import Sink, run_family
from nats_conformance.suites.engine.shrink import minimise
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES, LIBRARY, family_of_case
from nats_conformance.suites.families.library import (
    BACKEND,
    AdapterSession,
    unanswered_operations,
    unsupported_functions,
)
from nats_conformance.suites.junit import FamilyOutcome
from nats_conformance.suites.oracle import EngineOracle


@dataclass(frozen=True, slots=True)
class AdapterTarget:
    """An adapter command and the release profiles whose rules it is asked to follow, one after the
    other (an `engine:` target's default is its own release)."""

    command: str
    profiles: Sequence[str]
    environment: Mapping[str, str] = field(default_factory=dict)
    """Added to the adapter's environment (a -cover engine's GOCOVERDIR)."""
    close_grace: float = 0.0
    """Seconds the adapter is given to exit once its input is closed (a -cover engine writes its
    counters then)."""


@dataclass(frozen=True, slots=True)
class CampaignPlan:
    """Cases per family on every target (a family not named gets its default budget; 0 skips it), and
    the seed every draw derives from. Adapters are asked the mapping family's budget of questions; with
    `strict_errors` their rejections must also name the reference's error kind."""

    budgets: Mapping[str, int] = field(default_factory=dict)
    seed: int = 0
    oracle: str = ""
    """`engine`: each server target's own transform engine is asked too (`suites.oracle`)."""
    against: str = ""
    """A release whose transform engine is asked every adapter question too (`--against engine:R`)."""
    judge_by: str = "documents"
    """`engine`: an adapter whose every divergence `against`'s engine shares conforms to that release
    (`records.judgement`); `documents`: every divergence counts."""
    strict_errors: bool = False
    known_cases: bool = True
    """Run the expectations' known cases first on each target (`records.expectations`); False draws
    every unit, to measure what the generators find on their own."""
    guided: bool = True
    """An adapter that answers `coverage` (a -cover engine) is asked in coverage-guided draws
    (`suites.engine.run.run_family`); False draws as for any adapter, the baseline of guidance."""

    def budget(self, family: ServerFamily[Any, Any]) -> int:
        return self.budgets.get(family.name, family.description.budget)

    @property
    def questions(self) -> int:
        """The questions an adapter is asked under each profile: the mapping family's budget when the
        plan sets it (`--cases`), else the library family's default."""
        return self.budgets.get("mapping", LIBRARY.description.budget)

    def describe(self) -> dict[str, object]:
        return {
            "budgets": {name: self.budget(family) for name, family in FAMILIES.items()},
            "seed": self.seed,
            "oracle": self.oracle,
            "against": self.against,
            "judge_by": self.judge_by,
            "strict_errors": self.strict_errors,
            "known_cases": self.known_cases,
            "guided": self.guided,
        }


class ScaledOut(Protocol):
    """What a campaign asks of a scale-out (`suites.engine.scaleout.ScaleOut`, which runs `run_one` of each
    family on each target as Spark tasks and so builds on this module): its settings for the run's journal,
    and the run of every family of `run`'s targets into `writer`."""

    def describe(self) -> dict[str, object]: ...

    def run(
        self,
        run: RunConfig,
        plan: CampaignPlan,
        writer: RecordWriter,
        expectations: Expectations,
        *,
        diverged: list[Case],
        outcomes: list[FamilyOutcome],
        resume: bool = False,
    ) -> None: ...


def planned_cases(run: RunConfig | None, plan: CampaignPlan, adapters: Sequence[AdapterTarget]) -> int:
    """The cases the plan asks for: every family's budget on every server target, and the mapping budget
    per adapter and release profile (what the progress display counts down from)."""
    families = sum(plan.budget(family) for family in FAMILIES.values())
    questions = plan.questions * sum(len(adapter.profiles) for adapter in adapters)
    return (len(run.targets) * families if run else 0) + questions


@functools.cache
def freeze_imported() -> None:
    """Once a process, before its first campaign: what it holds then (its imports, mostly, which live as
    long as it does) leaves the collector's reach, so that a full collection scans only what the campaign
    makes. One such collection took 50 ms of a 0.25 s weighted campaign on 2.14.5 (timed by
    `gc.callbacks`); the drawing process does the same (`fixtures.children.fork_child`)."""
    gc.freeze()


def run_campaign(
    run: RunConfig | None,
    plan: CampaignPlan,
    run_dir: Path,
    expectations: Expectations,
    *,
    adapters: Sequence[AdapterTarget] = (),
    outcomes: list[FamilyOutcome] | None = None,
    scale_out: ScaledOut | None = None,
    resume: bool = False,
) -> tuple[RecordWriter, list[Case]]:
    """Every server target of `run`, then every adapter command asked under each release profile, one
    after the other, into one run directory; returns the closed writer and the first unexpected
    divergences (an adapter's minimal cases first). How each family went on each target is appended
    to `outcomes`. With `scale_out` the server targets' families run as Spark tasks instead
    (`suites.engine.scaleout`; adapters are refused there).

    Records that cannot be written (a full disk) end the campaign with one line that still accounts
    for every case run: recorded plus lost. The run's journal (`records.writer`) ends `completed`,
    `interrupted` (SIGINT, SIGTERM) or `crashed`; a run that ends before its first case (a release that
    cannot be built, an unreachable server, Ctrl-C) removes its run directory. With `resume` (a scaled-out
    run only) `run_dir` holds an interrupted run of the same targets and plan, whose completed tasks
    are kept (`ScaleOut.run`), and which is never removed.
    """
    freeze_imported()
    writer = open_writer(run_dir, campaign_settings(run, plan, adapters, scale_out), resume=resume)
    progress = Progress(total=planned_cases(run, plan, adapters))
    diverged: list[Case] = []
    outcomes = [] if outcomes is None else outcomes
    try:
        try:
            run_targets(
                run,
                plan,
                writer,
                expectations,
                adapters=adapters,
                diverged=diverged,
                outcomes=outcomes,
                progress=progress,
                scale_out=scale_out,
                resume=resume,
            )
        except BaseException as error:
            signal = interruption(error)
            writer.close("interrupted" if signal else "crashed", signal=signal)
            raise
        writer.close()
    except RecordsError as error:
        journal = writer.manifest()  # a scaled-out run's tasks' records too
        raise RecordsError(
            f"{error} ({writer.total} cases run: {journal['written']} recorded, {journal['unwritten']} lost)"
        ) from error
    except TargetLostError as error:
        raise TargetLostError(
            f"{error}; {writer.written} cases recorded in {run_dir}, the run journaled {writer.status}"
        ) from error
    except BaseException:
        if not writer.total and not resume:
            shutil.rmtree(run_dir, ignore_errors=True)  # nothing recorded: no empty run left for reports
        raise
    return writer, diverged


def campaign_settings(
    run: RunConfig | None, plan: CampaignPlan, adapters: Sequence[AdapterTarget], scale_out: ScaledOut | None
) -> dict[str, object]:
    """What the run's journal keeps of how the campaign was asked: its targets, versions, backends,
    adapters and plan, and the scale-out's settings when it has one."""
    settings: dict[str, object] = {
        "targets": [target.id for target in run.targets] if run else [],
        "versions": [spec.text for spec in run.versions] if run else [],
        "backends": list(run.backends) if run else [],
        "adapters": [
            {"command": adapter.command, "profiles": list(adapter.profiles)} for adapter in adapters
        ],
        "plan": plan.describe(),
    }
    if scale_out is not None:
        settings["scale_out"] = scale_out.describe()
    return settings


def open_writer(run_dir: Path, settings: dict[str, object], *, resume: bool) -> RecordWriter:
    """The writer of the run in `run_dir`; when its first journal cannot be written (a full disk) the
    directory is removed, so that no empty run is left, unless the run is one being resumed."""
    try:
        return RecordWriter(run_dir, run_id=run_dir.name, settings=settings)
    except BaseException:
        if not resume:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def run_targets(
    run: RunConfig | None,
    plan: CampaignPlan,
    writer: RecordWriter,
    expectations: Expectations,
    *,
    adapters: Sequence[AdapterTarget],
    diverged: list[Case],
    outcomes: list[FamilyOutcome],
    progress: Progress,
    scale_out: ScaledOut | None,
    resume: bool,
) -> None:
    """Every family of every server target of `run` (as Spark tasks with `scale_out`), then every
    adapter under each of its release profiles, into `writer`; each family's outcome is appended to
    `outcomes`, the first unexpected divergences to `diverged`."""
    if scale_out is not None and run is not None:
        scale_out.run(run, plan, writer, expectations, diverged=diverged, outcomes=outcomes, resume=resume)
    elif run is not None:
        for number, target in enumerate(run.targets, 1):
            if len(run.targets) > 1:
                print(f"target {number}/{len(run.targets)}: {target.id}", file=sys.stderr, flush=True)
            for family in FAMILIES.values():
                if plan.budget(family):
                    outcomes.extend(
                        run_one(
                            target,
                            run,
                            family,
                            plan=plan,
                            writer=writer,
                            expectations=expectations,
                            diverged=diverged,
                            progress=progress,
                        )
                    )
    for adapter in adapters:
        for profile in adapter.profiles:
            outcomes.extend(
                run_adapter(
                    adapter, profile, plan, writer, expectations, diverged=diverged, progress=progress
                )
            )


def run_one(
    target: Target,
    run: RunConfig,
    family: ServerFamily[Any, Any],
    *,
    plan: CampaignPlan,
    writer: RecordWriter,
    expectations: Expectations,
    diverged: list[Case],
    progress: Progress | None = None,
    draw_apart: bool = True,
) -> list[FamilyOutcome]:
    """One family on a server of `target` started for it (a start that fails is tried again, and each
    retry journaled as a restart: `Session.started`), counted on `progress` (the campaign's; by default
    one of this family's budget)."""
    server = family.placement.server_for(open_backend(target, run, binary_resolver=resolve_binary))
    label = f"{target.id} {family.name}:"
    progress = progress or Progress(total=plan.budget(family))
    progress.begin(label, plan.budget(family))
    skipped = False
    try:
        try:
            session = Session.started(
                server,
                family.placement.base_config(server),
                rules=lambda version: judging_profile(target, run, version, writer),
            )
        except BaseException:
            skipped = True  # no server, no case: the error's one line says why
            raise
        before = Tally.of(writer)
        try:
            why = family.placement.unsupported(server.version, server.name)
            if why:
                skipped = True
                print(f"{label} skipped: {why}", file=sys.stderr)
                return [FamilyOutcome(target.id, family.name, skipped=why)]
            context = RunContext.for_server(
                server,
                run_id=writer.run_id,
                expectations=expectations,
                next_case_id=writer.next_case_id,
                oracle=EngineOracle(server.version, coverage_dir=run.coverage_dir) if plan.oracle else None,
            )
            try:
                run_family(
                    family,
                    session,
                    context,
                    budget=plan.budget(family),
                    seed=plan.seed,
                    sink=Sink(writer, progress, diverged),
                    known=(
                        known_units(family, expectations, restartable=target.backend != "external")
                        if plan.known_cases
                        else ()
                    ),
                    draw_apart=draw_apart,
                )
            except ServerLostError as lost:
                if target.backend != "external":
                    raise
                raise TargetLostError(lost_line(server.url, run.apply_command, lost)) from lost
            finally:
                if context.oracle is not None:
                    context.oracle.close()
        finally:
            session.close_kept()
            for restart in session.restarts:
                print(f"{label} {restart}", file=sys.stderr)
                writer.note_restart(target.id, family.name, restart)
        return [before.outcome(writer, target.id, family.name)]
    finally:
        progress.end(skipped=skipped)
        server.cleanup()


def lost_line(url: str, apply_command: str | None, lost: ServerLostError) -> str:
    """Why a run on the server at `url` stops: it stopped answering and could not be brought back."""
    how = "--apply-command did not bring it back" if apply_command else "there is no --apply-command"
    return f"the server at {url} stopped answering after a case crashed it and {how} ({lost})"


def known_units(
    family: ServerFamily[Any, Any], expectations: Expectations, *, restartable: bool
) -> list[Any]:
    """The units of the expectations' known cases that `family` runs (the family that replays each), noted
    as run (`Expectations.note_known`); a unit that crashed a server is left out unless the target is
    `restartable` (a server at a URL is not this suite's to crash). A case of a feature only a library
    answers (`subjects`, of an adapter) is no server family's."""
    known = expectations.known_cases
    cases = [case for case in known if case.feature in family.features and family_of_case(case) is family]
    units = [family.unit_of(case) for case in cases]
    crashing = {
        unit for case, unit in zip(cases, units, strict=True) if case.case_class.endswith(":server-crash")
    }
    kept = [
        (case, unit) for case, unit in zip(cases, units, strict=True) if restartable or unit not in crashing
    ]
    expectations.note_known(case for case, _ in kept)
    return [unit for _, unit in kept]


@dataclass(frozen=True, slots=True)
class Tally:
    """The writer's case and divergence counts when a family started, for its outcome."""

    cases: int
    diverged: int
    started: float

    @classmethod
    def of(cls, writer: RecordWriter) -> Tally:
        return cls(writer.total, _diverged(writer), time.monotonic())

    def outcome(self, writer: RecordWriter, target: str, family: str) -> FamilyOutcome:
        """What the writer gained since: the family's cases, divergences and time."""
        return FamilyOutcome(
            target,
            family,
            cases=writer.total - self.cases,
            diverged=_diverged(writer) - self.diverged,
            seconds=time.monotonic() - self.started,
        )


def _diverged(writer: RecordWriter) -> int:
    return sum(count for (_, verdict), count in writer.counts.items() if verdict == "diverge")


def judging_profile(target: Target, run: RunConfig, version: str, writer: RecordWriter) -> ReleaseProfile:
    """The rules `target`'s server (announcing `version`) is judged by: `--profile`, else the nearest
    known release. The first time for a target it is recorded in the manifest's settings (`profiles`)
    and, when it is not the server's own release, stated on stderr in one line."""
    try:
        profile = for_version(run.profile) if run.profile else nearest_profile(version)
    except UnknownVersionError as error:
        raise OptionError(
            f"{target.id} announces version {version!r}, which no known release's rules cover ({error}); "
            "name the rules to judge it by with --profile RELEASE"
        ) from error
    profiles = writer.settings.setdefault("profiles", {})
    if target.id not in profiles:
        profiles[target.id] = {"server_version": version, "profile": profile.name}
        if profile.name != version:
            why = "--profile" if run.profile else "the nearest known release; choose with --profile RELEASE"
            if build_note(version) and not run.profile:
                why = f"a {build_note(version)} of {profile.name}; choose with --profile RELEASE"
            print(
                f"{target.id}: nats-server {version or '(no version)'} judged by the rules of {profile.name} "
                f"({why})",
                file=sys.stderr,
                flush=True,
            )
    return profile


def described(command: str, adapter: AdapterProcess) -> dict[str, object]:
    """What the run's manifest journals of an adapter target (`RecordWriter.note_implementation`): its
    hello's declarations and, for a packaged adapter, what its adapter.toml says."""
    hello = adapter.hello
    entry: dict[str, object] = {
        "implementation": adapter.implementation,
        "command": command,
        "protocol": hello.protocol,
        "ops": sorted(adapter.ops),
        "subject_rules": None if hello.subject_rules is None else sorted(hello.subject_rules),
        "answered_by": hello.answered_by,
    }
    package = packaged(command)
    if package is not None:
        entry |= {
            "package": package.name,
            "language": package.language,
            "version": package.version,
            "docs": package.docs,
            "functions": list(package.functions),
        }
    return entry


def run_adapter(
    target: AdapterTarget,
    profile: str,
    plan: CampaignPlan,
    writer: RecordWriter,
    expectations: Expectations,
    *,
    diverged: list[Case],
    progress: Progress | None = None,
) -> list[FamilyOutcome]:
    """The library family (`suites.families.library`) on one adapter under one release's rules, with the
    mapping budget of questions: the expectations' known cases an adapter can answer first, then the
    drawn questions, then the minimal case of each unexpected divergence class (`suites.engine.shrink`);
    judged by `plan.against`'s engine (`plan.judge_by`), its verdict is journaled (`records.judgement`)."""
    budget = plan.questions
    progress = progress or Progress(total=budget)
    before = Tally.of(writer)
    against = AdapterProcess(engine_command(plan.against)) if plan.against else None
    with AdapterProcess(
        target.command, environment=target.environment, close_grace=target.close_grace
    ) as adapter:
        release = for_version(profile)
        functions = [f"{{{{{name}}}}}" for name in unsupported_functions(adapter)]
        unsupported = [*unanswered_operations(adapter), *functions]
        if unsupported:
            print(
                f"{adapter.implementation}: not supported {', '.join(unsupported)} (its hello leaves them "
                "out; their questions are recorded as not supported)",
                file=sys.stderr,
            )
        expectations.note_run(adapter.implementation, release.name)
        writer.note_implementation(described(target.command, adapter))
        context = RunContext(
            writer.run_id, adapter.implementation, release.name, BACKEND, expectations, writer.next_case_id
        )
        session = AdapterSession(
            adapter, release, strict_errors=plan.strict_errors, against=against, seed=plan.seed
        )
        progress.begin(f"{adapter.implementation}@{release.name}:", budget)
        tally = DivergenceTally()
        sink = Sink(writer, progress, [], smallest={}, also=tally.add)
        known = (
            [case for case in expectations.known_cases if case.question() is not None]
            if plan.known_cases
            else []
        )
        expectations.note_known(known)
        try:
            family = replace(LIBRARY, protocol=adapter.hello.protocol, ops=adapter.ops)
            run_family(
                family,
                session,
                context,
                budget=budget,
                seed=plan.seed,
                sink=sink,
                known=[LIBRARY.unit_of(case) for case in known],
                guidance=session.guidance(plan.guided),
            )
            minimal = minimise(family, session, context, sink.smallest or {}, sink)
        finally:
            progress.end()
            if against is not None:
                against.close()
        if against is not None and plan.judge_by == "engine":
            engine = str(against.hello.server_version or plan.against)
            judgement = tally.judgement(f"{adapter.implementation}@{release.name}", engine)
            writer.note_judgement(judgement.describe())
        diverged[:0] = minimal
        return [before.outcome(writer, f"{adapter.implementation}@{release.name}", LIBRARY.name)]
