"""The one place a SparkSession is built (pyspark is imported here, lazily, and nowhere at import time).

``local[*]`` by default; any master URL by option, so the same job runs on a laptop and on a cluster.
For a local master the driver binds to 127.0.0.1 (``SPARK_LOCAL_IP``, ``spark.driver.host`` and
``spark.driver.bindAddress``; Spark binds elsewhere otherwise, observed on our CI machines) and uses few
shuffle partitions, since every result is small. The UI and the console progress bar are off and the
JVM logs only fatal errors (failures reach the user as one line). On a cluster, run directories
must be readable by the executors at the same path.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import re
import shutil
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nats_conformance.records.errors import ReportError
from nats_conformance.records.load import upgraded
from nats_conformance.records.owners import children, make_workdir
from nats_conformance.records.schema import ARROW_TYPES, COLUMNS, NULLABLE
from nats_conformance.reference.errors import interruption

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


JVM_LOG = "jvm.log"
"""The standard error of the session's JVM, in its scratch directory (`_stderr_to`)."""
SCRATCH_PREFIX = "nats-conformance-spark-"
"""How a session's scratch directory (`spark.local.dir`, its log settings and JVM log) is named."""
JVM_WARNING = "WARNING: Using incubator modules: jdk.incubator.vector"
"""What the JVM of Spark 4 says as it starts, whatever happens next."""
SPARK_LOGGERS = ("py4j", "pyspark", "SQLQueryContextLogger", "DataFrameQueryContextLogger")
"""py4j's and pyspark's loggers: py4j logs every broken call (an interrupted one included) with its
traceback, pyspark every failed query as JSON; failures reach the user as one line instead."""


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


def why_no_spark() -> str:
    """Why no Spark session can start here ('' when one can): pyspark and a Java runtime are needed."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed"
    if shutil.which("java") is None:
        return "no java is on PATH"
    return ""


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


@contextmanager
def spark_session(
    master: str = DEFAULT_MASTER, *, app: str = APP_NAME, executor_env: Mapping[str, str] | None = None
) -> Iterator[SparkSession]:
    """A started session for ``master`` named ``app``, stopped on exit; a session already active in
    this process (started by someone else, e.g. a test fixture) is used as it is and left running.
    ``executor_env`` is set in the environment of its Python workers (``spark.executorEnv.*``).

    Raises:
        ReportError: pyspark is not installed, or Spark (Java) cannot start.
    """
    check_master(master)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", PANDAS_WARNING, FutureWarning)
        try:
            from pyspark.sql import SparkSession
        except ImportError as error:
            raise ReportError(
                "the spark engine needs pyspark: pip install 'nats-conformance[spark]', "
                "or use --engine duckdb"
            ) from error
    from pyspark import SparkContext

    # Spark keeps the active session per thread (and per py4j connection): whether this process has one
    # is its context's.
    if SparkContext._active_spark_context is not None:
        yield SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        return
    # A work directory naming this process: a driver killed with SIGKILL leaves it, and the next process
    # that makes one removes it (records.owners). It is removed when the session stops, and again when
    # the process exits: the JVM outlives the session, keeps its first session's directory as its local
    # root, and a later session of the process makes its block directories there again.
    # Python workers run this interpreter, which has the suite's packages (PySpark reads only the
    # variable): a later campaign in this process (a test after a report's) gets the session as it is.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    scratch = make_workdir(SCRATCH_PREFIX)
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    with _silenced(), ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, scratch, ignore_errors=True)
        log4j = scratch / "log4j2.properties"
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
            .config("spark.local.dir", str(scratch))
        )
        for name, value in (executor_env or {}).items():
            builder = builder.config(f"spark.executorEnv.{name}", value)
        builder = builder.config(
            "spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(HASH_AGGREGATE_GROUPS)
        )
        if is_local(master):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = (
                builder.config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
                .config("spark.driver.memory", LOCAL_MEMORY)
            )
        session = _start(builder, master, scratch / JVM_LOG)
        try:
            yield session
        except BaseException as error:
            if interruption(error):
                _abandon(session)
            raise
        finally:
            _quiet_accumulator_server(session)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the JVM is gone: nothing to stop
                session.stop()


def _start(builder: Any, master: str, jvm_log: Path) -> SparkSession:
    """The session `builder` gets or creates, its JVM's standard error going to `jvm_log`.

    Raises:
        ReportError: Spark (Java) cannot start; the message ends with the JVM's last line, if any.
    """
    from pyspark import SparkContext
    from pyspark.errors import PySparkException

    before = children()
    try:
        with warnings.catch_warnings(), _keeping_sigint(), _stderr_to(jvm_log):
            warnings.filterwarnings("ignore", PANDAS_WARNING, FutureWarning)
            session: SparkSession = builder.getOrCreate()
    except (PySparkException, OSError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        said = [line for line in _lines(jvm_log) if line != JVM_WARNING]
        raise ReportError(
            f"cannot start Spark with master {master} (is Java 17 installed?): {first}"
            + (f" (java: {said[-1]})" if said else "")
        ) from error
    except BaseException as error:
        if interruption(error):
            _kill_gateway(SparkContext, children() - before)
        raise
    session.sparkContext.setLogLevel("FATAL")
    return session


def _kill_gateway(context: Any, started: set[int]) -> None:
    """Kill the processes `started` (the JVM pyspark's gateway launched: this process's children that
    were not there before) and forget the SparkContext's gateway: a JVM interrupted while it starts runs
    on after this process, for good when its main thread fails on the connection file pyspark removed
    (its gateway thread keeps it up, and it reads its standard input, which ends with this process, only
    later)."""
    for pid in started:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(pid, 0)
    context._gateway = context._jvm = None


def _lines(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return []


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Standard error (file descriptor 2) appended to `path` in the block: the JVM Spark starts there
    inherits it, and writes to it as it starts (`JVM_WARNING`) and as it stops, even after this
    process printed its one line and exited (log4j complains that its configuration, in the session's
    scratch directory, is gone)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with path.open("ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def _keeping_sigint() -> Iterator[None]:
    """Keep the SIGINT handler the block found: a SparkContext installs its own, which cancels the
    jobs through the main thread's py4j connection from the signal handler, breaking the call that
    connection was in (py4j logs both), and from then on Ctrl-C is no longer this process's interrupt."""
    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if threading.current_thread() is threading.main_thread() and handler is not None:
            signal.signal(signal.SIGINT, handler)


class _FromSpark(logging.Filter):
    """Drops the records py4j logs on the root logger (``logging.exception``)."""

    def __init__(self, folders: tuple[str, ...]) -> None:
        super().__init__()
        self.folders = folders

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.pathname.startswith(self.folders)


@contextmanager
def _silenced() -> Iterator[None]:
    """py4j's and pyspark's logging off in the block (`SPARK_LOGGERS`)."""
    import py4j  # type: ignore[import-untyped]
    import pyspark
    from pyspark.logger import PySparkLogger

    for name in SPARK_LOGGERS[2:]:
        PySparkLogger.getLogger(name)  # of pyspark's class, as pyspark creates them
    loggers = [logging.getLogger(name) for name in SPARK_LOGGERS]
    levels = [logger.level for logger in loggers]
    folders = tuple(str(Path(package.__file__ or "").parent) + os.sep for package in (py4j, pyspark))
    quiet = _FromSpark(folders)
    root = logging.getLogger()
    root.addFilter(quiet)
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        root.removeFilter(quiet)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _quiet_accumulator_server(session: SparkSession) -> None:
    """Keep the accumulator server from printing the traceback of the update connection the JVM closes
    as it stops ("Exception occurred during processing of request from ...")."""
    server = getattr(session.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: None


def _abandon(session: SparkSession) -> None:
    """Cancel the session's jobs, so the threads waiting on them (and `session.stop`) end at once; an
    error doing so (the connection the interrupt broke) changes nothing to how the command ends."""
    with suppress(Exception), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.sparkContext.cancelAllJobs()


@contextmanager
def spark_errors(what: str) -> Iterator[None]:
    """Spark and JVM failures inside the block as one-line `ReportError`s saying what failed."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JError) as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        shown = lines[0] if lines else type(error).__name__
        if "Traceback (most recent call last):" in lines:  # a Python worker's: its last line says what
            shown = f"{shown} {lines[-1]}"
        raise ReportError(f"Spark failed {what}: {shown}") from error


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

    return T.StructType(
        [T.StructField(name, spark_type(ARROW_TYPES[name]), name in NULLABLE) for name in COLUMNS]
    )


STORED = "stored_records"
"""The view of the part files as stored, which `read_records` reads as the current schema."""


def read_records(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """All part files as one DataFrame of the records schema: read with it (no schema inference; a column
    absent from a file is null), then as the current schema (``records.load.upgraded``)."""
    spark.read.schema(spark_schema()).parquet(*paths).createOrReplaceTempView(STORED)  # type: ignore[arg-type]
    return spark.sql(upgraded(STORED))
