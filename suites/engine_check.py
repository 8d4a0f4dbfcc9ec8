"""The offline reference check: the reference and the transform engine of each release asked the same
random questions, agreement printed per release and per divergence class.

    python -m nats_conformance.suites engine-check --questions 200000    # every pinned release

Each release's engine is the `engine:` target (`fixtures.engine`); the questions are the library
family's (`suites.families.library`), under the release's profile, with `transform` asked in engine mode
(`engine_only`, the bare engine that `nats server mapping` runs: "Subject Mapping and Partitioning"
on docs.nats.io). No server starts and nothing is recorded. Where the documents speak and the engine
does otherwise, the class is listed in `expectations.toml` (an entry whose `implementation` pattern
covers "nats-server engine RELEASE") and printed with its id. Any other diverging class is a finding
about the reference or the engine, shown with the smallest question Hypothesis finds that still shows
it, and the command exits 1.
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.fixtures.engine import engine_command, engine_release
from nats_conformance.fixtures.options import split_list
from nats_conformance.fixtures.provision import NATS_SERVER
from nats_conformance.records.expectations import DEFAULT_PATH, Expectations, load_expectations
from nats_conformance.records.schema import NOT_SUPPORTED, Case, CaseBlock
from nats_conformance.reference.cli import Parser, count
from nats_conformance.reference.profiles import for_version
from nats_conformance.suites.engine.family import Judged
from nats_conformance.suites.engine.run import run_family, unwritten
from nats_conformance.suites.engine.shrink import minimise as minimise_classes
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import LIBRARY
from nats_conformance.suites.families.library import BACKEND, AdapterSession, unanswered_operations

DEFAULT_RELEASES = ",".join(NATS_SERVER.lines.values())
"""Every pinned release (`fixtures.provision`): 2.2.6, 2.8.4, 2.9.25, 2.10.27, 2.11.17, 2.12.15, 2.14.5."""


def question_kind(case: Case) -> str:
    """The protocol operation a library case asked."""
    if case.functions == "partition-op":
        return "partition"
    return {"matching": "match", "subjects": "valid_subject"}.get(case.feature, "transform")


@dataclass(slots=True)
class ReleaseCheck:
    """What one release's engine answered: questions and agreements per kind, known divergences per class
    and expectation, unexpected divergences per class,
    a case of each class (the smallest found when minimising, else the first), and the kinds it does
    not answer."""

    release: str
    asked: Counter[str] = field(default_factory=Counter)
    agreed: Counter[str] = field(default_factory=Counter)
    classes: Counter[str] = field(default_factory=Counter)
    expected: Counter[tuple[str, str]] = field(default_factory=Counter)
    minimal: dict[str, Case] = field(default_factory=dict)
    unanswered: list[str] = field(default_factory=list)

    def count(self, judged: Judged) -> None:
        for item in judged:
            if isinstance(item, CaseBlock):  # agreeing questions of one kind
                kind = question_kind(item.shared)
                self.asked[kind] += len(item)
                self.agreed[kind] += len(item)
                continue
            case = item
            if case.difference == NOT_SUPPORTED:
                continue  # a kind the engine of this release does not answer (`unanswered`)
            kind = question_kind(case)
            self.asked[kind] += 1
            if case.verdict == "agree":
                self.agreed[kind] += 1
            elif case.verdict == "expected":
                self.expected[case.case_class, case.expectation] += 1
            else:
                self.classes[case.case_class] += 1
                self.minimal.setdefault(case.case_class, case)

    @property
    def total(self) -> int:
        return sum(self.asked.values())

    @property
    def agreeing(self) -> int:
        return sum(self.agreed.values())


def check_release(
    text: str,
    *,
    questions: int,
    seed: int = 0,
    minimise: bool = True,
    expectations: Expectations | None = None,
) -> ReleaseCheck:
    """Ask the engine of one release `questions` questions and judge them against the reference, with
    `expectations` (default: the repository's file) naming the known divergences."""
    release = engine_release(text)
    profile = for_version(release)
    check = ReleaseCheck(release)
    counter = itertools.count()
    with AdapterProcess(engine_command(release)) as adapter:
        check.unanswered = unanswered_operations(adapter)
        context = RunContext(
            "engine-check",
            adapter.implementation,
            profile.name,
            BACKEND,
            load_expectations() if expectations is None else expectations,
            lambda: next(counter),
        )
        session = AdapterSession(adapter, profile, seed=seed, engine_only=True)
        sink = unwritten(also=check.count, shrinks=True)
        family = replace(LIBRARY, protocol=adapter.hello.protocol, ops=adapter.ops)
        run_family(family, session, context, budget=questions, seed=seed, sink=sink)
        if minimise:
            found = minimise_classes(family, session, context, sink.smallest or {}, unwritten())
            check.minimal.update((case.case_class, case) for case in found)
    return check


def describe(check: ReleaseCheck) -> list[str]:
    """The lines printed for one release."""
    share = 100 * check.agreeing / check.total if check.total else 0.0
    lines = [
        f"engine {check.release}: {check.agreeing}/{check.total} agree ({share:.2f}%), "
        f"{sum(check.expected.values())} expected in {len(check.expected)} known classes, "
        f"{len(check.classes)} unexpected diverging classes"
    ]
    kinds = ", ".join(f"{kind} {check.agreed[kind]}/{n}" for kind, n in sorted(check.asked.items()))
    lines.append(f"  per kind: {kinds}")
    if check.unanswered:
        lines.append(
            f"  not asked (the engine of this release has no such function): {', '.join(check.unanswered)}"
        )
    for (case_class, expectation), n in check.expected.most_common():
        lines.append(f"  {n:>7}  {case_class}  (expected: {expectation})")
    for case_class, n in check.classes.most_common():
        lines.append(f"  {n:>7}  {case_class}")
        case = check.minimal.get(case_class)
        if case is not None:
            lines.append(
                f"           e.g. source {case.source!r} destination {case.destination!r} subject "
                f"{case.subject!r}: reference {case.expected}, engine {case.observed}"
            )
    return lines


def selected_releases(options: list[str]) -> list[str]:
    """`--releases` (repeatable, comma-separated), or every pinned release without it."""
    return split_list(options) or split_list([DEFAULT_RELEASES])


def engine_check_command(arguments: argparse.Namespace) -> int:
    releases = selected_releases(arguments.releases)
    print(f"engine check: {arguments.questions} questions per release, seed {arguments.seed}")
    expectations = load_expectations(arguments.expectations or DEFAULT_PATH)
    unexpected = 0
    for release in releases:
        check = check_release(
            release,
            questions=arguments.questions,
            seed=arguments.seed,
            minimise=not arguments.no_minimise,
            expectations=expectations,
        )
        unexpected += len(check.classes)
        print("\n".join(describe(check)), flush=True)
    return 1 if unexpected else 0


def add_engine_check_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register `engine-check` on the `python -m nats_conformance.suites` sub-command parser."""
    parser = commands.add_parser(
        "engine-check", help="ask the reference and each release's transform engine the same questions"
    )
    parser.add_argument(
        "--releases",
        action="append",
        default=[],
        help=f"nats-server releases or lines, comma-separated; repeatable (default {DEFAULT_RELEASES})",
    )
    parser.add_argument(
        "--questions", type=count, default=20_000, help="questions per release (default 20000)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--expectations", type=Path, help="known divergences (default: the repository's expectations.toml)"
    )
    parser.add_argument(
        "--no-minimise", action="store_true", help="skip the search for each class's smallest question"
    )
    parser.set_defaults(handler=engine_check_command)
