"""`python -m nats_conformance.suites campaign|replay`: volume runs outside pytest, and one case run again.

Errors, bad arguments included, are one line on stderr (`nats-conformance: error: ...`) with exit
status 2; a campaign, like a replay, exits 1 on unexpected divergences, else 3 when more than
`--max-unknown` of its cases are unknown (or a server at a URL stopped answering for good), else 4
when every divergence is one the release of `--judge-by engine` shares (records.judgement), else 0
(reference.cli).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from nats_conformance.fixtures.clients.wire import ClientAuth
from nats_conformance.fixtures.cover import COVER_DIR, STOP_GRACE, engine_counters
from nats_conformance.fixtures.engine import engine_command, engine_release
from nats_conformance.fixtures.errors import ProvisionError, TargetLostError
from nats_conformance.fixtures.options import (
    OptionError,
    RunConfig,
    build_run_config,
    client_auth,
    writable_file,
)
from nats_conformance.fixtures.provision import NATS_SERVER, report_to_stderr
from nats_conformance.fixtures.releases import ReleaseSelection, known_releases, newest_releases
from nats_conformance.fixtures.servers.streaming import NATS_NETWORK_LINE
from nats_conformance.records.casefile import CaseFile, read_case_file
from nats_conformance.records.counts import case_counts, run_counts, tally_of
from nats_conformance.records.expectations import (
    DEFAULT_PATH,
    Expectations,
    default_to_update,
    ended_entries,
    load_expectations,
    write_endings,
)
from nats_conformance.records.judgement import JUDGE_BY, judgements, run_conforms
from nats_conformance.records.owners import sole_writer
from nats_conformance.records.pairs import CHANGED, PAIRS, UNKNOWN, UNSTABLE
from nats_conformance.records.replay import LAYOUTS
from nats_conformance.records.schema import NOT_SUPPORTED, Case
from nats_conformance.records.spark import why_no_spark
from nats_conformance.records.unknowns import share_line, unknown_shares
from nats_conformance.records.writer import RecordWriter, new_run_id
from nats_conformance.reference.cli import (
    TOO_MANY_UNKNOWN,
    Parser,
    add_max_unknown,
    count,
    exit_status,
    too_many_unknown,
)
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.profiles import NEWEST, OLDEST_RULES, for_version
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.suites.bisect import add_bisect_command
from nats_conformance.suites.changes import add_changes_command
from nats_conformance.suites.coverage import add_coverage_command
from nats_conformance.suites.engine.campaign import AdapterTarget, CampaignPlan, run_campaign
from nats_conformance.suites.engine.plans import PLANS
from nats_conformance.suites.engine.scaleout import scale_out
from nats_conformance.suites.engine_check import add_engine_check_command
from nats_conformance.suites.expectations_check import add_expectations_command, update_expectations
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.junit import FamilyOutcome, write_junit_xml
from nats_conformance.suites.mutants import add_mutants_command
from nats_conformance.suites.pairing import pair_run
from nats_conformance.suites.replay import (
    REPLAY_OUTCOMES,
    replay_file_on_server,
    replay_on_adapter,
    replay_outcome,
)
from nats_conformance.suites.reproduce import describe_case, describe_divergences
from nats_conformance.suites.surface import add_surface_command, unmodelled_lines
from nats_conformance.suites.targets import Targets, gather_targets


def add_target_options(parser: argparse.ArgumentParser, *, many: bool) -> None:
    parser.add_argument(
        "--server-version",
        action="append" if many else "store",
        default=[] if many else None,
        metavar="SPEC",
        help="release (2.14.5), line (2.10), 'system' or a binary path" + ("; repeatable" if many else ""),
    )
    parser.add_argument("--backend", action="append" if many else "store", default=[] if many else None)
    parser.add_argument("--server-url", help="nats://HOST:PORT with --backend external")
    parser.add_argument("--apply-command", help="command applying {config} to the external server")
    secured = parser.add_argument_group(
        "a server at a URL with TLS or credentials (nats:// or tls://; the apply command's file has neither)"
    )
    secured.add_argument("--tls-ca", metavar="FILE", help="CA certificate to trust (PEM)")
    secured.add_argument("--tls-cert", metavar="FILE", help="client certificate (PEM), with --tls-key")
    secured.add_argument("--tls-key", metavar="FILE", help="the client certificate's key (PEM)")
    secured.add_argument("--user", help="user name, with --password (or $NATS_CONFORMANCE_PASSWORD)")
    secured.add_argument("--password", help="the user's password")
    secured.add_argument("--token", help="authentication token (or $NATS_CONFORMANCE_TOKEN)")
    secured.add_argument("--nkey", metavar="SEED_FILE", help="file holding a user nkey seed (SU...)")
    secured.add_argument("--creds", metavar="FILE", help="a user credentials file (JWT and seed)")
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="TARGET",
        help="a release (2.14.5), a server URL (nats://HOST:PORT), adapter:COMMAND or engine:RELEASE; "
        "repeatable",
    )
    parser.add_argument(
        "--profile",
        action="append" if many else "store",
        default=[] if many else None,
        metavar="RELEASE",
        help="the release whose rules apply: an adapter's (default the newest; an engine's own), or a "
        "server's (default the nearest known release at or below the version it announces)",
    )


def auth_of(arguments: argparse.Namespace) -> ClientAuth | None:
    """The TLS and credentials options of a command line (`fixtures.options.client_auth`)."""
    return client_auth(
        tls_ca=arguments.tls_ca,
        tls_cert=arguments.tls_cert,
        tls_key=arguments.tls_key,
        user=arguments.user,
        password=arguments.password,
        token=arguments.token,
        nkey=arguments.nkey,
        creds=arguments.creds,
    )


def budget_option(text: str) -> tuple[str, int]:
    """`FAMILY=N`, a registered family and a count of cases."""
    name, _, count = text.partition("=")
    if name not in FAMILIES or not count.isdigit():
        raise argparse.ArgumentTypeError(
            f"--budget takes FAMILY=N with N >= 0 and FAMILY one of {', '.join(FAMILIES)} (got {text!r})"
        )
    return name, int(count)


def against_engine(text: str) -> str:
    """`engine:RELEASE`: the release whose transform engine adapter questions are also asked of."""
    kind, _, release = text.partition(":")
    if kind != "engine" or not release:
        raise argparse.ArgumentTypeError(
            f"--against takes engine:RELEASE, such as engine:2.14.5 (got {text!r})"
        )
    return release


def judge_by(chosen: str | None, against: str | None, adapters: bool) -> str:
    """`--judge-by`: as given, else `engine` when `--against engine:RELEASE` names an engine (a third
    party following nats-server is judged by it), else `documents`. `engine` needs `--against` and an
    adapter target; anything else is a usage error."""
    if chosen == "engine" and not against:
        raise OptionError("--judge-by engine needs --against engine:RELEASE, the release to judge by")
    if chosen == "engine" and not adapters:
        raise OptionError("--judge-by engine judges adapter targets (--target adapter:COMMAND); name one")
    return chosen or ("engine" if against else "documents")


def family_option(text: str) -> str:
    """A registered family's name."""
    if text not in FAMILIES:
        raise argparse.ArgumentTypeError(f"--family takes one of {', '.join(FAMILIES)} (got {text!r})")
    return text


def campaign(
    arguments: argparse.Namespace, *, run_dir: Path | None = None, coverage_dir: Path | None = None
) -> int:
    """Run a campaign into `run_dir` (default a new run directory under `--out`); with `coverage_dir`
    its servers and engines are -cover builds writing their counters there (`suites.coverage`)."""
    if arguments.resume:
        arguments = resumed(arguments)
    if arguments.junit_xml:  # checked first: a campaign's work is not lost to a path it cannot write
        writable_file(Path(arguments.junit_xml), "--junit-xml")
    if arguments.expectations:
        expectations_path = Path(arguments.expectations)
    else:
        expectations_path = default_to_update() if arguments.update_expectations else DEFAULT_PATH
    run, adapters = campaign_targets(arguments, coverage_dir)
    plan = campaign_plan(arguments, bool(adapters))
    starting = arguments.update_expectations and not expectations_path.exists()
    expectations = Expectations() if starting else load_expectations(expectations_path)
    if arguments.master not in (None, IN_PROCESS) and (adapters or run is None or run_at_url(run)):
        raise OptionError(
            "--master runs the nats-server targets a campaign starts; adapters and servers at a URL "
            "run without it"
        )
    if run_dir is None:
        run_dir = Path(arguments.resume) if arguments.resume else Path(arguments.out) / new_run_id()
    outcomes: list[FamilyOutcome] = []
    master, shards = scheduling(arguments, run, len(adapters))
    try:
        with sole_writer(run_dir), scale_out(master, shards) as scaled:
            writer, diverged = run_campaign(
                run,
                plan,
                run_dir,
                expectations,
                adapters=adapters,
                outcomes=outcomes,
                scale_out=scaled,
                resume=bool(arguments.resume),
            )
    except TargetLostError as error:
        print(f"nats-conformance: {error}", file=sys.stderr)
        return TOO_MANY_UNKNOWN
    if arguments.junit_xml:
        write_junit_xml(Path(arguments.junit_xml), outcomes, writer.smallest.values())
    return campaign_ending(
        arguments,
        run,
        writer,
        run_dir=run_dir,
        expectations=expectations,
        expectations_path=expectations_path,
        diverged=diverged,
    )


def campaign_targets(
    arguments: argparse.Namespace, coverage_dir: Path | None
) -> tuple[RunConfig | None, list[AdapterTarget]]:
    """The server targets a campaign starts (None: adapters or engines only) and its adapter targets,
    each with the profiles it is judged by; with `coverage_dir`, -cover builds of the engines."""
    versions = [*arguments.server_version, *swept_releases(arguments.releases, arguments.since)]
    targets = gather_targets(arguments.target, versions, arguments.server_url)
    run = None
    if targets.has_servers or not (targets.adapters or targets.engines):
        if len(arguments.profile) > 1:
            raise OptionError("--profile: a server is judged by one release's rules; give it once")
        run = build_run_config(
            targets.versions,
            arguments.backend,
            targets.server_url,
            arguments.apply_command,
            profile=arguments.profile[0] if arguments.profile else None,
            default=newest_releases,
            auth=auth_of(arguments),
        )
    if run is not None and coverage_dir is not None:
        run = replace(run, coverage_dir=coverage_dir)
    chosen = [for_version(spec).name for spec in arguments.profile]
    adapters = [AdapterTarget(command, chosen or [NEWEST.name]) for command in targets.adapters]
    for text in targets.engines:
        release = engine_release(text)
        profiles = chosen or [for_version(release).name]
        if coverage_dir is None:
            adapters.append(AdapterTarget(engine_command(release), profiles))
        else:
            adapters.append(
                AdapterTarget(
                    engine_command(release, cover=True),
                    profiles,
                    environment={COVER_DIR: str(engine_counters(coverage_dir))},
                    close_grace=STOP_GRACE,
                )
            )
    return run, adapters


def campaign_plan(arguments: argparse.Namespace, has_adapters: bool) -> CampaignPlan:
    """The budgets and settings of a campaign: `--plan`'s budgets, then `--budget`, `--cases` and
    `--family`."""
    budgets = {**PLANS[arguments.plan].budgets(), **dict(arguments.budget)}
    if arguments.cases is not None:
        budgets["mapping"] = arguments.cases
    if arguments.family:
        budgets |= {name: 0 for name in FAMILIES if name not in arguments.family}
    return CampaignPlan(
        budgets=budgets,
        seed=arguments.seed,
        oracle=arguments.oracle or "",
        against=arguments.against or "",
        judge_by=judge_by(arguments.judge_by, arguments.against, has_adapters),
        strict_errors=arguments.strict_errors,
        known_cases=not arguments.no_known_cases,
        guided=not arguments.unguided,
    )


def campaign_ending(
    arguments: argparse.Namespace,
    run: RunConfig | None,
    writer: RecordWriter,
    *,
    run_dir: Path,
    expectations: Expectations,
    expectations_path: Path,
    diverged: list[Case],
) -> int:
    """What a finished campaign prints, first the news (what ended, what the reference cannot judge yet,
    the divergences), then the counts, and its exit status; with `--update-expectations`, the file
    rewritten from the run instead."""
    manifest = writer.manifest()
    ended = ended_entries(expectations.ended(), expectations_path)
    write_endings(run_dir, ended)
    for item in ended:  # first: what a release fixed is the news
        print(item.headline() + (f"\n  replay: {item.replay_line()}" if item.case else ""))
    if run is not None:  # then what a release added that the reference cannot judge yet
        releases = [spec.release for spec in run.versions if spec.release]
        for line in unmodelled_lines(dict.fromkeys(releases)):
            print(line)
    if diverged:
        print(describe_divergences(diverged))
    print(f"run directory: {run_dir}")
    print(f"{manifest['cases']} cases: " + ", ".join(f"{n} {v}" for v, n in manifest["verdicts"].items()))
    counts = run_counts(run_dir)
    tally = tally_of(counts)
    for share in unknown_shares(counts):  # each release's unknown cases, by reason
        if share.reasons:
            print(share_line(share))
    if tally[NOT_SUPPORTED]:
        print(f"{tally[NOT_SUPPORTED]} of the unknown cases are questions an adapter does not support")
    alone = expectations.by_known_case_alone()
    if expectations.known_confirmed:
        print(
            f"known cases confirmed {len(expectations.known_confirmed)} listed divergences"
            + (f"; no drawn case showed {', '.join(entry.id for entry in alone)}" if alone else "")
        )
    stale = expectations.stale()
    for entry in stale:
        shown = f"{entry.feature}:{entry.difference}"
        print(f"stale expectation: {entry.id} ({shown}) matched nothing in this run")
    if arguments.update_expectations:
        update_expectations(expectations_path, expectations, writer.smallest.values(), run_dir.name)
        return 0
    unknown = too_many_unknown(tally, arguments.max_unknown)
    if unknown:
        print(unknown)
    for judgement in judgements(manifest):
        print("\n".join(judgement.lines()))
    if run is not None and writer.status == "completed":
        paired_lines(
            run_dir, expectations, [None, *([Path(arguments.pair_with)] if arguments.pair_with else [])]
        )
    conforms = run_conforms(manifest)
    return exit_status(
        diverged=bool((manifest["verdicts"]["diverge"] and not conforms) or (arguments.strict and stale)),
        unknown=unknown,
        conforms=conforms,
    )


SHOWN_CHANGES = 10
"""The paired changes a campaign prints; the report lists every one."""


def paired_lines(run_dir: Path, expectations: Expectations, comparisons: Sequence[Path | None]) -> None:
    """Pair the run in each comparison (None: between its releases; else with a baseline file or
    previous run, `suites.pairing`); print a count of each outcome and the first confirmed changes."""
    for compared in comparisons:
        started = time.monotonic()
        pairs = pair_run(run_dir, expectations, against=compared)
        changed = [pair for pair in pairs if pair.outcome == CHANGED]
        where = "between its releases" if compared is None else f"with {compared}"
        print(
            f"paired {where}: {len(pairs)} one-sided classes replayed in {time.monotonic() - started:.1f} s, "
            f"{len(changed)} changed, {sum(pair.outcome == UNSTABLE for pair in pairs)} unstable (not "
            f"claimed), {sum(pair.outcome == UNKNOWN for pair in pairs)} unknown"
        )
        for pair in changed[:SHOWN_CHANGES]:
            print(f"changed: {pair.text()}\n  replay: {pair.replay_line(run_dir)}")
        if len(changed) > SHOWN_CHANGES:
            print(f"... {len(changed) - SHOWN_CHANGES} more changes in the report (and {run_dir / PAIRS})")


def pair(arguments: argparse.Namespace) -> int:
    """`pair RUN_DIR [--with PATH]`: the paired replays of a finished run (exit 0, or 2)."""
    run_dir = Path(arguments.run_dir)
    if not (run_dir / "cases").is_dir():
        raise OptionError(f"pair: {run_dir} is not a run directory (no cases/)")
    if arguments.against and not Path(arguments.against).exists():
        raise OptionError(f"pair: --with {arguments.against} does not exist")
    expectations = load_expectations(Path(arguments.expectations or DEFAULT_PATH))
    paired_lines(run_dir, expectations, [Path(arguments.against) if arguments.against else None])
    return 0


def resumed(arguments: argparse.Namespace) -> argparse.Namespace:
    """The arguments of the interrupted scaled-out campaign in `--resume DIR` (its manifest's settings:
    the same releases, backends, budgets, seed and Spark master unless `--master` names another), with
    this command's output options."""
    manifest_path = Path(arguments.resume) / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
        settings = manifest["settings"]
        plan, spread = settings["plan"], settings.get("scale_out")
        versions, backends = settings["versions"], settings["backends"]
    except FileNotFoundError:
        raise OptionError(f"--resume: {manifest_path} does not exist; name a run directory") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise OptionError(f"--resume: {manifest_path} is not a campaign's manifest ({error})") from None
    if manifest.get("status") == "completed":
        raise OptionError(f"--resume: {arguments.resume} completed; there is nothing to resume")
    if not spread:
        raise OptionError(
            "--resume continues a campaign that ran as Spark tasks (several releases, a sweep, --master); "
            "this one ran in one process"
        )
    chosen = [
        arguments.server_version,
        arguments.target,
        arguments.releases,
        arguments.budget,
        arguments.family,
    ]
    if any(chosen) or arguments.since or arguments.cases is not None:
        raise OptionError("--resume takes the targets and budgets of the run it resumes; drop the others")
    return argparse.Namespace(
        **{
            **vars(arguments),
            "server_version": list(versions),
            "backend": list(backends),
            "budget": list(plan["budgets"].items()),
            "seed": plan["seed"],
            "oracle": plan["oracle"] or None,
            "against": plan["against"] or None,
            "judge_by": plan.get("judge_by"),
            "strict_errors": plan["strict_errors"],
            "no_known_cases": not plan["known_cases"],
            "unguided": not plan.get("guided", True),
            "master": arguments.master or spread["master"],
            "shards": spread["shards"],
        }
    )


IN_PROCESS = "none"
"""`--master none`: a campaign of several releases runs in this process, one release after the other."""


def scheduling(
    arguments: argparse.Namespace, run: RunConfig | None, adapters: int
) -> tuple[str | None, int | None]:
    """The Spark master and shards of a campaign: as given (`--master`, or the resumed run's); else a
    campaign of several nats-server targets started here (a sweep, `--releases` or `--since`, or several
    releases or backends, the default targets among them) runs as Spark tasks, one per target and family,
    on `local[*]`, so that a machine's cores run families of different targets at once. It runs in one
    process with `--master none`, with adapters or a server at a URL among the targets, with a line
    saying why where Spark cannot start, and on one core, where tasks would only add Spark's start,
    unless it is a sweep (whose tasks `--resume` continues)."""
    sweep = bool(arguments.releases or arguments.since)
    shards = 1 if arguments.shards is None and sweep and not arguments.resume else arguments.shards
    if arguments.master == IN_PROCESS:
        if arguments.resume:
            raise OptionError("--resume runs the rest of a run's Spark tasks: drop --master none")
        return None, arguments.shards
    if arguments.resume or arguments.master:
        return arguments.master, shards
    several = run is not None and len(run.targets) > 1 and (os.cpu_count() or 1) > 1
    if run is None or adapters or run_at_url(run) or not (sweep or several):
        return None, arguments.shards
    missing = why_no_spark()
    if missing:
        report_to_stderr(
            f"campaign: the targets run one after the other ({missing}; with Spark they run side by side)"
        )
        return None, None
    return "local[*]", 1 if arguments.shards is None else arguments.shards


def run_at_url(run: RunConfig | None) -> bool:
    """Whether a target of `run` is a server at a URL (which a task cannot reach as its own)."""
    return run is not None and any(target.backend == "external" for target in run.targets)


def swept_releases(lines: list[str], since: str | None) -> list[str]:
    """`--releases`/`--since`: every stable nats-server release they select, oldest first, from the oldest
    release the reference has rules for (2.2.0) on; a release newer than every rule set is run too, and
    judged by the nearest rules (`judging_profile` says so)."""
    if not lines and since is None:
        return []
    selection = ReleaseSelection.parse(lines, since)
    known = known_releases(NATS_SERVER, progress=report_to_stderr)
    found = [v for v in known.releases if selection.wants(v) and v >= OLDEST_RULES]
    if not found:
        raise ProvisionError("--releases/--since select no release the Go module proxy serves")
    report_to_stderr(f"sweep: {len(found)} releases, {found[0]} to {found[-1]} ({known.describe()})")
    return [str(version) for version in found]


def replay(arguments: argparse.Namespace) -> int:
    targets = gather_targets(
        arguments.target, [arguments.server_version] if arguments.server_version else [], arguments.server_url
    )
    if arguments.file and Path(arguments.file).is_dir():
        return replay_folder(Path(arguments.file), arguments, targets)
    if arguments.file or targets.adapters:
        return replay_question(arguments, targets)
    versions = [arguments.server_version] if arguments.server_version else []
    run = replay_config(arguments, versions, arguments.server_url)
    cases = replay_file_on_server(_question(arguments), run, layout=arguments.layout)
    return _show(cases, arguments.max_unknown)


def _show(cases: list[Case], max_unknown: float) -> int:
    """Print each replayed case; the exit status is a campaign's (README, "Exit statuses"): 1 when one
    diverges, else 3 when more than `max_unknown` of them are unknown, else 0."""
    for case in cases:
        print(describe_case(case))
    tally = tally_of(case_counts(cases))
    unknown = too_many_unknown(tally, max_unknown)
    if unknown:
        print(unknown)
    return exit_status(diverged=bool(tally["diverge"]), unknown=unknown)


def _question(arguments: argparse.Namespace) -> CaseFile:
    """The case a replay command line spells (without a case file)."""
    return CaseFile(
        feature=arguments.feature,
        source=arguments.source,
        destination=arguments.destination,
        subject=arguments.subject,
        server_version=arguments.profile or "",
        functions=arguments.functions,
        partitions=arguments.partitions,
        stream_subjects=tuple(s for s in arguments.stream_subjects.split(",") if s),
        headers_only=arguments.headers_only,
        steps=steps_option(arguments.steps),
        weights=weights_option(arguments.weights),
    )


def steps_option(text: str) -> tuple[str, ...]:
    """`--steps`: a JSON array of a case's steps (as its replay command writes them)."""
    if not text:
        return ()
    try:
        steps = json.loads(text)
    except ValueError as error:
        raise OptionError(f"--steps takes a JSON array of strings: {error}") from error
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise OptionError("--steps takes a JSON array of strings")
    return tuple(steps)


def weights_option(text: str) -> tuple[WeightedDestination, ...]:
    """`--weights`: a JSON array of a weighted list's entries, `{"destination": D, "weight": W}` with an
    optional `"cluster"` (as its replay command writes them); weights are not checked here, since a
    replay may ask a list the server must refuse."""
    if not text:
        return ()
    usage = '--weights takes a JSON array of {"destination": TEXT, "weight": INTEGER, "cluster": TEXT}'
    try:
        items = json.loads(text)
    except ValueError as error:
        raise OptionError(f"{usage}: {error}") from error
    entries = []
    for item in items if isinstance(items, list) else [None]:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("destination"), str)
            and type(item.get("weight")) is int
            and isinstance(item.get("cluster", ""), str)
            and set(item) <= {"destination", "weight", "cluster"}
        ):
            raise OptionError(f"{usage} (got {json.dumps(item)})")
        entries.append(WeightedDestination(item["destination"], item["weight"], item.get("cluster") or None))
    return tuple(entries)


def add_strict_errors(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--strict-errors",
        action="store_true",
        help="an adapter's rejection agrees only when it names the reference's error kind "
        "(after the error_kinds of its hello)",
    )


def replay_config(arguments: argparse.Namespace, versions: list[str], server_url: str | None) -> RunConfig:
    """The servers a replay runs on: `versions` (or the server at `server_url`) on `--backend`."""
    backends = [arguments.backend] if arguments.backend else []
    return build_run_config(
        versions,
        backends,
        server_url,
        arguments.apply_command,
        profile=arguments.profile,
        auth=auth_of(arguments),
    )


def replay_question(arguments: argparse.Namespace, targets: Targets) -> int:
    """A case file (or the question on the command line) on every target named."""
    case = read_case_file(Path(arguments.file)) if arguments.file else _question(arguments)
    return _show(replay_case(case, arguments, targets), arguments.max_unknown)


def replay_folder(folder: Path, arguments: argparse.Namespace, targets: Targets) -> int:
    """Every case file of a divergences folder (or of a run directory's), run again: one line each,
    fixed, still failing (with the case) or unknown (with why), then a summary. Exit status 1 when a
    case still fails, else 3 when one is unknown, else 0."""
    files = sorted((folder / "divergences" if (folder / "divergences").is_dir() else folder).glob("*.json"))
    if not files:
        raise OptionError(f"replay: {folder} holds no case files (*.json)")
    expectations = load_expectations(Path(arguments.expectations or DEFAULT_PATH))
    outcomes: Counter[str] = Counter()
    for path in files:
        try:
            cases = replay_case(read_case_file(path), arguments, targets, expectations)
            outcome, why = replay_outcome(cases), ""
        except ConformanceError as error:
            cases, outcome, why = [], "unknown", f": {error}"
        outcomes[outcome] += 1
        print(f"{outcome}: {path.name}{why}", flush=True)
        for case in cases:
            if case.verdict == "diverge":
                print(describe_case(case))
    summary = f"{len(files)} case files: " + ", ".join(f"{outcomes[o]} {o}" for o in REPLAY_OUTCOMES)
    print(summary)
    return exit_status(
        diverged=bool(outcomes["still failing"]), unknown=summary if outcomes["unknown"] else None
    )


def replay_case(
    case: CaseFile, arguments: argparse.Namespace, targets: Targets, expectations: Expectations | None = None
) -> list[Case]:
    """One case on every target named (default: where it was found)."""
    if arguments.profile:
        case = replace(case, server_version=for_version(arguments.profile).name)
    cases = []
    for command in targets.adapters:
        cases += replay_on_adapter(case, command, strict_errors=arguments.strict_errors)
    versions = list(targets.versions)
    if not versions and not targets.adapters and not targets.server_url:
        if case.found_on.get("backend") == "adapter":
            raise OptionError("this case was found on an adapter: name one with --target adapter:COMMAND")
        versions = [
            NATS_NETWORK_LINE
            if case.feature == "streaming"
            else case.found_on.get("server_version") or case.server_version
        ]
    if versions or targets.server_url:
        run = replay_config(arguments, versions, targets.server_url)
        cases += replay_file_on_server(case, run, layout=arguments.layout, expectations=expectations)
    return cases


def add_campaign_options(run: argparse.ArgumentParser) -> None:
    """The options of a campaign (also those of `coverage`, which runs one), in the groups `--help` shows:
    the targets, what runs on them, how it is judged, and where the run goes."""
    add_target_options(run, many=True)
    _add_selection(run.add_argument_group("what runs"))
    _add_judging(run.add_argument_group("judging"))
    _add_output(run.add_argument_group("where the run goes and how it is scheduled"))


def _add_selection(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--budget",
        action="append",
        default=[],
        type=budget_option,
        metavar="FAMILY=N",
        help="cases of a family per target; 0 skips it; repeatable (families and defaults: "
        + ", ".join(f"{name}={family.description.budget}" for name, family in FAMILIES.items())
        + ")",
    )
    group.add_argument(
        "--plan",
        choices=tuple(PLANS),
        default="default",
        help="budgets of every family: "
        + "; ".join(f"{plan.name}, {plan.purpose}" for plan in PLANS.values())
        + " (default: default)",
    )
    group.add_argument(
        "--family",
        action="append",
        default=[],
        type=family_option,
        metavar="FAMILY",
        help="run only this family (repeatable; default every family)",
    )
    group.add_argument(
        "--cases", type=count, default=None, help="the mapping family's budget (and an adapter's questions)"
    )
    group.add_argument(
        "--releases",
        action="append",
        default=[],
        metavar="all|LINE",
        help="sweep every stable release the Go module proxy serves, or those of a line (2.9); repeatable",
    )
    group.add_argument(
        "--since", metavar="VERSION", help="sweep every stable release from VERSION (2.2.0) on"
    )
    group.add_argument("--seed", type=int, default=0)


def _add_judging(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--oracle",
        choices=("engine",),
        help="also ask the transform engine of each server's release every mapping and validation case, "
        "and record which of reference, server and engine agree (the report's three-way section)",
    )
    group.add_argument(
        "--against",
        metavar="engine:RELEASE",
        type=against_engine,
        help="also ask the transform engine of RELEASE every question put to an adapter target, and record "
        "which of reference, adapter and engine agree",
    )
    group.add_argument(
        "--judge-by",
        choices=JUDGE_BY,
        help="engine: an adapter whose every divergence the engine of --against shares (both differ from "
        "the documents) conforms to nats-server RELEASE, exit 4, the classes listed as where the release "
        "and the documents differ; documents: every divergence counts, exit 1 (default engine with "
        "--against, as a third party following nats-server is judged by the release it follows; else "
        "documents)",
    )
    group.add_argument(
        "--expectations", help="known divergences of the targets (default the checkout's expectations.toml)"
    )
    group.add_argument(
        "--update-expectations",
        action="store_true",
        help="rewrite the expectations file from this run: add its divergences, close the range of an "
        "entry it shows ended; never removes an entry",
    )
    group.add_argument(
        "--strict", action="store_true", help="fail when a listed divergence no longer happens (stale)"
    )
    group.add_argument(
        "--pair-with",
        metavar="PATH",
        help="a baseline file or previous run directory: each divergence class it shows and this run does "
        "not (or the reverse) is run again on the other side, so that `gate` claims only paired changes "
        "(between the run's own releases they always are)",
    )
    group.add_argument(
        "--no-known-cases",
        action="store_true",
        help="do not run the expectations' known cases first: every unit is drawn (what the generators "
        "find on their own)",
    )
    group.add_argument(
        "--unguided",
        action="store_true",
        help="draw an adapter's questions as for any adapter even when it answers coverage (a -cover "
        "engine under `coverage`): the baseline of coverage-guided drawing",
    )
    add_strict_errors(group)
    add_max_unknown(group)


def _add_output(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--out", default="runs", help="parent of the run directory (default runs)")
    group.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue an interrupted campaign that ran as Spark tasks (several releases, a sweep, "
        "--master) in its run directory: its completed tasks are kept, the others run again",
    )
    group.add_argument(
        "--master",
        metavar="URL",
        help="run each (target, family, shard) as a task on this Spark master (spark://HOST:PORT, local[N], "
        "yarn, k8s://URL); --out must be a path every executor sees; a campaign of several releases started "
        "here (a sweep, --releases, --since, the default targets) runs on local[*] unless this names "
        "another; none: in this process",
    )
    group.add_argument(
        "--shards",
        type=count,
        metavar="N",
        help="with --master: tasks per family and target, each its share of the budget (default the "
        "cluster's default parallelism; 1 on local[*] for several releases and in a sweep)",
    )
    group.add_argument(
        "--junit-xml",
        metavar="PATH",
        help="also write JUnit XML: a testcase per divergence class and per family x target",
    )


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register campaign, replay, pair, coverage, bisect, engine-check, expectations, surface and changes
    (here and in `nats-conformance`)."""
    run = commands.add_parser(
        "campaign",
        help="run many generated cases and record them",
        description="Exit status: 0 every case agrees or is expected, 1 unexpected divergences, 2 usage or "
        "setup error, 3 more unknown cases than --max-unknown, 4 conforms to nats-server RELEASE (with "
        "--judge-by engine: every divergence of the adapters is one the engine of --against shares).",
    )
    add_campaign_options(run)
    run.set_defaults(handler=campaign)
    _add_replay_command(commands)
    _add_pair_command(commands)
    add_coverage_command(commands, options=add_campaign_options, run=campaign)
    add_mutants_command(commands)
    add_bisect_command(commands)
    add_engine_check_command(commands)
    add_expectations_command(commands)
    add_surface_command(commands)
    add_changes_command(commands, options=add_campaign_options, run=campaign)


def _add_replay_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """`replay`: one case again, from a case file or from its columns as options."""
    again = commands.add_parser(
        "replay",
        help="run one case again and compare with the reference",
        description="Exit status: 0 every replayed case agrees, 1 one diverges (for a folder: a case "
        "still fails), 2 usage or setup error, 3 more unknown cases than --max-unknown.",
    )
    again.add_argument(
        "file",
        nargs="?",
        help="a case file (a run's divergences/*.json), or a folder of them (a run's divergences/): "
        "each fixed, still failing or unknown",
    )
    again.add_argument(
        "--expectations",
        help="for a folder: known divergences, replayed as expected (default expectations.toml)",
    )
    add_target_options(again, many=False)
    add_strict_errors(again)
    again.add_argument("--functions", default="", help="an adapter case's functions column")
    again.add_argument("--feature", default="mapping")
    again.add_argument("--source", default="")
    again.add_argument("--destination", default="", help="mapping destination (not for streaming)")
    again.add_argument(
        "--partitions", type=count, default=0, help="the case's partitions (an adapter partition-op case's n)"
    )
    again.add_argument("--subject", default="")
    again.add_argument(
        "--stream-subjects", default="", help="republish: the stream's subjects, comma-separated"
    )
    again.add_argument("--headers-only", action="store_true", help="republish: the option's headers_only")
    again.add_argument(
        "--steps", default="", help="the case's steps, a JSON array (republish scenarios, overlap sequences)"
    )
    again.add_argument(
        "--weights",
        default="",
        help='a weighted case\'s list, a JSON array of {"destination": D, "weight": W, "cluster": C}',
    )
    again.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="",
        help="the servers' layout the case was found in: operator (its mappings pushed in an account "
        "JWT) or cluster (published to one server of a cluster, observed on another)",
    )
    again.add_argument(
        "--operator",
        dest="layout",
        action="store_const",
        const="operator",
        help="the same as --layout operator (the name earlier replay lines used)",
    )
    add_max_unknown(again)
    again.set_defaults(handler=replay)


def _add_pair_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """`pair`: the one-sided divergence classes of a run replayed on the other side."""
    paired = commands.add_parser(
        "pair",
        help="replay one-sided divergence classes on the other side of a comparison",
        description="Each divergence class a run shows on one release and not on the next (or, with "
        "--with, not on the baseline's or previous run's release of its line, and the reverse) is run "
        "again on the other side; the report's changes and the gate claim only pairs whose outcome "
        "differs. Exit status: 0 paired, 2 usage or setup error.",
    )
    paired.add_argument("run_dir", metavar="RUN_DIR", help="a finished run directory")
    paired.add_argument("--with", dest="against", metavar="PATH", help="a baseline file or previous run")
    paired.add_argument("--expectations", help="known divergences (default the checkout's expectations.toml)")
    paired.set_defaults(handler=pair)


def build_parser() -> Parser:
    """The parser of `python -m nats_conformance.suites` (run by its `__main__`)."""
    parser = Parser(prog="python -m nats_conformance.suites", description=__doc__.splitlines()[0])
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser
