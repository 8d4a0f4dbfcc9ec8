"""Reports read records only: building a report imports nothing of the suites or the fixtures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_report_builder_imports_no_suite_or_fixture_module() -> None:
    probe = (
        "import sys, nats_conformance.reports.build, nats_conformance.reports.commands\n"
        "import nats_conformance.records.duckdb_sql, nats_conformance.records.spark_sql\n"
        "import nats_conformance.records.queries, nats_conformance.reports.baseline\n"
        "ours = ('nats_conformance.suites', 'nats_conformance.fixtures')\n"
        "print(sorted(m for m in sys.modules if m.startswith(ours)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout
