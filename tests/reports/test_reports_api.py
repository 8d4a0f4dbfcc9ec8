"""The public surface of ``reports`` is explicit, and importing it starts neither Spark nor matplotlib."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from nats_conformance import reports


def test_all_lists_exactly_the_public_names() -> None:
    """They are imported on first use (the package's `__getattr__`), each from its own module."""
    assert set(reports.__all__) == set(reports._HOMES)
    assert not any(inspect.ismodule(getattr(reports, name)) for name in reports.__all__)
    with pytest.raises(AttributeError):
        _ = reports.nothing_of_that_name


def test_importing_reports_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, nats_conformance.reports\n"
        "print(sorted(m for m in ('pyspark', 'matplotlib') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
