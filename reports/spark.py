"""The one place a SparkSession is built (pyspark is imported here, lazily, and nowhere at import time).

``local[*]`` by default; any master URL by option, so the same job runs on a laptop and on a cluster.
For a local master the driver binds to 127.0.0.1 (``SPARK_LOCAL_IP``, ``spark.driver.host`` and
``spark.driver.bindAddress``; Spark binds elsewhere otherwise, observed on our CI machines) and uses few
shuffle partitions, since every result is small. The UI and the console progress bar are off and the
JVM logs only fatal errors (failures reach the user as one line). On a cluster, run directories
must be readable by the executors at the same path.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from records.schema import ARROW_TYPES, COLUMNS
from reports.errors import ReportError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MASTER = "local[*]"
APP_NAME = "nats-conformance-reports"
LOCAL_SHUFFLE_PARTITIONS = 4
LOCAL_MEMORY = "2g"
"""Heap of a local driver (Spark's default, 1g, runs out on ten million records' distinct keys)."""
JAVA_OPTIONS = (
    "-XX:+UseParallelGC -XX:Tier4InvocationThreshold=50000 -XX:Tier4CompileThreshold=60000 "
    "-XX:Tier4BackEdgeThreshold=400000"
)
"""The throughput collector: the report is a batch job, and pauses cost nothing (Spark's JVM default, G1,
spends cores on concurrent collection). The optimising compiler (C2) takes only methods called or looping
ten times as often as by default (5,000 calls, 40,000 iterations): on two cores its thread took as much
CPU as the tasks of a 10M-record report (12.6 s against 10.2 s), and the fast compiler's code serves
the rest; a long job still gets C2 code."""
HASH_AGGREGATE_GROUPS = 100_000
"""Groups an aggregation into lists (``array_agg``) keeps in a hash map before it falls back to sorting
its input (``spark.sql.objectHashAggregate.sortBased.fallbackThreshold``, 128 by default): the partition
buckets are a few thousand groups, and sorting their rows cost as much as ``count(DISTINCT)``."""
LOG4J = """\
rootLogger.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = fatal
"""
"""Fatal errors only: a failed job reaches the user as one line (`spark_errors`), not as the stack traces
Spark logs on the way. pyspark's gateway counts as an interpreter, whose own logger level Spark
announces when it differs from the root's: configured equal, it stays quiet."""


PANDAS_WARNING = "PySpark does not yet fully support pandas"
"""pyspark 4.3 warns about pandas 3 on first use; the reports use no pandas interoperation of Spark."""


MASTER = re.compile(r"local(\[[0-9*]+(,[0-9]+)?\])?|local-cluster\[[0-9, ]+\]|yarn|(spark|k8s)://\S+")
"""Master URLs Spark accepts."""


def check_master(master: str) -> str:
    """``master`` if Spark accepts it.

    Raises:
        ReportError: any other text, before a JVM is started for it.
    """
    if not MASTER.fullmatch(master):
        raise ReportError(
            f"'--master' must be local[*], local[N], spark://HOST:PORT, k8s://URL or yarn (got {master!r})"
        )
    return master


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


@contextmanager
def spark_session(master: str = DEFAULT_MASTER, *, app: str = APP_NAME) -> Iterator[SparkSession]:
    """A started session for ``master`` named ``app``, stopped on exit; a session already active in
    this process (started by someone else, e.g. a test fixture) is used as it is and left running.

    Raises:
        ReportError: pyspark is not installed, or Spark (Java) cannot start.
    """
    check_master(master)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", PANDAS_WARNING, FutureWarning)
        try:
            from pyspark.errors import PySparkException
            from pyspark.sql import SparkSession
        except ImportError as error:
            raise ReportError(
                "the spark engine needs pyspark: pip install 'nats-conformance[spark]', "
                "or use --engine duckdb"
            ) from error
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    with tempfile.TemporaryDirectory(prefix="nats-conformance-spark-") as scratch:
        log4j = Path(scratch) / "log4j2.properties"
        log4j.write_text(LOG4J)
        builder = (
            SparkSession.builder.master(master)
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config(
                "spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={log4j.as_uri()} {JAVA_OPTIONS}",
            )
            .config("spark.local.dir", scratch)
            .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(HASH_AGGREGATE_GROUPS))
        )
        if is_local(master):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = (
                builder.config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
                .config("spark.driver.memory", LOCAL_MEMORY)
            )
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", PANDAS_WARNING, FutureWarning)
                session = builder.getOrCreate()
        except (PySparkException, OSError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ReportError(
                f"cannot start Spark with master {master} (is Java 17 installed?): {first}"
            ) from error
        session.sparkContext.setLogLevel("FATAL")
        try:
            yield session
        finally:
            session.stop()


@contextmanager
def spark_errors(what: str) -> Iterator[None]:
    """Spark and JVM failures inside the block as one-line `ReportError`s saying what failed."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JError) as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        raise ReportError(f"Spark failed {what}: {lines[0] if lines else type(error).__name__}") from error


def spark_type(kind: Any) -> Any:
    """The Spark type of an Arrow type of the records (scalars, lists and structs of them)."""
    import pyarrow as pa
    from pyspark.sql import types as T

    if pa.types.is_list(kind):
        item = kind.value_field
        return T.ArrayType(spark_type(item.type), item.nullable)
    if pa.types.is_struct(kind):
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable) for f in kind])
    scalars = {
        pa.string(): T.StringType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.bool_(): T.BooleanType(),
    }
    return scalars[kind]


def spark_schema() -> object:
    """The records' Spark schema, from ``records.schema.ARROW_TYPES``."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(name, spark_type(ARROW_TYPES[name]), False) for name in COLUMNS])


def read_records(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """All part files as one DataFrame with the records schema (no schema inference)."""
    return spark.read.schema(spark_schema()).parquet(*paths)  # type: ignore[arg-type]
