"""Ctrl-C or SIGTERM while Spark starts or aggregates a report ends `python -m nats_conformance.reports build`
at once with its one line (exit 130 or 143): no py4j, pyspark or JVM output, no wait for the Spark jobs, no
JVM left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

BUSY_REPORT = """
import os, runpy, sys
import pyspark.java_gateway
import nats_conformance.records.spark_sql

jvm, said = [], []

def say():
    \"\"\"Give the JVM's process id on the pipe.\"\"\"
    os.write({fd}, b"%d\\n" % jvm[0].pid)

def busy(spark):
    \"\"\"Say so on the pipe, then run a Spark job of days.\"\"\"
    say()
    spark.range(10**15).selectExpr("sum(id % 7)").collect()

read_records = nats_conformance.records.spark_sql.read_records
aggregate_family = nats_conformance.records.spark_sql._run

def busy_reading(spark, paths):
    busy(spark)
    return read_records(spark, paths)

def busy_aggregating(spark, family):
    if family is nats_conformance.records.spark_sql.FAMILIES[0]:
        busy(spark)
    return aggregate_family(spark, family)

popen = pyspark.java_gateway.Popen

def noted(*args, **kwargs):
    \"\"\"Start the JVM; when starting, say so on the pipe once pyspark waits for it to start (its
    first poll, after whatever wraps this returned).\"\"\"
    jvm.append(popen(*args, **kwargs))
    poll = jvm[-1].poll

    def waiting():
        if {where!r} == "starting" and not said:
            said.append(say())
        return poll()

    jvm[-1].poll = waiting
    return jvm[-1]

pyspark.java_gateway.Popen = noted
if {where!r} == "main thread":
    nats_conformance.records.spark_sql.read_records = busy_reading
else:
    nats_conformance.records.spark_sql._run = busy_aggregating
sys.argv = ["nats_conformance.reports", *{argv!r}]
runpy.run_module("nats_conformance.reports", run_name="__main__", alter_sys=True)
"""
"""`python -m nats_conformance.reports ARGV...` with a Spark job that does not end, run by the main thread
(which the signal interrupts in a py4j call) or by the thread aggregating the first family (the main thread
waits); it gives the JVM's process id on a pipe when the job starts, or when the JVM starts ("starting": the
signal comes while Spark starts)."""
STOP_SECONDS = 8
"""How long the command may take to end once signalled (it took 10.8 s)."""


INT = (signal.SIGINT, (130, "interrupted"))
TERM = (signal.SIGTERM, (143, "terminated"))


RACES_THE_JVM = pytest.mark.nightly
"""A signal while Spark starts races the JVM's own start: on a loaded machine the JVM once outlived the
command by a minute (a CI-style run beside a campaign), so these run in the scheduled workflow, not in
every change's run, until the race is closed."""


@pytest.mark.parametrize(
    ("where", "number", "ending"),
    [
        pytest.param("starting", *INT, marks=RACES_THE_JVM),
        pytest.param("starting", *TERM, marks=RACES_THE_JVM),
        ("main thread", *INT),
        ("main thread", *TERM),
        ("worker thread", *INT),
    ],
)
def test_a_signal_while_spark_runs_ends_the_report_with_one_line_at_once(
    where: str, number: int, ending: tuple[int, str], hand_run: Path, tmp_path: Path
) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    read, write = os.pipe()
    argv = [
        "build",
        str(hand_run),
        "--out",
        str(tmp_path / "out"),
        "--engine",
        "spark",
        "--master",
        "local[2]",
    ]
    said = b""
    # Files, not pipes: a JVM left running would hold a pipe open after the command ended.
    with (tmp_path / "stderr").open("w+") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", BUSY_REPORT.format(fd=write, argv=argv, where=where)],
            cwd=ROOT,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
            pass_fds=[write],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        os.close(write)
        try:
            with os.fdopen(read, "rb") as ready:
                said = ready.readline()
            assert said, "Spark never started or aggregated"
            process.send_signal(number)
            signalled = time.monotonic()
            process.wait(timeout=120)
            took = time.monotonic() - signalled
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            stderr.seek(0)
            err = stderr.read()
            deadline = time.monotonic() + 60
            while said and running(int(said)) and time.monotonic() < deadline:
                time.sleep(0.2)
            jvm_left = bool(said) and running(int(said))
            if jvm_left:
                os.kill(int(said), signal.SIGKILL)
    status, line = ending
    assert process.returncode == status, err
    lines = [text for text in err.splitlines() if not text.startswith("reports: ")]
    assert lines == [f"nats-conformance: {line}"], err
    assert took < STOP_SECONDS
    assert not jvm_left, "the JVM outlived the command by a minute"


def running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not: nothing may reap an orphan in a container)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
