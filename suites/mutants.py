"""`nats-conformance mutants --target R [--plan P] [--json FILE]`: how many wrong servers a campaign
tells apart from the right one (mutation analysis of nats-server's own mapping code).

Release R's mutant schemata build (`fixtures.mutants`: every mutant in one binary, the active one named
by `MUTANT_ENV`) runs the campaign once as the original (the variable unset) and once per mutant, with
the same plan and seed. A mutant is **killed** when

- its server does not start (`at start`);
- the two runs, compared by paired evidence (`suites.pairing`: each divergence class one run shows and
  the other does not is replayed, its smallest case, on the other side, and run once more on its own),
  show a pair whose outcome `changed` (`by pair`: the family and case are recorded, and the pair's case
  file is kept in the mutant's run directory);
- its servers crashed more often than the original's did (`by crash`: the family of the first);
- its campaign gives no verdict within the limit (`by timeout`: `--timeout`, `limit_of`, `Judge`);

else it **survived**, unless the equivalence file (`mutants-equivalent.toml`, `EQUIVALENT_PATH`) lists it
with the reason no behaviour can tell it from the original (`equivalent`). Each mutant's run is one task
of the Spark session the sweep uses (`--master URL`; without it, one after the other in this process).

The anchor is nats-server's own tests of the mapping code (`suites.mutant_anchor`), run once as the
original and once per mutant, each mutant with the tests that reach its line.

Exit status 0; 2 with one `nats-conformance: error:` line for a bad target, option or equivalence file,
or a build that fails.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import math
import os
import pickle
import random
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from select import select as wait_readable
from typing import Any, Final

from nats_conformance.fixtures.config import ServerConfig
from nats_conformance.fixtures.errors import ConfigRejectedError, ServerError, ServerStartError
from nats_conformance.fixtures.mutants import Schemata, resolve_anchor, resolve_schemata
from nats_conformance.fixtures.options import (
    MUTANT_ENV,
    MutantServer,
    OptionError,
    RunConfig,
    build_run_config,
)
from nats_conformance.fixtures.provision import parse_version_spec, report_to_stderr
from nats_conformance.fixtures.servers import ProcessBackend, started
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.errors import read_document
from nats_conformance.records.expectations import DEFAULT_PATH, Expectations, load_expectations
from nats_conformance.records.mutants import (
    EQUIVALENT,
    FORMAT,
    KILLED,
    MUTANTS_FILE,
    SURVIVED,
    UNREACHED,
    VERSION,
    Mutant,
    MutantsRun,
)
from nats_conformance.records.pairs import CHANGED, Pair, write_pairs
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import new_run_id
from nats_conformance.reference.cli import Parser
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.suites.engine.campaign import CampaignPlan, run_campaign
from nats_conformance.suites.engine.plans import PLANS
from nats_conformance.suites.engine.scaleout import _output_to, scale_out
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.mutant_anchor import (
    ANCHOR_TIMEOUT,
    anchor_limit,
    anchor_tests,
    anchor_verdict,
    measure_anchor_reach,
    run_tests,
)
from nats_conformance.suites.mutant_reach import families_of, family_plan, measure_reach
from nats_conformance.suites.pairing import Side, intermittent, one_sided, replay_all, run_side
from nats_conformance.suites.replay import replay_file_on_server

EQUIVALENT_PATH: Final = (Path(__file__).parent.parent / "records" / "mutants-equivalent.toml").resolve()
"""The shipped equivalence file: the repository root's in a checkout, the package's when installed."""
LEFT_OUT: Final = ("streaming", "library")
"""Families a mutant run leaves out: NATS Streaming runs its own server, and the library family asks
adapters; neither runs the mapping code of the schemata build."""
START_TIMEOUT: Final = 5.0
"""Seconds a mutant's server may take to start with a default configuration."""
LIMIT_FACTOR: Final = 10
LIMIT_FLOOR: Final = 120.0
"""A mutant's campaign may take `LIMIT_FACTOR` times the original's, at least `LIMIT_FLOOR` seconds
(`--timeout` sets it): mutant 868 of 2.14.10 took 80 s under the quick plan (its servers crashed, and
its pairs were replayed), the original 19 s."""
STOP_GRACE: Final = 20.0
"""Seconds a mutant's run has to stop after SIGTERM (its servers stopped, its run closed) before its
process group is killed."""
ORIGINAL, MUTATED = "original", "mutant"
"""The sides of a mutant's paired comparison."""


@dataclass(frozen=True, slots=True)
class Equivalent:
    """A mutant no behaviour can tell from the original, by what it changes (ids change with the tool)."""

    file: str
    function: str
    operator: str
    original: str
    mutated: str
    reason: str
    line: int | None = None
    """The line, where the same change elsewhere in the function is not equivalent (lines move between
    releases: an entry that no longer matches leaves its mutant counted, never one wrongly covered)."""

    def covers(self, mutant: Mutant) -> bool:
        return (mutant.file, mutant.function, mutant.operator, mutant.original, mutant.mutated) == (
            self.file,
            self.function,
            self.operator,
            self.original,
            self.mutated,
        ) and self.line in (None, mutant.line)


def load_equivalents(path: Path) -> tuple[Equivalent, ...]:
    """The entries of an equivalence file (`[[equivalent]]` tables, each with its `reason`).

    Raises:
        OptionError: the file cannot be read, or an entry lacks a field or its reason.
    """
    try:
        document = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise OptionError(f"--equivalent {path}: {error}") from error
    entries = []
    names = set(Equivalent.__dataclass_fields__) - {"line"}
    for number, entry in enumerate(document.get("equivalent", []), 1):
        if (
            not isinstance(entry, dict)
            or set(entry) - {"line"} != names
            or not all(isinstance(v, str) for k, v in entry.items() if k != "line")
            or not isinstance(entry.get("line", 0), int)
        ):
            raise OptionError(
                f"--equivalent {path}: entry {number} must have exactly {', '.join(sorted(names))}, "
                "and may have a line (a number)"
            )
        if not entry["reason"].strip():
            raise OptionError(f"--equivalent {path}: entry {number} gives no reason")
        entries.append(Equivalent(**entry))
    return tuple(entries)


@dataclass(slots=True)
class Outcome:
    """How one mutant fared: `status` (killed, survived, unreached, equivalent), how the campaign killed
    it (`at start`, `by pair`, `by crash`, `by timeout`), the family and case that did, the replay of that
    case, the families that ran (those that reach it, up to the one that killed it), and the anchor's
    status and the test that killed it there."""

    id: int
    status: str = SURVIVED
    how: str = ""
    family: str = ""
    families: list[str] = field(default_factory=list)
    case: str = ""
    replay: str = ""
    seconds: float = 0.0
    anchor: str = ""
    anchor_test: str = ""
    error: str = ""
    plan: str = ""
    """The plan whose run decided the campaign's status (`--then`: the second plan for the mutants it ran)."""


@dataclass(frozen=True, slots=True)
class Original:
    """One family's run on the original: its run directory, why its servers restarted, its seconds."""

    family: str
    run: Path
    crashes: frozenset[str]
    seconds: float


@dataclass(frozen=True, slots=True)
class Context:
    """What every mutant's task needs (sent to Spark's workers)."""

    release: str
    binary: Path
    plan: CampaignPlan
    folder: Path
    expectations: Path
    originals: tuple[Original, ...] = ()
    """Each family's run on the original, cheapest first: the order a mutant's families run in."""
    reaching: Mapping[int, tuple[str, ...]] | None = None
    """The families that reach each mutant (`suites.mutant_reach`); None: every family reaches all."""
    anchor: Path | None = None
    anchor_tests: tuple[str, ...] = ()
    anchor_reaching: Mapping[int, tuple[str, ...]] | None = None
    """The anchor's tests that reach each mutant (`suites.mutant_anchor`); None: every test reaches all."""
    anchor_limit: float = ANCHOR_TIMEOUT
    """Seconds the anchor's tests may take on a mutant (`mutant_anchor.anchor_limit`)."""
    limit: float | None = None
    """Seconds a mutant's campaign and pairing may take (`limit_of`); None: no limit, in this process."""


def mutant_run(context: Context, mutant: int) -> RunConfig:
    """The release's run config with the schemata build running `mutant` (0: the original)."""
    run = build_run_config([context.release], ["process"], None, None)
    return replace(run, mutant=MutantServer(context.binary, mutant))


def starts(binary: Path, mutant: int) -> str:
    """'' when the build running `mutant` starts with a default configuration and answers (on 127.0.0.1,
    a port of its own), else why not (the last line it printed)."""
    try:
        server = ProcessBackend(binary, environment={MUTANT_ENV: str(mutant)}, start_timeout=START_TIMEOUT)
        started(server, ServerConfig()).cleanup()
    except ServerError as error:
        return str(error).splitlines()[0][:200]
    return ""


def campaign(context: Context, mutant: int, run_dir: Path, family: str) -> dict[str, Any]:
    """The plan's `family` on the build running `mutant` into `run_dir`; its manifest."""
    writer, _ = run_campaign(
        mutant_run(context, mutant),
        family_plan(context.plan, family),
        run_dir,
        load_expectations(context.expectations),
    )
    return writer.manifest()


def originals(context: Context) -> tuple[Original, ...]:
    """Each family of the plan run on the original (into `<folder>/runs/original/<family>`), the
    cheapest first."""
    found = []
    for family in families_of(context.plan):
        started = time.monotonic()
        run_dir = context.folder / "runs" / "original" / family
        crashes = reasons(campaign(context, 0, run_dir, family).get("restarts", []))
        seconds = time.monotonic() - started
        found.append(Original(family, run_dir, crashes, round(seconds, 2)))
    return tuple(sorted(found, key=lambda original: original.seconds))


def relabelled(side: Side, label: str) -> Side:
    """One run's side under one label (both runs announce the same release)."""
    features = frozenset(feature for judged in side.features.values() for feature in judged)
    cases = {key: case for found in side.cases.values() for key, case in found.items()}
    return Side({label: features}, {label: cases})


def paired(context: Context, mutant: int, run_dir: Path, original_run: Path) -> list[Pair]:
    """The one-sided classes of the original's run and the mutant's, each replayed on the other side
    (`suites.pairing.replay_all`); the pairs are written into the mutant's run directory."""
    original = relabelled(run_side(original_run), ORIGINAL)
    mutated = relabelled(run_side(run_dir), MUTATED)
    expectations = load_expectations(context.expectations)
    planned = [
        *one_sided(mutated, original, MUTATED, ORIGINAL),
        *one_sided(original, mutated, ORIGINAL, MUTATED),
    ]
    claimable = [
        item for item in planned if not intermittent(replace(item, seen_on=context.release), expectations)
    ]
    runs = {ORIGINAL: mutant_run(context, 0), MUTATED: mutant_run(context, mutant)}

    def replay(case: CaseFile, side: str, known: Expectations) -> list[Case]:
        return replay_file_on_server(case, runs[side], expectations=known)

    label = f"mutant {mutant}"
    pairs, files = replay_all(claimable, label, expectations, replay=replay)
    write_pairs(run_dir, label, pairs, files)
    return pairs


def campaign_verdict(context: Context, mutant: int, outcome: Outcome) -> None:
    """The campaign's verdict on one mutant into `outcome`: killed at start, or by pair or by crash in
    the first of the families that reach it that tells it apart; unreached when none reaches it; else
    left as survived."""
    why = starts(context.binary, mutant)
    if why:
        outcome.status, outcome.how, outcome.case = KILLED, "at start", why
        return
    reaching = None if context.reaching is None else context.reaching.get(mutant)
    families = [o for o in context.originals if reaching is None or o.family in reaching]
    if not families:
        outcome.status = UNREACHED
        return
    for original in families:
        outcome.families.append(original.family)
        run_dir = context.folder / "runs" / f"m{mutant:05d}" / original.family
        try:
            manifest = campaign(context, mutant, run_dir, original.family)
            changed = [p for p in paired(context, mutant, run_dir, original.run) if p.outcome == CHANGED]
        except (ConfigRejectedError, ServerStartError) as error:  # what the original took, and started with
            outcome.status, outcome.how, outcome.case = KILLED, "at start", str(error).splitlines()[0][:200]
            return
        except ServerError as error:  # a server lost where the original's run and pairs lost none
            outcome.status, outcome.how, outcome.family = KILLED, "by crash", original.family
            outcome.case = str(error).splitlines()[0][:200]
            return
        restarts = manifest.get("restarts", [])
        if changed:
            first = changed[0]
            outcome.status, outcome.how, outcome.family = KILLED, "by pair", first.feature
            outcome.case, outcome.replay = first.text(), first.replay_line(run_dir)
            return
        crash = new_crash(context, mutant, run_dir, original, restarts)
        if crash:
            outcome.status, outcome.how, outcome.family, outcome.case = (
                KILLED,
                "by crash",
                original.family,
                crash,
            )
            return


def reasons(restarts: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """Why a run's servers restarted: the reasons of a manifest's `restarts`."""
    return frozenset(str(restart.get("reason", "")) for restart in restarts)


def new_crash(
    context: Context, mutant: int, run_dir: Path, original: Original, restarts: Sequence[Mapping[str, Any]]
) -> str:
    """A crash of the mutant's run of a family (into `run_dir`, restarting its servers after `restarts`)
    that the original does not show, or ''. Only a reason the original's runs never give counts: the
    number of restarts after the same panic varies from run to run with the same seed (2.14.10's import
    family restarted its server 3 times in one run and 4 in another), so a count is no evidence. A new
    reason is confirmed: the original runs once more and must not give it, then the mutant once more and
    must give it again."""

    def again(side: int, name: str) -> frozenset[str]:
        run = campaign(context, side, run_dir.with_name(f"{run_dir.name}.{name}"), original.family)
        return reasons(run.get("restarts", []))

    new = reasons(restarts) - original.crashes
    if new:
        new -= again(0, "original-again")
    if new:
        new &= again(mutant, "again")
    return min(new, default="")


class Judge:
    """A process of its own (`python -m nats_conformance.suites.mutants CONTEXT FD`, in a process group
    of its own with its servers) that gives `campaign_verdict` of one mutant after another: it reads
    ``ID<TAB>LOG`` lines, writes each outcome as a JSON line to the pipe `FD`. One process serves many
    mutants (importing the suite takes seconds); a mutant with no verdict within the context's limit is
    killed `by timeout`, and the process stopped (SIGTERM, after `STOP_GRACE` SIGKILL to the group) and
    started anew for the next."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.process: subprocess.Popen[bytes] | None = None
        self.answers: int = -1
        self.given = context.folder / "start" / f"context-{os.getpid()}.pickle"

    def start(self) -> subprocess.Popen[bytes]:
        self.given.parent.mkdir(parents=True, exist_ok=True)
        self.given.write_bytes(pickle.dumps(self.context))
        self.answers, write = os.pipe()
        argv = [sys.executable, "-m", __name__, str(self.given), str(write)]
        try:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, pass_fds=(write,), start_new_session=True
            )
        finally:
            os.close(write)
        return self.process

    def verdict(self, mutant: int, log: Path) -> Outcome:
        """The outcome of `mutant` (its run's output appended to `log`)."""
        limit = self.context.limit or math.inf
        if self.process is not None and self.process.poll() is not None:
            self.stop()  # it ended between two mutants: its pipe is closed and a new one started
        process = self.process or self.start()
        assert process.stdin is not None
        try:
            process.stdin.write(f"{mutant}\t{log}\n".encode())
            process.stdin.flush()
            line = read_line(self.answers, time.monotonic() + limit)
        except BaseException:
            self.stop()
            raise
        if line is None:
            self.stop()
            return Outcome(mutant, KILLED, "by timeout", case=f"no verdict within {limit:.0f}s")
        if not line:
            self.stop()
            return Outcome(mutant, error=f"the mutant's run ended with status {process.returncode}")
        return Outcome(**json.loads(line))

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None
        if self.answers >= 0:
            os.close(self.answers)
            self.answers = -1
        self.given.unlink(missing_ok=True)


JUDGES: dict[Path, Judge] = {}
"""This process's judge of each run folder (a Spark worker's Python runs one task after another)."""


def judge_of(context: Context) -> Judge:
    judge = JUDGES.get(context.folder)
    if judge is None or judge.context != context:
        if judge is not None:
            judge.stop()
        judge = JUDGES[context.folder] = Judge(context)
    return judge


@atexit.register
def stop_judges() -> None:
    """Stop every judge of this process (the end of a run, or of a Spark worker)."""
    for judge in JUDGES.values():
        judge.stop()
    JUDGES.clear()


def read_line(fd: int, deadline: float) -> str | None:
    """One line from `fd` by `deadline`: None when it passed, '' when the pipe closed first."""
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not wait_readable([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return ""
        data += chunk
    return data.decode()


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to `process`'s group (a campaign stops its servers and closes its run on it), SIGKILL to
    what is left of it after `STOP_GRACE` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(STOP_GRACE)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def judge(context: Context, mutant: int, log: Path | None = None) -> Outcome:
    """Run the campaign (by a `Judge`, within `context.limit`, its output appended to `log`; without a
    limit in this process) and the anchor on one mutant; never raises: an error is in the outcome."""
    started = time.monotonic()
    outcome = Outcome(mutant)
    try:
        if context.limit is None or log is None:
            campaign_verdict(context, mutant, outcome)
        else:
            outcome = judge_of(context).verdict(mutant, log)
        if context.anchor is not None:
            tests = context.anchor_tests
            if context.anchor_reaching is not None:
                tests = context.anchor_reaching.get(mutant, tests)
            outcome.anchor, outcome.anchor_test = anchor_verdict(
                context.anchor, tests, mutant, context.anchor_limit
            )
    except (ConformanceError, OSError) as error:
        outcome.error = str(error).splitlines()[0] if str(error) else type(error).__name__
    outcome.seconds = round(time.monotonic() - started, 2)
    return outcome


def judge_task(mutant: int, *, context: Context) -> Outcome:
    """One mutant as a Spark task: its output goes to `<folder>/logs/mNNNNN.log`."""
    logs = context.folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"m{mutant:05d}.log"
    with _output_to(log):
        return judge(context, mutant, log)


def select(
    mutants: Sequence[Mutant],
    ids: Sequence[int],
    files: Sequence[str],
    sample: int | None,
    seed: int,
    *,
    part: tuple[int, int] = (1, 1),
) -> list[Mutant]:
    """The mutants asked for: by id, else of the files named, else all; of those part K of N (every N-th,
    from the K-th: N runs, one of each part, run each mutant once); `sample` of them at random (drawn
    with `seed`), in id order."""
    known = {mutant.id: mutant for mutant in mutants}
    if ids:
        missing = [str(i) for i in ids if i not in known]
        if missing:
            raise OptionError(
                f"--mutant: no mutant {', '.join(missing)} (this build has 1 to {len(mutants)})"
            )
        chosen = [known[i] for i in ids]
    else:
        chosen = [m for m in mutants if not files or any(m.file.endswith(name) for name in files)]
    number, parts = part
    chosen = chosen[number - 1 :: parts]
    if sample is not None and sample < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, sample), key=lambda m: m.id)
    return chosen


def scores(
    mutants: Sequence[Mutant], outcomes: Mapping[int, Outcome], equivalent: set[int], *, anchor: bool
) -> dict[str, Any]:
    """`mutants`, `equivalent`, `killed`, `score` (killed / (mutants - equivalent)), `unreached` (no
    family of the campaign reaches them: not killed, yet no survivors), `score_reached` (killed /
    (mutants - equivalent - unreached)), `by_file` and `by_function`, of the campaign's outcomes or
    (`anchor`) the anchor's (which has no unreached mutants)."""

    def status(mutant: Mutant) -> str:
        if mutant.id in equivalent:
            return EQUIVALENT
        outcome = outcomes[mutant.id]
        return (outcome.anchor or SURVIVED) if anchor else outcome.status

    def figures(group: Iterable[Mutant]) -> dict[str, Any]:
        counted = Counter(status(mutant) for mutant in group)
        total = sum(counted.values())
        judged = total - counted[EQUIVALENT]
        reached = judged - counted[UNREACHED]
        return {
            "mutants": total,
            "equivalent": counted[EQUIVALENT],
            "killed": counted[KILLED],
            "score": round(counted[KILLED] / judged, 4) if judged else None,
            "unreached": counted[UNREACHED],
            "score_reached": round(counted[KILLED] / reached, 4) if reached else None,
        }

    by_file: dict[str, list[Mutant]] = {}
    by_function: dict[str, list[Mutant]] = {}
    for mutant in mutants:
        by_file.setdefault(mutant.file, []).append(mutant)
        by_function.setdefault(f"{mutant.file}:{mutant.function}", []).append(mutant)
    return {
        **figures(mutants),
        "by_file": {name: figures(group) for name, group in sorted(by_file.items())},
        "by_function": {name: figures(group) for name, group in sorted(by_function.items())},
    }


@dataclass(frozen=True, slots=True)
class Build:
    """What a mutants document says of the schemata build it ran: its release, how many mutants it holds,
    how long it took."""

    release: str
    in_build: int
    build_seconds: float

    @classmethod
    def of(cls, schemata: Schemata) -> Build:
        return cls(schemata.release, len(schemata.mutants), schemata.build_seconds)


def document_of(
    build: Build,
    chosen: Sequence[Mutant],
    outcomes: Mapping[int, Outcome],
    equivalents: Sequence[Equivalent],
    *,
    settings: Mapping[str, Any],
    anchor: bool,
) -> dict[str, Any]:
    """The JSON document of a mutants run."""
    reasons = {m.id: e.reason for m in chosen for e in equivalents if e.covers(m)}
    refuted = [number for number in reasons if outcomes[number].status == KILLED]
    equivalent = set(reasons) - set(refuted)
    for number in equivalent:
        outcomes[number].status = EQUIVALENT
        outcomes[number].how = reasons[number]
    campaign_scores = scores(chosen, outcomes, equivalent, anchor=False)
    seconds = [outcomes[m.id].seconds for m in chosen]
    return {
        "format": FORMAT,
        "version": VERSION,
        "release": build.release,
        "in_build": build.in_build,
        "build_seconds": build.build_seconds,
        "seconds_per_mutant": round(sum(seconds) / len(seconds), 2) if seconds else None,
        "settings": dict(settings),
        **campaign_scores,
        "anchor": scores(chosen, outcomes, equivalent, anchor=True) if anchor else None,
        "survivors": [{**asdict(m), "diff": m.diff} for m in chosen if outcomes[m.id].status == SURVIVED],
        "unreached_mutants": [m.id for m in chosen if outcomes[m.id].status == UNREACHED],
        "equivalent_killed": refuted,
        "outcomes": [{**asdict(m), **asdict(outcomes[m.id])} for m in chosen],
    }


SHARED_SETTINGS: Final = ("plan", "then", "families", "seed", "sample", "reach")
"""The settings every part of a combined run must share (`combined`)."""


def checked(data: dict[str, Any]) -> dict[str, Any]:
    """`data` once the report's reader takes it (`MutantsRun.from_json`: ValueError naming a missing or
    malformed field)."""
    MutantsRun.from_json(data, "")
    return data


def combined(paths: Sequence[Path], release: str) -> dict[str, Any]:
    """One document of the mutants documents at `paths` (files, or run folders holding `MUTANTS_FILE`):
    the parts of one release's run (`--part K/N`, each on a machine of its own), their mutants judged
    once, scored again as one run. `OptionError` when a document is unreadable, of another release, or
    judges a mutant another one judges too."""
    documents = []
    for path in paths:
        file = path / MUTANTS_FILE if path.is_dir() else path
        try:
            data = read_document(file, "mutants", FORMAT, VERSION, checked)
        except ConformanceError as error:
            raise OptionError(f"--combine: {error}") from None
        if data is None:
            raise OptionError(f"--combine: no mutants document at {file}")
        if data["release"] != release:
            raise OptionError(f"--combine: {file} judges {data['release']}, not --target {release}")
        documents.append(data)
    chosen: dict[int, Mutant] = {}
    outcomes: dict[int, Outcome] = {}
    mutant_fields = Mutant.__dataclass_fields__.keys()
    for file, data in zip(paths, documents, strict=True):
        for entry in data["outcomes"]:
            if entry["id"] in chosen:
                raise OptionError(f"--combine: mutant {entry['id']} is judged twice (again in {file})")
            try:
                chosen[entry["id"]] = Mutant(**{name: entry[name] for name in mutant_fields})
                outcomes[entry["id"]] = Outcome(
                    **{name: entry[name] for name in Outcome.__dataclass_fields__ if name != "plan"},
                    plan=entry.get("plan", ""),
                )
            except KeyError as missing:
                raise OptionError(f"--combine: {file}: mutant {entry['id']} has no field {missing}") from None
    mutants = [chosen[number] for number in sorted(chosen)]
    listed = [
        Equivalent(m.file, m.function, m.operator, m.original, m.mutated, outcomes[m.id].how, m.line)
        for m in mutants
        if outcomes[m.id].status == EQUIVALENT
    ]
    build = Build(release, documents[0]["in_build"], documents[0]["build_seconds"])
    settings = dict(documents[0]["settings"])
    for file, data in zip(paths, documents, strict=True):
        differ = [key for key in SHARED_SETTINGS if data["settings"].get(key) != settings.get(key)]
        if differ:
            raise OptionError(f"--combine: {file} ran another {differ[0]} than {paths[0]}")
    parts = [str(data["settings"].get("part") or "all") for data in documents]
    seconds = sum(float(data["settings"].get("seconds", 0.0)) for data in documents)
    settings |= {"part": ", ".join(parts), "seconds": round(seconds, 1), "combined": [str(p) for p in paths]}
    anchor = all(data["anchor"] is not None for data in documents)
    document = document_of(build, mutants, outcomes, listed, settings=settings, anchor=anchor)
    document["equivalent_killed"] = sorted({n for data in documents for n in data["equivalent_killed"]})
    return document


def part_of(text: str | None) -> tuple[int, int]:
    """`--part K/N` as (K, N), 1 <= K <= N; (1, 1) without it."""
    if text is None:
        return (1, 1)
    number, slash, parts = text.partition("/")
    if not (slash and number.isdigit() and parts.isdigit() and 1 <= int(number) <= int(parts)):
        raise OptionError(f"--part takes K/N with 1 <= K <= N, such as 2/4, not {text!r}")
    return (int(number), int(parts))


def target_release(texts: Sequence[str]) -> str:
    """The one nats-server release of `--target`."""
    if len(texts) != 1:
        raise OptionError("mutants takes one --target: a nats-server release such as 2.14.10")
    spec = parse_version_spec(texts[0])
    if spec.release is None:
        raise OptionError(
            f"mutants builds a nats-server release from source: give one such as 2.14.10, not {texts[0]!r}"
        )
    return spec.release


def plan_of(arguments: argparse.Namespace, name: str | None = None) -> CampaignPlan:
    """The campaign each mutant runs: `--plan`, `--family`, `--cases`, `--seed` (or the plan `name`, with
    its own budgets: `--then`); NATS Streaming and the library family left out (`LEFT_OUT`)."""
    budgets = PLANS[name or arguments.plan].budgets() | dict.fromkeys(LEFT_OUT, 0)
    if arguments.family:
        budgets |= {name: 0 for name in FAMILIES if name not in arguments.family}
    if arguments.cases is not None and name is None:
        budgets["mapping"] = arguments.cases
    return CampaignPlan(budgets=budgets, seed=arguments.seed)


def limit_of(given: float | None, original: float) -> float:
    """Seconds each mutant's campaign may take: `--timeout`, else `LIMIT_FACTOR` times the original's
    `original` seconds, at least `LIMIT_FLOOR`."""
    return given if given is not None else max(LIMIT_FLOOR, LIMIT_FACTOR * original)


def run_all(context: Context, chosen: Sequence[Mutant], master: str | None) -> dict[int, Outcome]:
    """Every chosen mutant judged: as Spark tasks with `master`, else one after the other here."""
    ids = [mutant.id for mutant in chosen]
    if master is None:
        outcomes = {}
        try:
            for number, mutant in enumerate(ids, 1):
                outcomes[mutant] = judge_task(mutant, context=context)
                report_to_stderr(
                    f"mutants: {number}/{len(ids)}: mutant {mutant} {describe(outcomes[mutant])}"
                )
        finally:
            stop_judges()
        return outcomes
    with scale_out(master, None) as scaled:
        assert scaled is not None
        work = partial(judge_task, context=context)
        results = scaled.spark.sparkContext.parallelize(ids, max(1, len(ids))).map(work).collect()
    return {outcome.id: outcome for outcome in results}


def describe(outcome: Outcome) -> str:
    text = outcome.status + (f" {outcome.how}" if outcome.how else "")
    if outcome.family:
        text += f" ({outcome.family})"
    if outcome.anchor:
        text += f"; anchor {outcome.anchor}"
    return text + (f"; error: {outcome.error}" if outcome.error else "")


def mutants_command(arguments: argparse.Namespace) -> int:
    """Build, run the original and every chosen mutant, write and print the scores (with `--combine`,
    score the documents of a run's parts as one run instead)."""
    release = target_release(arguments.target)
    if arguments.combine:
        return write_document(combined([Path(p) for p in arguments.combine], release), arguments)
    equivalents = load_equivalents(Path(arguments.equivalent))
    if arguments.sample is not None and arguments.sample < 1:
        raise OptionError("--sample takes a number of mutants, at least 1")
    if arguments.timeout is not None and not arguments.timeout > 0:
        raise OptionError("--timeout takes a number of seconds, more than 0")
    plan = plan_of(arguments)
    schemata = resolve_schemata(release)
    part = part_of(arguments.part)
    chosen = select(
        schemata.mutants, arguments.mutant, arguments.file, arguments.sample, arguments.seed, part=part
    )
    if not chosen:
        raise OptionError(f"no mutant of {release}'s build matches --file {' '.join(arguments.file)}")
    folder = Path(arguments.out) / f"mutants-{new_run_id()}"
    folder.mkdir(parents=True)
    anchor: Path | None = None
    tests: tuple[str, ...] = ()
    if not arguments.no_anchor:
        anchor = resolve_anchor(schemata)
        tests = anchor_tests(anchor)
    context = Context(release, schemata.binary, plan, folder, DEFAULT_PATH, anchor=anchor, anchor_tests=tests)
    started = time.monotonic()
    report_to_stderr(f"mutants: the original of {release} ({len(chosen)} of {len(schemata.mutants)} mutants)")
    context, seconds = with_originals(context, chosen, arguments)
    if anchor is not None:
        context = with_anchor(context, schemata, chosen, reach=not arguments.no_reach)
    listed = {m.id: e.reason for m in chosen for e in equivalents if e.covers(m)}
    skipped = set() if arguments.mutant else set(listed)
    outcomes = run_all(context, [m for m in chosen if m.id not in skipped], arguments.master)
    for outcome in outcomes.values():
        outcome.plan = arguments.plan
    if arguments.then:
        outcomes |= run_again(context, chosen, outcomes, arguments)
    outcomes |= {number: Outcome(number, EQUIVALENT, listed[number]) for number in skipped}
    settings = {
        "plan": arguments.plan,
        "then": arguments.then,
        "families": [name for name, budget in plan.budgets.items() if budget] if arguments.family else "plan",
        "seed": arguments.seed,
        "sample": arguments.sample,
        "part": arguments.part,
        "master": arguments.master,
        "anchor_tests": len(context.anchor_tests),
        "anchor_limit": round(context.anchor_limit, 1),
        "limit": round(context.limit or 0.0, 1),
        "reach": not arguments.no_reach,
        "original_seconds": seconds[0],
        "reach_seconds": seconds[1],
        "seconds": round(time.monotonic() - started, 1),
    }
    document = document_of(
        Build.of(schemata), chosen, outcomes, equivalents, settings=settings, anchor=anchor is not None
    )
    return write_document(document, arguments, folder)


def with_originals(
    context: Context, chosen: Sequence[Mutant], arguments: argparse.Namespace
) -> tuple[Context, tuple[float, float]]:
    """`context` with its plan's run on the original (each family's), the mutants' limit and, unless
    `--no-reach`, the families that reach each mutant; and the seconds of the originals and of reach."""
    started = time.monotonic()
    context = replace(context, originals=originals(context))
    original_seconds = time.monotonic() - started
    context = replace(context, limit=limit_of(arguments.timeout, original_seconds))
    if not arguments.no_reach:
        report_to_stderr(f"mutants: which families reach which lines, on {context.release}'s -cover build")
        reach = measure_reach(
            context.release, context.plan, context.folder / "reach", DEFAULT_PATH, {m.file for m in chosen}
        )
        order = [original.family for original in context.originals]
        context = replace(context, reaching={m.id: reach.reaching(m, order) for m in chosen})
    reach_seconds = time.monotonic() - started - original_seconds
    return context, (round(original_seconds, 1), round(reach_seconds, 1))


def with_anchor(context: Context, schemata: Schemata, chosen: Sequence[Mutant], *, reach: bool) -> Context:
    """`context` with the anchor's tests that pass on the original, their limit on a mutant, and (with
    `reach`) the tests that reach each mutant."""
    assert context.anchor is not None
    started = time.monotonic()
    _, verdicts = run_tests(context.anchor, context.anchor_tests, 0)
    limit = anchor_limit(time.monotonic() - started)
    passing = tuple(name for name in context.anchor_tests if verdicts.get(name) == "PASS")
    report_to_stderr(
        f"mutants: the anchor runs {len(passing)} of nats-server's tests ({len(context.anchor_tests)} match)"
    )
    context = replace(context, anchor_tests=passing, anchor_limit=limit)
    if reach:
        known = measure_anchor_reach(schemata, passing, {mutant.file for mutant in chosen})
        context = replace(context, anchor_reaching={m.id: known.reaching(m, passing) for m in chosen})
    return context


def run_again(
    first: Context, chosen: Sequence[Mutant], outcomes: Mapping[int, Outcome], arguments: argparse.Namespace
) -> dict[int, Outcome]:
    """`--then PLAN`: the mutants the first plan left alive (survived or unreached) run again under PLAN,
    in a folder of their own, without the anchor (its verdicts from the first run stand); a kill of
    either plan is a kill, and each outcome names the plan that decided it."""
    alive = [m for m in chosen if m.id in outcomes and outcomes[m.id].status in (SURVIVED, UNREACHED)]
    if not alive:
        return {}
    report_to_stderr(
        f"mutants: {len(alive)} left alive by the {arguments.plan} plan, again under {arguments.then}"
    )
    plan = plan_of(arguments, arguments.then)
    folder = first.folder / f"then-{arguments.then}"
    context = replace(first, plan=plan, folder=folder, originals=(), reaching=None, anchor=None)
    context, _ = with_originals(context, alive, arguments)
    again = run_all(context, alive, arguments.master)
    for number, outcome in again.items():
        outcome.plan = arguments.then
        outcome.anchor, outcome.anchor_test = outcomes[number].anchor, outcomes[number].anchor_test
    return again


def write_document(
    document: Mapping[str, Any], arguments: argparse.Namespace, folder: Path | None = None
) -> int:
    """Write `document` into its run folder (a new one under `--out` unless given) and to `--json`, and
    print its summary."""
    if folder is None:
        folder = Path(arguments.out) / f"mutants-{new_run_id()}"
        folder.mkdir(parents=True)
    text = json.dumps(document, indent=1) + "\n"
    (folder / MUTANTS_FILE).write_text(text)
    if arguments.json:
        Path(arguments.json).write_text(text)
    print(summary(document))
    print(f"mutants: {folder / MUTANTS_FILE}")
    return 0


def summary(document: Mapping[str, Any]) -> str:
    """The score of the campaign and of the anchor, per file."""

    def score(figures: Mapping[str, Any]) -> str:
        value = figures["score"]
        shown = "-" if value is None else f"{value:.1%}"
        return f"{figures['killed']} of {figures['mutants'] - figures['equivalent']} killed ({shown})"

    def campaign(figures: Mapping[str, Any]) -> str:
        unreached = figures.get("unreached", 0)
        return f"campaign {score(figures)}" + (f", {unreached} unreached" if unreached else "")

    lines = [f"mutants of nats-server {document['release']}: {campaign(document)}"]
    if document["anchor"]:
        lines[0] += f"; nats-server's tests {score(document['anchor'])}"
    for name, figures in document["by_file"].items():
        line = f"  {name}: {campaign(figures)}"
        if document["anchor"]:
            line += f"; nats-server's tests {score(document['anchor']['by_file'][name])}"
        lines.append(line)
    lines += [f"survivor {entry['id']}: {entry['diff']}" for entry in document["survivors"][:10]]
    lines += [
        f"mutant {number} is listed as equivalent, yet killed: its entry is wrong"
        for number in document["equivalent_killed"]
    ]
    return "\n".join(lines)


def add_mutants_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register `mutants`."""
    parser = commands.add_parser(
        "mutants",
        help="count the mutants of a release's mapping code a campaign kills",
        description="Builds --target R's mutant schemata (every mutant in one binary), runs the campaign on "
        "the original and on each mutant, and counts the mutants a paired change, a failed start or a crash "
        "tells apart; nats-server's own tests of mapping, transforms, placeholders, the sublist and subject "
        "validity are run on the same mutants. Exit status 0; 2 with one error line.",
    )
    parser.add_argument("--target", action="append", default=[], required=True, help="a nats-server release")
    parser.add_argument(
        "--plan", choices=sorted(PLANS), default="quick", help="the campaign each mutant runs"
    )
    parser.add_argument(
        "--then",
        choices=sorted(PLANS),
        help="run the mutants the plan leaves alive again under this plan (a kill of either counts)",
    )
    parser.add_argument(
        "--family", action="append", default=[], choices=sorted(FAMILIES), help="only these families"
    )
    parser.add_argument("--cases", type=int, help="the mapping family's budget")
    parser.add_argument("--seed", type=int, default=0, help="the campaign's seed, the same on every mutant")
    parser.add_argument("--sample", type=int, help="this many mutants drawn at random (with --seed)")
    parser.add_argument(
        "--mutant", type=int, action="append", default=[], help="this mutant only (repeatable)"
    )
    parser.add_argument(
        "--file", action="append", default=[], help="the mutants of this file (e.g. sublist.go)"
    )
    parser.add_argument(
        "--part", help="K/N: every N-th of the mutants asked for, from the K-th (N runs cover them once)"
    )
    parser.add_argument("--json", help="also write the document here")
    parser.add_argument(
        "--combine",
        action="append",
        default=[],
        metavar="DOCUMENT",
        help="score the mutants documents (or run folders) of a run's parts as one run, running nothing "
        "(repeatable)",
    )
    parser.add_argument("--out", default="runs", help="where the run folder goes (default runs/)")
    parser.add_argument("--master", help="run each mutant as a task of this Spark master (spark://HOST:PORT)")
    parser.add_argument("--no-anchor", action="store_true", help="do not run nats-server's own tests")
    parser.add_argument(
        "--no-reach",
        action="store_true",
        help="run every family on every mutant, not only those whose run on a -cover build reaches it",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        help="seconds a mutant's campaign may take before it counts as killed by timeout "
        f"(default {LIMIT_FACTOR} times the original's, at least {LIMIT_FLOOR:.0f})",
    )
    parser.add_argument(
        "--equivalent", default=str(EQUIVALENT_PATH), help="the equivalence file (default the shipped one)"
    )
    parser.set_defaults(handler=mutants_command)


def judging(argv: Sequence[str]) -> int:
    """`python -m nats_conformance.suites.mutants CONTEXT FD`, a `Judge`'s process: for each line
    ``ID<TAB>LOG`` of its input, `campaign_verdict` of mutant ID with the pickled CONTEXT, its output
    appended to LOG, and the outcome as a JSON line to file descriptor FD."""
    context: Context = pickle.loads(Path(argv[0]).read_bytes())
    with os.fdopen(int(argv[1]), "w", buffering=1) as answers:
        for line in sys.stdin:
            number, _, log = line.rstrip("\n").partition("\t")
            outcome = Outcome(int(number))
            with _output_to(Path(log)):
                try:
                    campaign_verdict(context, outcome.id, outcome)
                except (ConformanceError, OSError) as error:
                    outcome.error = str(error).splitlines()[0] if str(error) else type(error).__name__
            answers.write(json.dumps(asdict(outcome)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(judging(sys.argv[1:]))
