"""Spark reports built from recorded cases: ``python -m reports build RUN_DIR... --out DIR``.

``load`` checks the run directories, ``aggregate`` groups the records (one set of SQL queries, run by
``spark_sql`` on Spark or by ``duckdb_sql`` in this process), ``distributions``, ``stats`` and
``matrix`` derive the statistics and the compatibility matrix, and ``render_html``, ``render_markdown``
and ``summary`` write report.html, report.md and summary.json. pyspark, DuckDB and matplotlib are
imported only when used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reports.build import Built, build_report
    from reports.errors import ReportError
    from reports.load import Records, load_records

__all__ = ["Built", "Records", "ReportError", "build_report", "load_records"]

_HOMES = {
    "Built": "reports.build",
    "build_report": "reports.build",
    "ReportError": "reports.errors",
    "Records": "reports.load",
    "load_records": "reports.load",
}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use: `python -m reports` loads this package before its
    signal handling is on, and the report builder takes most of a second to import."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
