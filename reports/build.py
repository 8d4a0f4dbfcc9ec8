"""One report build: check the records, aggregate them (Spark by default), write the three outputs.

Outputs in the ``out`` directory: ``report.html`` (self-contained, with plots), ``report.md`` (for a
pull-request comment) and ``summary.json`` (for machines).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from nats_conformance.records.aggregates import Aggregates
from nats_conformance.records.errors import ReportError
from nats_conformance.records.expectations import Expectation, load_expectations
from nats_conformance.records.files import replace_text
from nats_conformance.records.load import Records, corruption_named, load_records
from nats_conformance.records.spark import DEFAULT_MASTER, check_master
from nats_conformance.reports.render_html import render_html
from nats_conformance.reports.render_markdown import render_markdown
from nats_conformance.reports.report import Report, assemble
from nats_conformance.reports.summary import summary_json

ENGINES: Final = ("spark", "duckdb")
HTML, MARKDOWN, SUMMARY = "report.html", "report.md", "summary.json"


def default_engine() -> str:
    """Spark when pyspark is importable (the `spark` extra), else DuckDB (a core dependency)."""
    return "spark" if importlib.util.find_spec("pyspark") is not None else "duckdb"


@dataclass(frozen=True, slots=True)
class Built:
    html: Path
    markdown: Path
    summary: Path


def check_engine(engine: str, master: str) -> None:
    """Raise `ReportError` for an engine or Spark master the build cannot use."""
    if engine not in ENGINES:
        raise ReportError(f"'engine' must be one of {', '.join(ENGINES)} (got {engine!r})")
    if engine == "spark":
        check_master(master)


def aggregate_groups(
    groups: Sequence[Records], engine: str, master: str, say: Callable[[str], None]
) -> list[Aggregates]:
    """The aggregates of each group of runs, with the report's SQL rules on `engine` (one Spark
    session for all of them)."""
    if engine == "duckdb":
        from nats_conformance.records import duckdb_sql

        say("aggregating with DuckDB")
        with corruption_named([part for group in groups for part in group.parts]):
            return [
                duckdb_sql.aggregate([str(p) for p in group.parts], rows=group.rows, progress=say)
                for group in groups
            ]
    from nats_conformance.records.spark import spark_errors, spark_session
    from nats_conformance.records.spark_sql import aggregate

    say(f"starting Spark ({master})")
    with spark_session(master) as spark:
        say("aggregating with Spark")
        with spark_errors("while aggregating the records"):
            return [
                aggregate(spark, [str(p) for p in group.parts], rows=group.rows, progress=say)
                for group in groups
            ]


def with_expectations(report: Report, entries: Sequence[Expectation]) -> Report:
    """The report with each expectation's link (`Report.links`)."""
    return replace(report, links={entry.id: entry.link for entry in entries if entry.link})


def timed(progress: Callable[[str], None]) -> Callable[[str], None]:
    """`progress` with the seconds since now before each line."""
    began = time.monotonic()

    def say(line: str) -> None:
        progress(f"[{time.monotonic() - began:5.1f}s] {line}")

    return say


def build_report(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    master: str = DEFAULT_MASTER,
    engine: str = "spark",
    progress: Callable[[str], None] = lambda line: None,
    expectations: Path | None = None,
) -> Built:
    """Build the report of the runs in ``run_dirs`` into ``out``; each expectation it shows carries
    the link of its entry in ``expectations`` (an expectations file), when given. A mutants run folder
    among them adds its section; with no case run, nothing is aggregated.

    Raises:
        ReportError: bad input (see ``records.load``), a Spark failure, or an unwritable ``out``.
    """
    check_engine(engine, master)
    say = timed(progress)
    records = load_records(list(run_dirs), mutants=True)
    if records.mutants:
        say(f"{len(records.mutants)} mutants run(s)")
    aggregates = Aggregates(0, (), (), (), ())  # mutants runs only: nothing to aggregate
    if records.runs:
        parts, runs = len(records.parts), len(records.runs)
        say(f"{records.rows:,} case records in {parts} part file(s) of {runs} run(s)")
        (aggregates,) = aggregate_groups([records], engine, master, say)
    say("computing statistics and the compatibility matrix")
    report = assemble(records, aggregates)
    if expectations is not None:
        report = with_expectations(report, load_expectations(expectations).entries)
    say("rendering HTML, Markdown and summary.json")
    built = Built(out / HTML, out / MARKDOWN, out / SUMMARY)
    texts = {
        built.html: render_html(report),
        built.markdown: render_markdown(report),
        built.summary: summary_json(report),
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in texts.items():
            replace_text(path, text)
    except OSError as error:
        raise ReportError(f"cannot write the report to {out}: {error.strerror or error}") from error
    say(f"wrote {built.html}, {built.markdown.name} and {built.summary.name}")
    return built
