"""Reports read records only: building a report imports nothing of the suites or the fixtures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_report_builder_imports_no_suite_or_fixture_module() -> None:
    probe = (
        "import sys, reports.build, reports.commands, reports.duckdb_sql, reports.spark_sql\n"
        "import reports.aggregate, reports.baseline\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('suites', 'fixtures')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout
