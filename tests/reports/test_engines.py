"""The aggregations of both engines on hand-built records (tests/reports/handmade.py), counted by hand.

The DuckDB engine is checked against the hand counts; the Spark engine must return exactly the same
aggregates (one shared session, a few hundred rows).
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from handmade import LOSS_LIST, PARTITION_DESTINATION, WEIGHTED_LIST, case

from nats_conformance.records import duckdb_sql
from nats_conformance.records.aggregates import (
    EXERCISED,
    UNCLASSIFIED,
    UNSUPPORTED,
    Aggregates,
    BucketCount,
    WeightedCount,
)
from nats_conformance.records.load import load_records
from nats_conformance.records.owners import OWNER, process_identity
from nats_conformance.records.releases import Release
from nats_conformance.records.schema import (
    CRASH_UNCONFIRMED,
    DELIVERED,
    LOST,
    NOT_SUPPORTED,
    REFUSED,
    UNCHANGED,
    Case,
)
from nats_conformance.records.spark import SCRATCH_PREFIX, spark_session
from nats_conformance.records.unknowns import (
    ADAPTER_FAILED,
    SERVER_DIED,
    TIMEOUT,
    UNLISTED,
    stated,
    unknown_shares,
)
from nats_conformance.reports.report import divergences

OLD = Release("nats-server", "2.9.25")
NEW = Release("nats-server", "2.10.27")


def duckdb_aggregates(run: Path) -> Aggregates:
    records = load_records([run])
    return duckdb_sql.aggregate([str(p) for p in records.parts], rows=records.rows)


def verdict_table(aggregates: Aggregates) -> dict[tuple[str, str, str, str, str], int]:
    return {
        (v.release.version, v.feature, v.functions, v.verdict, v.evidence): v.count
        for v in aggregates.verdicts
    }


def test_verdict_counts_per_release_feature_function_verdict_and_evidence(hand_run: Path) -> None:
    table = verdict_table(duckdb_aggregates(hand_run))
    assert table == {
        ("2.9.25", "mapping", "wildcard", "agree", EXERCISED): 3,
        ("2.9.25", "mapping", "splitFromLeft", "diverge", EXERCISED): 1,
        ("2.9.25", "matching", "", "agree", EXERCISED): 2,
        ("2.9.25", "validation", "random", "agree", UNSUPPORTED): 2,
        ("2.9.25", "validation", "left", "agree", UNSUPPORTED): 1,
        ("2.10.27", "mapping", "wildcard", "agree", EXERCISED): 2,
        ("2.10.27", "mapping", "wildcard", "unknown", ""): 1,
        ("2.10.27", "mapping", "splitFromLeft", "diverge", EXERCISED): 1,
        ("2.10.27", "validation", "left", "expected", ""): 1,
        ("2.10.27", "validation", "random", "agree", UNSUPPORTED): 1,
        # 60 keys + 10 repeats + 1 not delivered + 1 summary row
        ("2.10.27", "partition", "wildcard+partition", "agree", EXERCISED): 72,
        ("2.10.27", "partition", "wildcard+partition", "unknown", ""): 1,
        # 100 + 100 messages + 1 summary row
        ("2.10.27", "weighted", "", "agree", EXERCISED): 201,
        ("2.10.27", "weighted", "", "unknown", ""): 1,
    }
    assert sum(table.values()) == 290


def test_divergence_classes_with_counts_releases_and_smallest_case(hand_run: Path) -> None:
    classes = {c.case_class: c for c in duckdb_aggregates(hand_run).classes}
    assert set(classes) == {
        "mapping:splitFromLeft:wrong-subject",
        "validation:left:reference-accept-server-reject",
    }
    split = classes["mapping:splitFromLeft:wrong-subject"]
    assert (split.diverge, split.expected, split.expectations) == (2, 0, ())
    assert split.releases == (OLD, NEW)
    # 3 + 24 + 4 characters on 2.10.27 against 3 + 29 + 8 on 2.9.25
    assert (split.smallest.server_version, split.smallest.subject) == ("2.10.27", "m.ab")
    left = classes["validation:left:reference-accept-server-reject"]
    assert (left.diverge, left.expected, left.releases, left.expectations) == (0, 1, (NEW,), ("left-right",))


def test_partition_buckets_count_distinct_keys_and_skip_summary_and_unknown_rows(hand_run: Path) -> None:
    assert duckdb_aggregates(hand_run).partitions == tuple(
        BucketCount(NEW, "p.*", PARTITION_DESTINATION, 3, bucket, count)
        for bucket, count in ((0, 10), (1, 20), (2, 30), (None, 1))
    )


def test_weighted_counts_by_bucket_and_outcome_skip_summary_and_unknown_rows(hand_run: Path) -> None:
    assert duckdb_aggregates(hand_run).weighted == (
        WeightedCount(NEW, "w.l", LOSS_LIST, 0, DELIVERED, 40),
        WeightedCount(NEW, "w.l", LOSS_LIST, None, LOST, 60),
        WeightedCount(NEW, "w.s", WEIGHTED_LIST, 0, DELIVERED, 55),
        WeightedCount(NEW, "w.s", WEIGHTED_LIST, 1, DELIVERED, 35),
        WeightedCount(NEW, "w.s", WEIGHTED_LIST, None, UNCHANGED, 10),
    )


@pytest.mark.spark
def test_spark_aggregates_equal_the_duckdb_ones(spark: Any, hand_run: Path) -> None:
    from nats_conformance.records.spark_sql import aggregate

    records = load_records([hand_run])
    assert len(records.parts) == 2
    result = aggregate(spark, [str(p) for p in records.parts], rows=records.rows)
    assert result == duckdb_aggregates(hand_run)
    assert sum(v.count for v in result.verdicts) == 290


def test_a_spark_failure_becomes_one_line() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    from pyspark.errors import PySparkException

    from nats_conformance.records.errors import ReportError
    from nats_conformance.records.spark import spark_errors

    expected = pytest.raises(ReportError, match=r"^Spark failed while aggregating: \[X\] first line$")
    with expected, spark_errors("while aggregating"):
        raise PySparkException(message="[X] first line\n  at org.apache.spark...\n")


def test_an_accepted_validation_case_is_evidence_of_support(run_of: Any) -> None:
    """A template that mixes an unsupported function (random on 2.10) with a supported one (split)
    is rejected as unsupported; a split mapping both sides accept shows split is supported there."""
    validation = {"feature": "validation", "subject": "", "server_version": "2.10.27"}
    run = run_of(
        [
            case(case_id=0, functions="random+split", expected="reject:unsupported-function",
                 observed="reject", **validation),
            case(case_id=1, functions="split", expected="accept", observed="accept", **validation),
            case(case_id=2, functions="split", expected="reject:wrong-argument-count", observed="reject",
                 **validation),
        ]
    )  # fmt: skip
    table = verdict_table(duckdb_aggregates(run))
    assert table == {
        ("2.10.27", "validation", "random+split", "agree", UNSUPPORTED): 1,
        ("2.10.27", "validation", "split", "agree", EXERCISED): 1,
        ("2.10.27", "validation", "split", "agree", ""): 1,
    }


def sequence_cases() -> list[Case]:
    """Two cases of one overlap class with the same columns; the second's sequence has fewer steps."""
    steps = ('{"how": "configure", "mappings": [["o.*", "d.$1"]]}', '{"how": "reload", "mappings": []}')
    common = {"feature": "overlap", "functions": "wildcard", "difference": "winner-changed-after-reload"}
    return [
        case(case_id=1, verdict="diverge", steps=(*steps, steps[1]), **common),
        case(case_id=2, verdict="diverge", steps=steps, **common),
    ]


def test_the_smallest_case_of_a_sequence_class_has_the_shortest_steps(
    run_of: Callable[[list[Case]], Path],
) -> None:
    (counted,) = duckdb_aggregates(run_of(sequence_cases())).classes
    assert counted.smallest.case_id == 2


@pytest.mark.spark
def test_spark_picks_the_same_smallest_sequence(spark: Any, run_of: Callable[[list[Case]], Path]) -> None:
    from nats_conformance.records.spark_sql import aggregate

    run = run_of(sequence_cases())
    records = load_records([run])
    assert aggregate(spark, [str(p) for p in records.parts], rows=records.rows) == duckdb_aggregates(run)


def test_a_spark_sessions_scratch_directory_names_its_owner(spark: Any) -> None:
    """The session's scratch directory (spark.local.dir) is a work directory naming this process, so
    that one a driver killed with SIGKILL leaves is removed by the next process that makes one."""
    scratch = Path(spark.conf.get("spark.local.dir"))
    assert scratch.name.startswith(SCRATCH_PREFIX)
    assert (scratch / OWNER).read_text() == process_identity()
    assert scratch.parent == Path(tempfile.gettempdir())


def test_the_session_of_this_process_is_used_from_any_thread_and_left_running(spark: Any) -> None:
    """A thread of its own has no active session (Spark keeps it per thread): the process's session is
    still the one used, and the block does not stop it."""
    counted: list[int] = []

    def count() -> None:
        with spark_session("local[2]") as session:
            counted.append(session.range(3).count())

    thread = threading.Thread(target=count)
    thread.start()
    thread.join()
    assert counted == [3]
    assert not spark.sparkContext._jsc.sc().isStopped()


def test_a_class_is_shown_by_its_stored_parts(run_of: Callable[[list[Case]], Path]) -> None:
    """A class's (feature, functions, difference) are those of its cases, not its text split at colons
    (a difference may hold one); a diverging case with no difference is unclassified."""
    run = run_of(
        [
            case(case_id=1, verdict="diverge", difference="reject:odd"),
            case(case_id=2, feature="weighted", functions="", verdict="diverge", difference="distribution"),
            case(case_id=3, verdict="diverge"),
        ]
    )
    found = {item.case_class: item.parts for item in divergences(duckdb_aggregates(run))}
    assert found == {
        "mapping:wildcard:reject:odd": ("mapping", "wildcard", "reject:odd"),
        "weighted:literal:distribution": ("weighted", "literal", "distribution"),
        UNCLASSIFIED: (UNCLASSIFIED, "", ""),
    }


def reason_cases() -> list[Case]:
    """Unknown cases of 2.10.27 telling each kind of reason (stated in `detail`, told by `difference`,
    none), beside an agreeing case whose detail happens to begin like a stated reason."""
    unknown = {"verdict": "unknown", "difference": "unknown", "server_version": "2.10.27"}
    return [
        case(case_id=0, detail=stated(TIMEOUT, "no PONG from the server in time"), **unknown),
        case(case_id=1, detail=stated(SERVER_DIED, "server restarted after: gone (it had died)"), **unknown),
        case(case_id=2, detail=stated(SERVER_DIED, "gone"), **{**unknown, "difference": CRASH_UNCONFIRMED}),
        case(case_id=3, detail="no reply to $JS.API.INFO within 5.0s", **unknown),  # before reasons
        case(case_id=4, detail="timeout:without its space", **unknown),
        case(case_id=5, **{**unknown, "difference": NOT_SUPPORTED}),
        case(case_id=6, detail="not published", **{**unknown, "difference": REFUSED}),
        case(case_id=7, detail=stated(TIMEOUT, "an agreeing case says nothing of it"), verdict="agree",
             server_version="2.10.27"),
        case(case_id=8, detail=stated(ADAPTER_FAILED, "exited"), **unknown),
    ]  # fmt: skip


REASONS_BY_HAND = {
    ("unknown", TIMEOUT): 1,
    ("unknown", SERVER_DIED): 1,
    ("unknown", "crash-unconfirmed"): 1,
    ("unknown", UNLISTED): 2,
    ("unknown", NOT_SUPPORTED): 1,
    ("unknown", REFUSED): 1,
    ("unknown", ADAPTER_FAILED): 1,
    ("agree", ""): 1,
}


def reasons_of(aggregates: Aggregates) -> dict[tuple[str, str], int]:
    table: dict[tuple[str, str], int] = {}
    for item in aggregates.verdicts:
        table[(item.verdict, item.reason)] = table.get((item.verdict, item.reason), 0) + item.count
    return table


def test_each_unknown_row_has_the_reason_its_detail_states_or_its_difference_tells(
    run_of: Callable[[list[Case]], Path],
) -> None:
    aggregates = duckdb_aggregates(run_of(reason_cases()))
    assert reasons_of(aggregates) == REASONS_BY_HAND
    (share,) = unknown_shares(aggregates.verdicts)
    # an adapter's unsupported question and an old run's refused subject are not counted as unknown
    assert (share.cases, share.unknown) == (9, 6)
    assert share.reasons == (
        (TIMEOUT, 1), (SERVER_DIED, 1), (ADAPTER_FAILED, 1), ("crash-unconfirmed", 1), (NOT_SUPPORTED, 1),
        (REFUSED, 1), (UNLISTED, 2),
    )  # fmt: skip


@pytest.mark.spark
def test_spark_tells_the_same_reasons(spark: Any, run_of: Callable[[list[Case]], Path]) -> None:
    from nats_conformance.records.spark_sql import aggregate

    run = run_of(reason_cases())
    records = load_records([run])
    result = aggregate(spark, [str(p) for p in records.parts], rows=records.rows)
    assert result == duckdb_aggregates(run)
    assert reasons_of(result) == REASONS_BY_HAND
