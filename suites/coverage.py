"""`nats-conformance coverage --server-version R [campaign options]`: how much of nats-server's mapping
code a campaign reaches.

It builds release R with -cover (`fixtures.cover`), runs the campaign against that build with each
server's counters written into `<run>/coverage/counters/` (GOCOVERDIR; servers stopped with SIGTERM),
merges them into `<run>/coverage/profile.txt` and writes `<run>/coverage.json`
(`records.coverage`), which the report shows. The exit status is the campaign's; a coverage that cannot
be measured is one `nats-conformance: error:` line with exit status 2.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nats_conformance.fixtures.cover import (
    counter_files,
    cover_release,
    function_lines,
    merge_counters,
    module_source,
    resolve_cover_binary,
)
from nats_conformance.fixtures.engine import engine_release, resolve_engine
from nats_conformance.fixtures.options import OptionError
from nats_conformance.fixtures.provision import NATS_SERVER, VersionSpec, parse_version_spec, report_to_stderr
from nats_conformance.records.coverage import (
    COVERAGE_FILE,
    MAPPING_SURFACE,
    Surface,
    coverage_document,
    functions_of,
    parse_profile,
    percent,
)
from nats_conformance.records.writer import MANIFEST, new_run_id
from nats_conformance.reference.cli import Parser
from nats_conformance.suites.targets import gather_targets

COUNTERS = Path("coverage") / "counters"
PROFILE = Path("coverage") / "profile.txt"
SHOWN_FILE = "server/subject_transform.go"
"""The file whose figure the command prints beside the whole surface's."""


def coverage_release(arguments: argparse.Namespace) -> tuple[str, bool]:
    """The one release a coverage run builds with -cover, and whether it is an `engine:` target's (its
    transform engine alone, asked in coverage-guided draws) rather than a server's (one-line errors for
    what it cannot run)."""
    targets = gather_targets(arguments.target, arguments.server_version, arguments.server_url)
    if targets.engines:
        if len(targets.engines) > 1 or targets.versions or targets.adapters or targets.server_url:
            raise OptionError("coverage takes one target: --target engine:R or --server-version R")
        return engine_release(targets.engines[0]), True
    refused = {
        "--target adapter:": targets.adapters,
        "a server at a URL": targets.server_url,
        "--releases/--since": arguments.releases or arguments.since,
        "--master/--resume": arguments.master or arguments.resume,
        "--backend other than process": [b for b in arguments.backend if b != "process"],
    }
    for what, given in refused.items():
        if given:
            raise OptionError(
                f"coverage runs one nats-server release it builds with -cover on the process backend; "
                f"drop {what}"
            )
    if len(targets.versions) != 1:
        raise OptionError("coverage takes one release: --server-version R (such as 2.14.9)")
    return targets.versions[0], False


def coverage(arguments: argparse.Namespace, run: Callable[..., int]) -> int:
    """Build, run the campaign (`run`, `suites.commands.campaign`), measure; the campaign's status."""
    status, run_dir, document = covered_campaign(arguments, run)
    if document is None:
        return status  # the campaign recorded nothing (and said why)
    print(summary_line(document))
    if document["restarts"]:
        print(f"coverage: {document['restarts']} server(s) restarted after a fault; their counters are lost")
    print(f"coverage: {run_dir / COVERAGE_FILE}")
    return status


def covered_campaign(
    arguments: argparse.Namespace, run: Callable[..., int]
) -> tuple[int, Path, dict[str, Any] | None]:
    """Build the release with -cover, run the campaign on it (`run`) and measure: the campaign's status,
    its run directory (whose `PROFILE` holds the merged counters) and its coverage file's content, None
    when the campaign recorded nothing."""
    text, engine_target = coverage_release(arguments)
    release = cover_release(parse_version_spec(text))
    if engine_target:
        binary = resolve_engine(release, cover=True)
    else:
        binary = resolve_cover_binary(VersionSpec(release, release=release))
    report_to_stderr(f"coverage: running the campaign on {binary}")
    run_dir = Path(arguments.out) / new_run_id()
    # Absolute: each server runs in a work directory of its own, where a relative GOCOVERDIR is lost.
    status = run(arguments, run_dir=run_dir, coverage_dir=(run_dir / COUNTERS).absolute())
    if not run_dir.is_dir():
        return status, run_dir, None
    return status, run_dir, measure(run_dir, release, engine=engine_target or bool(arguments.oracle))


def measure(
    run_dir: Path,
    release: str,
    *,
    engine: bool = False,
    source: Path | None = None,
    module: str = NATS_SERVER.module,
    surface: Surface = MAPPING_SURFACE,
    progress: Callable[[str], None] = report_to_stderr,
) -> dict[str, Any]:
    """Merge the run's counters (`COUNTERS`) and write its coverage file; returns the file's content.
    `source` is the release's module source (default the one the Go module proxy serves), `engine`
    whether an engine oracle wrote counters too."""
    counters, profile = run_dir / COUNTERS, run_dir / PROFILE
    if source is None:
        source = module_source(release, progress=progress)
    merge_counters(counters, source, profile, module=module, progress=progress)
    cache: dict[str, list[str]] = {}

    def read_source(path: str) -> list[str]:
        if path not in cache:
            cache[path] = (source / path).read_text(errors="replace").splitlines()
        return cache[path]

    document = coverage_document(
        run_id=run_dir.name,
        release=release,
        module=module,
        blocks=parse_profile(profile.read_text(), module),
        functions=functions_of(function_lines(profile, source, progress=progress), module),
        read_source=read_source,
        counter_files=len(counter_files(counters)),
        engine=engine,
        restarts=len(read_manifest(run_dir).get("restarts", ())),
        surface=surface,
    )
    (run_dir / COVERAGE_FILE).write_text(json.dumps(document, indent=1) + "\n")
    return document


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The run's manifest ({} when it has none or it cannot be read: no restarts known)."""
    try:
        manifest = json.loads((run_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def summary_line(document: dict[str, Any]) -> str:
    """The surface's figure and subject_transform.go's, in one line."""
    line = (
        f"coverage of nats-server {document['release']}'s mapping surface: {document['covered']:,} of "
        f"{document['statements']:,} statements ({percent(document['covered'], document['statements'])})"
    )
    for item in document["files"]:
        if item["path"] == SHOWN_FILE:
            shown = percent(item["covered"], item["statements"])
            line += f"; {SHOWN_FILE}: {item['covered']} of {item['statements']} ({shown})"
    return line + f"; {len(document['unreached'])} unreached blocks"


def add_coverage_command(
    commands: argparse._SubParsersAction[Parser],
    *,
    options: Callable[[argparse.ArgumentParser], None],
    run: Callable[..., int],
) -> None:
    """Register `coverage` with the campaign's `options`; it runs the campaign with `run`."""
    parser = commands.add_parser(
        "coverage",
        help="measure the mapping code of a release that a campaign reaches (a -cover build)",
        description="Builds --server-version R with -cover, runs the campaign (same options) on it and "
        "writes <run>/coverage.json, which the report shows. Exit status: the campaign's; 2 also when "
        "coverage cannot be measured.",
    )
    options(parser)
    parser.set_defaults(handler=lambda arguments: coverage(arguments, run))
