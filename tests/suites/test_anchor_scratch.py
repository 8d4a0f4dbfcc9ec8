"""The anchor's test binary runs with its temporary folders in one of ours, removed afterwards
(`suites.mutant_anchor.run_tests`): a test that a mutant crashes or a timeout stops leaves its `t.TempDir()`
behind, and nothing may stay in the user's /tmp."""

from __future__ import annotations

import os
from pathlib import Path

from nats_conformance.suites.mutant_anchor import run_tests

FAKE_TESTS = """#!/bin/sh
# A test binary whose one test makes a temporary folder and dies before removing it.
scratch="${TMPDIR:-$(dirname "$0")}"
mkdir -p "$scratch/TestMapping123" && echo "$scratch" > "$(dirname "$0")/scratch.txt"
echo "--- FAIL: TestMapping (0.01s)"
exit 1
"""


def test_the_anchors_temporary_folders_are_removed_even_when_a_test_dies(tmp_path: Path) -> None:
    binary = tmp_path / "server.test"
    binary.write_text(FAKE_TESTS)
    binary.chmod(0o755)
    (tmp_path / "src" / "server").mkdir(parents=True)
    status, verdicts = run_tests(binary, ["TestMapping"], 7)
    assert (status, verdicts) == (1, {"TestMapping": "FAIL"})
    scratch = Path((tmp_path / "scratch.txt").read_text().strip())
    assert scratch.name.startswith("nats-conformance-anchor-")
    assert scratch != Path(os.environ.get("TMPDIR", "/tmp"))
    assert not scratch.exists()
