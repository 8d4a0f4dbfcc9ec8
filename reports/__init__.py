"""Spark reports built from recorded cases: ``python -m nats_conformance.reports build RUN_DIR... --out DIR``.

``records.load`` checks the run directories, ``records.queries`` groups the records (one set of SQL
queries, run by ``records.spark_sql`` on Spark or by ``records.duckdb_sql`` in this process: the query
layer the suites read records through too), ``distributions``, ``stats`` and ``matrix`` derive the
statistics and the compatibility matrix, and ``render_html``, ``render_markdown`` and ``summary`` write
report.html, report.md and summary.json. pyspark, DuckDB and matplotlib are imported only when used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nats_conformance.records.errors import ReportError
    from nats_conformance.records.load import Records, load_records
    from nats_conformance.reports.build import Built, build_report

__all__ = ["Built", "Records", "ReportError", "build_report", "load_records"]

_HOMES = {
    "Built": "nats_conformance.reports.build",
    "build_report": "nats_conformance.reports.build",
    "ReportError": "nats_conformance.records.errors",
    "Records": "nats_conformance.records.load",
    "load_records": "nats_conformance.records.load",
}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use: `python -m nats_conformance.reports` loads this package before
    its signal handling is on, and the report builder takes most of a second to import."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
