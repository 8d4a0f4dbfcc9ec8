"""A process that starts Spark sessions one after the other leaves no scratch directory once it exits:
the JVM outlives a session and makes a later session's block directories under its first session's
scratch directory, which `records.spark.spark_session` removes again when the process exits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance.records.spark import SCRATCH_PREFIX

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

TWO_SESSIONS = """
from nats_conformance.records.spark import spark_session
for _ in range(2):
    with spark_session("local[1]") as spark:
        assert spark.range(100).count() == 100
"""


def test_sessions_in_turn_leave_no_scratch_directory(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    environment = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", TWO_SESSIONS],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(path.name for path in tmp_path.glob(f"{SCRATCH_PREFIX}*")) == []
