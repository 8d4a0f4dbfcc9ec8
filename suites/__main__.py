"""`python -m suites campaign|replay`: volume runs outside pytest, and one case run again.

Errors are one line on stderr (`nats-conformance: error: ...`) with exit status 2; a campaign that
found unexpected divergences exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fixtures.options import build_run_config
from records.writer import new_run_id
from reference.errors import run_command
from suites.campaign import CampaignPlan, run_campaign
from suites.expectations import DEFAULT_PATH, load_expectations
from suites.replay import replay_on_server
from suites.reproduce import describe_case, describe_divergences
from suites.republish import describe_case as describe_republish_case
from suites.republish_replay import replay_republish


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


def campaign(arguments: argparse.Namespace) -> int:
    run = build_run_config(
        arguments.server_version, arguments.backend, arguments.server_url, arguments.apply_command
    )
    plan = CampaignPlan(
        mapping_cases=arguments.cases,
        validation_cases=arguments.validation_cases,
        mappings_per_batch=arguments.mappings_per_batch,
        subjects_per_mapping=arguments.subjects_per_mapping,
        weighted_lists=arguments.weighted_lists,
        matching_batches=arguments.matching_batches,
        seed=arguments.seed,
    )
    expectations = load_expectations(Path(arguments.expectations))
    run_dir = Path(arguments.out) / new_run_id()
    writer, diverged = run_campaign(run, plan, run_dir, expectations)
    manifest = writer.manifest()
    if diverged:
        print(describe_divergences(diverged))
    print(f"run directory: {run_dir}")
    print(f"{manifest['cases']} cases: " + ", ".join(f"{n} {v}" for v, n in manifest["verdicts"].items()))
    for entry in expectations.stale():
        print(f"stale expectation: {entry.id} ({entry.case_class}) matched nothing in this run")
    return 1 if manifest["verdicts"]["diverge"] else 0


def replay(arguments: argparse.Namespace) -> int:
    if arguments.feature == "republish":
        republished = replay_republish(
            stream_subjects=arguments.stream_subjects,
            source=arguments.source,
            destination=arguments.destination,
            headers_only=arguments.headers_only,
            subject=arguments.subject,
            version=arguments.server_version,
            backend=arguments.backend,
        )
        for case in republished:
            print(describe_republish_case(case))
        return 1 if any(case.verdict != "agree" for case in republished) else 0
    if arguments.feature == "streaming":
        # Imported here: the streaming client needs protobuf (the `streaming` extra).
        from suites.streaming.replay import replay_streaming

        streaming = replay_streaming(arguments.source, arguments.subject, arguments.server_version)
        for case in streaming:
            print(describe_case(case))
        return 1 if any(case.verdict != "agree" for case in streaming) else 0
    versions = [arguments.server_version] if arguments.server_version else []
    backends = [arguments.backend] if arguments.backend else []
    run = build_run_config(versions, backends, arguments.server_url, arguments.apply_command)
    cases = replay_on_server(
        run,
        feature=arguments.feature,
        source=arguments.source,
        destination=arguments.destination,
        subject=arguments.subject,
    )
    for case in cases:
        print(describe_case(case))
    return 1 if any(case.verdict != "agree" for case in cases) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("campaign", help="run many generated cases and record them")
    add_target_options(run, many=True)
    run.add_argument("--cases", type=int, default=20_000, help="mapping cases per target (default 20000)")
    run.add_argument("--validation-cases", type=int, default=100, help="validation cases per target")
    run.add_argument("--weighted-lists", type=int, default=4, help="weighted lists per target (default 4)")
    run.add_argument(
        "--matching-batches", type=int, default=20, help="subscription batches per target (default 20)"
    )
    run.add_argument("--mappings-per-batch", type=int, default=20)
    run.add_argument("--subjects-per-mapping", type=int, default=1_000)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--out", default="runs", help="parent of the run directory (default runs)")
    run.add_argument("--expectations", default=str(DEFAULT_PATH))
    run.set_defaults(handler=campaign)
    again = commands.add_parser("replay", help="run one case again and compare with the reference")
    add_target_options(again, many=False)
    again.add_argument("--feature", default="mapping")
    again.add_argument("--source", required=True)
    again.add_argument("--destination", default="", help="mapping destination (not for streaming)")
    again.add_argument("--subject", default="")
    again.add_argument(
        "--stream-subjects", default="", help="republish: the stream's subjects, comma-separated"
    )
    again.add_argument("--headers-only", action="store_true", help="republish: the option's headers_only")
    again.set_defaults(handler=replay)
    arguments = parser.parse_args(argv)
    return run_command(lambda: arguments.handler(arguments))


if __name__ == "__main__":
    sys.exit(main())
