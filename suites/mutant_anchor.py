"""The anchor of `nats-conformance mutants`: nats-server's own tests whose names match `ANCHOR_TESTS`, one
test binary compiled against release R's mutant schemata (``go test -c``), run once as the original
(tests that fail there are left out) and once per mutant: killed when one of the others fails (or the
binary crashes or times out).

Each mutant runs only the tests that reach its line, stopping at the first that fails (``-test.failfast``).
Which lines a test reaches is read once per release from the original's test binary built with coverage
counters (``go test -c -cover``), each test run on its own (`measure_anchor_reach`, cached beside the
build). The rule is the campaign's (`suites.mutant_reach`): a test that never runs the mutated line runs
as it does on the original, so it cannot fail there. A line inside no block, or a test whose profile is
missing, runs every test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from nats_conformance.fixtures.mutants import Schemata, resolve_anchor
from nats_conformance.fixtures.options import MUTANT_ENV
from nats_conformance.fixtures.provision import NATS_SERVER, report_to_stderr
from nats_conformance.records.coverage import parse_profile
from nats_conformance.records.mutants import KILLED, SURVIVED
from nats_conformance.suites.mutant_reach import EVERY_LINE, Reach, lines_of

ANCHOR_TESTS: Final = r"(?i)mapping|subjecttransform|placeholder|sublist|valid.*subject|subject.*valid"
"""nats-server's tests of the anchor: names matching mapping, subject transform, placeholder, sublist and
subject validity."""
ANCHOR_TIMEOUT: Final = 300.0
"""Seconds one run of the anchor's tests may take on the original, and by default on a mutant."""
ANCHOR_LIMIT_FACTOR: Final = 3
ANCHOR_LIMIT_FLOOR: Final = 60.0
"""A mutant's tests may take `ANCHOR_LIMIT_FACTOR` times the original's run of every test, at least
`ANCHOR_LIMIT_FLOOR` seconds, before the mutant counts as killed by timeout (a mutant that loops or
deadlocks): on 2.14.10 the original's 116 tests take 25 to 46 s, and a mutant runs a part of them; at
300 s, each of the sublist mutants that loop cost 5 minutes."""
REACH_FILE: Final = "anchor-reach.json"
"""The cached reach of each test, in the schemata build's folder."""
TEST_LINE: Final = re.compile(r"^\s*--- (?P<verdict>PASS|FAIL|SKIP): (?P<name>\S+)")
TIMED_OUT: Final = "panic: test timed out"
"""What a Go test binary prints when its own `-test.timeout` ends it (exit status 2)."""


def run_tests(
    binary: Path,
    tests: Sequence[str],
    mutant: int,
    *,
    profile: Path | None = None,
    limit: float = ANCHOR_TIMEOUT,
) -> tuple[int, dict[str, str]]:
    """The anchor's tests on the build running `mutant` (stopping at the first failure): the exit status
    (-1 past `limit` seconds) and each top-level test's verdict; with `profile`, the coverage profile is
    written there. Their temporary folders go in one of ours, removed afterwards: a test that a mutant
    crashes or a timeout stops leaves its `t.TempDir()` behind."""
    with tempfile.TemporaryDirectory(prefix="nats-conformance-anchor-") as scratch:
        environment = {key: value for key, value in os.environ.items() if key != MUTANT_ENV}
        environment["TMPDIR"] = scratch
        if mutant:
            environment[MUTANT_ENV] = str(mutant)
        pattern = "^(" + "|".join(re.escape(name) for name in tests) + ")$"
        argv = [str(binary), "-test.run", pattern, "-test.v", "-test.count=1", "-test.failfast"]
        argv += [f"-test.timeout={limit:.0f}s"]
        if profile is not None:
            argv.append(f"-test.coverprofile={profile}")
        try:
            result = subprocess.run(
                argv,
                cwd=binary.parent / "src" / "server",
                env=environment,
                capture_output=True,
                text=True,
                timeout=limit + 30,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return -1, {}
    if TIMED_OUT in result.stdout or TIMED_OUT in result.stderr:
        return -1, {}
    verdicts = {}
    for line in result.stdout.splitlines():
        found = TEST_LINE.match(line)
        if found and "/" not in found["name"]:
            verdicts[found["name"]] = found["verdict"]
    return result.returncode, verdicts


def anchor_tests(binary: Path) -> tuple[str, ...]:
    """The test binary's tests whose names match `ANCHOR_TESTS`."""
    result = subprocess.run(
        [str(binary), "-test.list", ANCHOR_TESTS],
        cwd=binary.parent / "src" / "server",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return tuple(line.strip() for line in result.stdout.splitlines() if line.startswith("Test"))


def anchor_verdict(
    binary: Path, tests: Sequence[str], mutant: int, limit: float = ANCHOR_TIMEOUT
) -> tuple[str, str]:
    """(killed or survived, the first failing test) of the anchor's `tests` on one mutant, within
    `limit` seconds; survived without running where no test reaches it."""
    if not tests:
        return SURVIVED, ""
    status, verdicts = run_tests(binary, tests, mutant, limit=limit)
    failed = sorted(name for name, verdict in verdicts.items() if verdict == "FAIL")
    if failed:
        return KILLED, failed[0]
    if status != 0:
        return KILLED, "timeout" if status == -1 else f"exit status {status}"
    return SURVIVED, ""


def anchor_limit(original: float) -> float:
    """Seconds a mutant's tests may take, the original's run of every test having taken `original`."""
    return max(ANCHOR_LIMIT_FLOOR, ANCHOR_LIMIT_FACTOR * original)


def measure_anchor_reach(schemata: Schemata, tests: Sequence[str], files: set[str]) -> Reach:
    """Which lines of `files` each of `tests` reaches on the original: each test run on its own on the
    release's test binary with coverage counters; read from `REACH_FILE` when it holds every test."""
    cached = schemata.folder / REACH_FILE
    try:
        document = json.loads(cached.read_text())
        if set(tests) <= set(document["tests"]):
            return reach_of(document, files)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    binary = resolve_anchor(schemata, cover=True)
    report_to_stderr(f"mutants: which lines each of {len(tests)} of nats-server's tests reaches (once)")
    mutated = {mutant.file for mutant in schemata.mutants}
    reached: dict[str, dict[str, list[int]] | None] = {}
    counted: dict[str, set[int]] = {}
    with tempfile.TemporaryDirectory(prefix="nats-conformance-anchor-reach-") as scratch:
        for test in tests:
            profile = Path(scratch) / "profile.txt"
            profile.unlink(missing_ok=True)
            status, _ = run_tests(binary, [test], 0, profile=profile)
            if status != 0 or not profile.is_file():
                reached[test] = EVERY_LINE
                continue
            blocks = parse_profile(profile.read_text(), NATS_SERVER.module)
            lines = lines_of(blocks, mutated, reached_only=True)
            reached[test] = {path: sorted(numbers) for path, numbers in lines.items()}
            for path, numbers in lines_of(blocks, mutated, reached_only=False).items():
                counted.setdefault(path, set()).update(numbers)
    document = {"tests": reached, "counted": {path: sorted(lines) for path, lines in counted.items()}}
    cached.write_text(json.dumps(document) + "\n")
    return reach_of(document, files)


def reach_of(document: dict[str, Any], files: set[str]) -> Reach:
    """The `Reach` of the tests in a `REACH_FILE` document, for the lines of `files`."""
    reached = {
        test: EVERY_LINE if lines is None else {p: frozenset(n) for p, n in lines.items() if p in files}
        for test, lines in document["tests"].items()
    }
    counted = {path: frozenset(lines) for path, lines in document["counted"].items() if path in files}
    return Reach(reached, counted)
