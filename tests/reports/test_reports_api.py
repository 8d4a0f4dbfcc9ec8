"""The public surface of ``reports`` is explicit, and importing it starts neither Spark nor matplotlib."""

from __future__ import annotations

import inspect
import subprocess
import sys

import reports


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(reports).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert set(reports.__all__) == public


def test_importing_reports_loads_no_heavy_dependency() -> None:
    code = "import sys, reports; print(sorted(m for m in ('pyspark', 'matplotlib') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
