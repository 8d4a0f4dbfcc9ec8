"""``summary.json``: the report for machines. Infinite or undefined numbers are written as null.

Top-level keys: ``format`` (this layout's version), ``records_schema``, ``generated`` (Unix seconds),
``distribution_builds`` (each release a distribution built, ``2.9.10+debian.1.b3``, and what built it),
``runs`` (each with its ``judgements``: adapter targets judged by a release's engine,
``records.judgement``), ``complete``, ``banner`` (``Report.banner``), ``conforms_to`` (the releases the
report conforms to, ``Report.conforms_to``; empty when it does not), ``rows``, ``releases``,
``verdicts`` (totals),
``verdict_counts`` (per release, feature, function combination and verdict), ``divergence_classes``,
``partition``, ``weighted``, ``matrix`` and ``bisections`` (the release bisections of runs written by
``python -m nats_conformance.suites bisect``), ``changes`` (classes that appeared, disappeared or changed
verdict between consecutive releases, ``reports.changes``), ``coverage`` (each run's coverage of
nats-server's mapping code, from ``nats-conformance coverage``: figures per file and function, unreached
blocks), ``unknown`` (per release: its cases, those unknown that ``--max-unknown`` counts, their share and
every unknown case per reason, ``reports.unknowns``), ``unknown_reasons`` (each listed reason and what
it means, ``records.unknowns.REASONS``), ``implementations`` (each implementation judged through an
adapter, per operation: counts, agree share, the function that answered, divergence classes with their
smallest case and replay line, ``reports.implementations``) and ``mutants`` (each run of
``nats-conformance mutants`` given, as ``records.mutants.MutantsRun``: figures in total, per file and per
function, survivors with their diff, unreached mutants, wrong equivalence entries).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Final

from nats_conformance.records.bisection import ReleaseBisection
from nats_conformance.records.coverage import ReleaseCoverage
from nats_conformance.records.releases import Release
from nats_conformance.records.schema import SCHEMA_VERSION
from nats_conformance.records.unknowns import REASONS, UnknownShare
from nats_conformance.reports.changes import Change, Showing
from nats_conformance.reports.distributions import PartitionDistribution, WeightedShares
from nats_conformance.reports.implementations import Implementation
from nats_conformance.reports.matrix import Matrix
from nats_conformance.reports.report import Divergence, Report

FORMAT: Final = 1


def number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def release_text(release: Release | None) -> str | None:
    return None if release is None else release.label


def divergence(item: Divergence) -> dict[str, Any]:
    feature, functions, difference = item.parts
    return {
        "case_class": item.case_class,
        "feature": feature,
        "functions": functions,
        "difference": difference,
        "diverge": item.diverge,
        "expected": item.expected,
        "releases": [release.label for release in item.releases],
        "first_release": item.first_release.label,
        "last_release": item.last_release.label,
        "not_on": [release.label for release in item.not_on],
        "expectations": list(item.expectations),
        "oracle": dict(item.oracles),
        "smallest": asdict(item.smallest),
        "replay": item.replay,
    }


def mapping(item: PartitionDistribution | WeightedShares) -> dict[str, Any]:
    """The release and mapping a distribution is of, as both kinds' objects start."""
    return {"release": item.release.label, "source": item.source, "destination": item.destination}


def partition(item: PartitionDistribution) -> dict[str, Any]:
    return {
        **mapping(item),
        "partitions": item.partitions,
        "keys": item.keys,
        "outside": item.outside,
        "counts": {str(bucket): count for bucket, count in sorted(item.counts.items())},
        "chi_square": None if item.fit is None else number(item.fit.statistic),
        "dof": None if item.fit is None else item.fit.dof,
        "p_value": None if item.fit is None else item.fit.p_value,
        "uniform": None if item.fit is None else not item.fit.rejected,
        "max_min_ratio": number(item.ratio),
    }


def weighted(item: WeightedShares) -> dict[str, Any]:
    return {
        **mapping(item),
        "messages": item.messages,
        "loss_rate": number(item.loss_rate),
        "consistent": item.consistent,
        "problem": item.problem,
        "shares": [
            {
                "category": share.category,
                "label": share.label,
                "expected": share.expected,
                "count": share.count,
                "observed": number(share.observed),
                "low": share.low,
                "high": share.high,
                "consistent": share.consistent,
            }
            for share in item.shares
        ],
    }


def matrix(item: Matrix) -> dict[str, Any]:
    return {
        "implementation": item.implementation,
        "releases": [release.label for release in item.releases],
        "rows": [
            {
                "kind": row.kind,
                "name": row.name,
                "first_documented": release_text(row.first_documented),
                "cells": {
                    release.label: {
                        "state": cell.state,
                        "agree": cell.tally.agree,
                        "diverge": cell.tally.diverge,
                        "expected": cell.tally.expected,
                        "unknown": cell.tally.unknown,
                    }
                    for release, cell in zip(item.releases, row.cells, strict=True)
                },
            }
            for row in item.rows
        ],
    }


def coverage(item: ReleaseCoverage) -> dict[str, Any]:
    """A run's coverage as its file has it, each unreached block without its source (which the file
    and the HTML report keep)."""
    return {
        "run_id": item.run_id,
        "release": item.release,
        "counter_files": item.counter_files,
        "engine": item.engine,
        "restarts": item.restarts,
        "statements": item.statements,
        "covered": item.covered,
        "unreachable": item.unreachable,
        "files": [asdict(figure) for figure in item.files],
        "functions": [asdict(figure) for figure in item.functions],
        "missing": list(item.missing),
        "unreached": [
            {key: value for key, value in asdict(block).items() if key != "source"}
            for block in item.unreached
        ],
    }


def bisection(item: ReleaseBisection) -> dict[str, Any]:
    result = item.result
    return {
        "run_id": item.run_id,
        "case_class": item.case_class,
        "feature": item.feature,
        "source": item.source,
        "destination": item.destination,
        "subject": item.subject,
        "backend": item.backend,
        "found_on": result.found_on,
        "first": result.first,
        "last": result.last,
        "absent_before": result.absent_before,
        "absent_after": result.absent_after,
        "unknown_before": list(result.unknown_before),
        "unknown_after": list(result.unknown_after),
        "probes": [asdict(probe) for probe in result.probes],
        "releases": list(result.releases),
        "assumption": item.assumption,
    }


def showing(item: Showing | None) -> dict[str, Any] | None:
    if item is None:
        return None
    return {
        "verdict": item.verdict,
        "diverge": item.diverge,
        "expected": item.expected,
        "expectations": list(item.expectations),
    }


def change(item: Change) -> dict[str, Any]:
    return {
        "from": item.before.label,
        "to": item.after.label,
        "kind": item.kind,
        "case_class": item.case_class,
        "feature": item.feature,
        "functions": item.functions,
        "difference": item.difference,
        "expectations": list(item.expectations),
        "before": showing(item.was),
        "after": showing(item.now),
        "text": item.text(),
        "evidence": item.evidence,
    }


def unknown(item: UnknownShare) -> dict[str, Any]:
    return {**asdict(item), "release": item.release.label, "share": item.share, "reasons": dict(item.reasons)}


def summary(report: Report) -> dict[str, Any]:
    """The whole report as plain JSON values."""
    counts: Counter[tuple[str, str, str, str, str]] = Counter()
    for item in report.verdict_counts:
        key = (item.release.implementation, item.release.version, item.feature, item.functions, item.verdict)
        counts[key] += item.count
    return {
        "format": FORMAT,
        "records_schema": SCHEMA_VERSION,
        "generated": report.generated,
        "runs": [
            {**asdict(run), "judgements": [item.describe() for item in run.judgements]} for run in report.runs
        ],
        "complete": report.complete,
        "banner": report.banner(),
        "conforms_to": list(report.conforms_to),
        "rows": report.rows,
        "releases": [release.label for release in report.releases],
        "distribution_builds": {release.label: release.note for release in report.releases if release.note},
        "verdicts": report.verdicts,
        "verdict_counts": [
            {
                "implementation": implementation,
                "server_version": version,
                "feature": feature,
                "functions": functions,
                "verdict": verdict,
                "count": count,
            }
            for (implementation, version, feature, functions, verdict), count in counts.items()
        ],
        "divergence_classes": [divergence(item) for item in report.divergences],
        "partition": [partition(item) for item in report.partitions],
        "weighted": [weighted(item) for item in report.weighted],
        "matrix": [matrix(item) for item in report.matrices],
        "contexts": [matrix(item) for item in report.contexts],
        "bisections": [bisection(item) for item in report.bisections],
        "changes": [change(item) for item in report.changes],
        "changes_paired": report.changelog.paired,
        "changes_not_drawn": report.changelog.not_drawn,
        "coverage": [coverage(item) for item in report.coverages],
        "unknown": [unknown(item) for item in report.unknowns],
        "unknown_reasons": dict(REASONS),
        "implementations": implementations_json(report.implementations),
        "mutants": [asdict(run) for run in report.mutants],
    }


def summary_json(report: Report) -> str:
    """As JSON text; ASCII, so that a value holding bytes that are not UTF-8 (a lone surrogate escape)
    is written as its `\\udcNN` escape, which reads back as the same text."""
    return json.dumps(summary(report), indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def implementations_json(items: Sequence[Implementation]) -> list[dict[str, Any]]:
    return [
        {
            "implementation": item.name,
            "profile": item.release.version,
            "language": item.language,
            "package": item.package,
            "pinned": item.pinned,
            "docs": item.docs,
            "not_asked": list(item.not_asked),
            "operations": [
                {
                    "operation": row.operation,
                    "asked": row.asked,
                    "function": row.function,
                    "agree": row.agree,
                    "diverge": row.diverge,
                    "expected": row.expected,
                    "unknown": row.unknown,
                    "agree_share": row.agree_share,
                    "classes": [
                        {
                            "case_class": found.case_class,
                            "diverge": found.diverge,
                            "expected": found.expected,
                            "expectations": list(found.expectations),
                            "smallest": found.question,
                            "documents": found.expected_answer,
                            "library": found.observed_answer,
                            "replay": found.replay,
                        }
                        for found in row.classes
                    ],
                }
                for row in item.rows
            ],
        }
        for item in items
    ]
