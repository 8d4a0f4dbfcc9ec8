"""Spark reports built from recorded cases: ``python -m reports build RUN_DIR... --out DIR``.

``load`` checks the run directories, ``aggregate`` groups the records (one set of SQL queries, run by
``spark_sql`` on Spark or by ``duckdb_sql`` in this process), ``distributions``, ``stats`` and
``matrix`` derive the statistics and the compatibility matrix, and ``render_html``, ``render_markdown``
and ``summary`` write report.html, report.md and summary.json. pyspark, DuckDB and matplotlib are
imported only when used.
"""

from __future__ import annotations

from reports.build import Built, build_report
from reports.errors import ReportError
from reports.load import Records, load_records

__all__ = ["Built", "Records", "ReportError", "build_report", "load_records"]
