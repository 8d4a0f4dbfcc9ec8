"""`suites.mutant_anchor`: each mutant runs the anchor's tests that reach its line on the original, read
once per release from each test's coverage profile and cached; a mutant no test reaches survives without a
run. The test binary here is a script that writes the profile a real one would."""

from __future__ import annotations

from pathlib import Path

from nats_conformance.fixtures.mutants import COVER_TEST_BINARY, Schemata
from nats_conformance.records.mutants import KILLED, SURVIVED, Mutant
from nats_conformance.suites.mutant_anchor import (
    REACH_FILE,
    anchor_limit,
    anchor_verdict,
    measure_anchor_reach,
)

FILE = "server/sublist.go"
PROFILING_TESTS = """#!/bin/sh
# A test binary with the coverage counters: TestA reaches line 12, TestB line 20, none line 30.
for argument in "$@"; do
  case "$argument" in -test.coverprofile=*) out="${argument#-test.coverprofile=}";; esac
done
case "$2" in *TestA*) line=12;; *) line=20;; esac
module=github.com/nats-io/nats-server/v2
printf 'mode: set\\n%s/server/sublist.go:%s.1,%s.9 1 1\\n%s/server/sublist.go:30.1,30.9 1 0\\n' \\
  "$module" "$line" "$line" "$module" > "$out"
echo "--- PASS: $2 (0.00s)"
"""


def mutant(line: int) -> Mutant:
    return Mutant(line, FILE, "matchLiteral", line, "negate-comparison", "a == b", "a != b")


def schemata_with_tests(folder: Path) -> Schemata:
    binary = folder / COVER_TEST_BINARY
    binary.write_text(PROFILING_TESTS)
    binary.chmod(0o755)
    (folder / "src" / "server").mkdir(parents=True)
    return Schemata("2.14.10", folder, folder / "nats-server", (mutant(12), mutant(20)))


def test_each_mutant_runs_the_tests_that_reach_its_line(tmp_path: Path) -> None:
    reach = measure_anchor_reach(schemata_with_tests(tmp_path), ["TestA", "TestB"], {FILE})
    order = ["TestA", "TestB"]
    assert reach.reaching(mutant(12), order) == ("TestA",)
    assert reach.reaching(mutant(20), order) == ("TestB",)
    assert reach.reaching(mutant(30), order) == ()
    assert reach.reaching(mutant(5), order) == ("TestA", "TestB")  # inside no block: every test


def test_the_reach_is_measured_once_and_read_back(tmp_path: Path) -> None:
    schemata = schemata_with_tests(tmp_path)
    first = measure_anchor_reach(schemata, ["TestA", "TestB"], {FILE})
    (tmp_path / COVER_TEST_BINARY).unlink()
    assert (tmp_path / REACH_FILE).is_file()
    assert measure_anchor_reach(schemata, ["TestB"], {FILE}) == first


def test_a_mutant_no_test_reaches_survives_without_a_run(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-binary"
    assert anchor_verdict(missing, (), 7) == (SURVIVED, "")


def test_a_mutants_tests_may_take_three_times_the_originals_run_and_at_least_a_minute() -> None:
    assert anchor_limit(40.0) == 120.0
    assert anchor_limit(5.0) == 60.0


def test_tests_that_run_past_their_limit_kill_by_timeout(tmp_path: Path) -> None:
    binary = tmp_path / "server.test"
    binary.write_text('#!/bin/sh\necho "panic: test timed out after 1m0s"\nexit 2\n')
    binary.chmod(0o755)
    (tmp_path / "src" / "server").mkdir(parents=True)
    assert anchor_verdict(binary, ["TestMapping"], 7, 60.0) == (KILLED, "timeout")
