"""The one Spark session factory every job and test uses."""

from __future__ import annotations

import atexit
import datetime as dt
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import time
import zipimport
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from epoch_audit import class_archive, jvm_names, one_partition
from epoch_audit.class_archive import cache_root

log = logging.getLogger(__name__)

T = TypeVar("T")

# Local defaults: tuned for a 2-core laptop/CI box. Never applied to an existing (cluster) session.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # A sort that spilled reads its spill files back all at once, each reader with a 1 MB record
    # buffer and, with read-ahead, two more 1 MB buffers on the heap. With a 1 GB heap a task's sorts
    # spill often (a window's buffer and the next sort in one task spill each other), and at 10^7
    # lines reading back a few hundred spills exhausted the heap (in a timelines write, in the
    # ISR-join check). Without read-ahead a reader holds 1 MB of heap (and a 1 MB direct buffer).
    "spark.unsafe.sorter.spill.read.ahead.enabled": "false",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # Parquet row groups of 32 MB (default 128 MB compressed ≈ 480 MB of bronze rows with their raw
    # text): a task holds a whole row group while it reads a file and another while it writes
    # one, so two tasks at 128 MB plus the write's sort exhausted a 1 GB heap at 10^7 lines.
    "spark.hadoop.parquet.block.size": str(32 * 1024 * 1024),
    # The status store keeps every SQL execution's plan graph and metrics even with the UI off (1000
    # executions by default): the checks' plans are large, and a long session (the test suite, a
    # bench) filled a 6 GB heap with them and spent minutes in full GCs.
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.ui.retainedTasks": "10000",
    # PySpark 4 records the Python call site of every Column and DataFrame call for its error
    # messages: four py4j round trips and a stack walk per call, about 5 s of a samples run's
    # check stage. Python tracebacks still name the line.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}

LOG4J2_CONF = Path(__file__).resolve().parent / "conf" / "log4j2.properties"

# A short run (small inputs, small lake) spends most of its JVM's CPU compiling, not running: on the
# samples (15k lines) the JIT's C2 threads took 112 of 240 CPU seconds and Janino, compiling each
# stage's generated Java, 11 % of the rest, for code that then ran for milliseconds. Without C2
# and without generated code the same run took 166 JVM CPU seconds instead of 271 (results
# identical). A long run keeps both: its hot loops need them.
# C1 alone gets a 48 MB code cache by default; with Delta's classes loaded a short run filled it, and
# the JVM then disabled its compiler for the rest of the run (the check stage took 4× as long).
# A short run allocates fast and keeps little (a live heap of about 200 MB): the parallel collector
# with the whole heap committed from the start and half of it young collects rarely and without
# G1's concurrent threads (samples: about 119 young collections → 29, 5–10 % less JVM CPU).
SHORT_RUN_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseParallelGC -XX:NewRatio=1"
# A long run's collector: the parallel one too, not the JVM's default G1. G1 cuts a 1 GB heap into
# 1 MB regions, and Spark's 1 MB and 4 MB byte buffers (a cached block's serialised chunks, a
# broadcast's pieces, a task's result) are "humongous" there: each takes whole regions, the rest of
# the last one wasted. The check stage at 10^7 lines with a 1 GB heap made 194 humongous-allocation
# collections and a full compaction that left 656 MB, and one run in two died of a heap
# OutOfMemoryError; under the parallel collector the same stage peaked at 485 MB live after its
# full collections, and took 135 s instead of 158.
# Its JIT: each query brings new generated classes (and Janino compiling them), and on two cores the
# C2 threads compete with the tasks: at 10^7 lines they took 64 CPU s of the check stage beside the
# tasks' 86, 30 of the timelines' 75. C1 alone made the tasks slower than it saved; C2 after three
# times the usual counts (CompileThresholdScaling) compiles only what stays hot: 52 CPU s there,
# the stage 2–3 s shorter (the timelines' too).
LONG_RUN_JAVA_OPTIONS = "-XX:+UseParallelGC -XX:CompileThresholdScaling=3"
# A mid-size run (above the short-run limit, below ``spark.c2_min_bytes``) keeps Spark's generated
# code but not C2: at 10^6 lines (666 MB of logs) C2's threads took 24 of the check stage's 118 JVM
# CPU s and 17 of the timelines' 79 while the tasks' own CPU was 14 and 8; with C1 alone the stages
# took 27.8 s against 33.4 and 17.5 against 21.2, the tasks no slower. At 10^7 lines the same
# switch made the check stage's tasks 132 CPU s against 77 (98.5 s against 88.2): C2 pays there.
MID_RUN_JAVA_OPTIONS = "-XX:+UseParallelGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


def short_run_java_options(driver_memory: str) -> str:
    """The short-run JVM options, the heap committed from the start (``-Xms``): ``driver_memory``,
    at most 2 GiB (a larger heap, as the test session's 6 GiB, is not committed whole)."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    text = driver_memory.strip().lower().removesuffix("b")
    size = int(text[:-1]) * units[text[-1]] if text[-1:] in units and text[:-1].isdigit() else None
    if size is None:  # a form the JVM reads otherwise: leave the initial heap to it
        return SHORT_RUN_JAVA_OPTIONS
    return f"{SHORT_RUN_JAVA_OPTIONS} -Xms{driver_memory if size <= 2**31 else '2g'}"


def run_java_options(short_run: bool, driver_memory: str, c2_compiler: bool = True) -> str:
    """The JVM options of a local session we launch: :func:`short_run_java_options`, or a long
    run's (a mid-size run's without the C2 compiler when ``c2_compiler`` is false)."""
    if short_run:
        return short_run_java_options(driver_memory)
    return LONG_RUN_JAVA_OPTIONS if c2_compiler else MID_RUN_JAVA_OPTIONS


# Spark's cache of compiled generated classes, in every run that generates code. It keeps 100 by
# default, and a stage compiles more than that: the check stage at 10^6 lines compiled 929 classes
# (Janino, about 16 ms each, on the threads that plan the queries), 773 of them distinct once the
# cache held them all, and 652 once the codegen stage's number (which differs between queries that
# generate the same code) was left out of the class name. The check stage 37-39 s → 31-34 s.
CODEGEN_CONF: dict[str, str] = {
    "spark.sql.codegen.cache.maxEntries": "4096",
    "spark.sql.codegen.useIdInClassName": "false",
}


SHORT_RUN_CONF: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",  # interpreted expressions: no Janino compile per plan
    one_partition.ONE_PARTITION_INPUTS: "true",  # and joins and unions keep one partition (epoch_audit.one_partition)
    # A join's size estimate multiplies its sides': never above the limit, a short run's shortcut holds.
    "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
    # The code's broadcast hints (for large data) would make a job of each broadcast; ignored here.
    "spark.sql.optimizer.disableHints": "true",
    # A broadcast is a job of its own; over one-partition inputs a sort-merge join needs no shuffle.
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # Reading more than 32 files (a Delta table of a few dozen) listed them in a Spark job of its own
    # (0.3 s each, three a run over data/samples); a short run's few local files list in microseconds.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": str(2**31 - 1),
    # upper() / lower() (request-log error names, Redpanda flags) go through ICU by default, and ICU's
    # first call initialises CollationAwareUTF8String, which title-cases a table of code points: about
    # a second of one task, while the other tasks that reach upper() wait for the class. The JVM's case
    # mappings are the same for the ASCII these columns hold.
    "spark.sql.icu.caseMappings.enabled": "false",
}


def ivy_cache_dir() -> str:
    """Where Spark's Ivy keeps the JVM packages an embedded session fetches (Delta's): outside any
    repository and lake, fetched once per machine. ``EPOCH_AUDIT_CACHE`` moves it."""
    return str(cache_root() / "ivy")


def local_bytes(paths: list[Path | str]) -> int:
    """Bytes of the regular files under ``paths`` on the local disk (remote or missing paths: 0)."""
    total = 0
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            for root, _dirs, files in os.walk(path):
                for name in files:
                    try:
                        total += (Path(root) / name).stat().st_size
                    except OSError:
                        continue
    return total


def store_bytes(uris: list[str]) -> int:
    """Bytes of the objects under S3 ``uris`` (one listing request per thousand objects)."""
    from epoch_audit import objstore

    return sum(size for uri in uris for _, size, _ in objstore.list_files(uri))


def _as_date(value: Any) -> dt.date | None:
    """A partition value as a date (delta-rs gives dates; a string partition value is ISO)."""
    if value is None or isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        return None


# What a bronze row weighs against the short-run limit, in bytes of input log: Parquet holds a row
# in about 70 bytes, its log line was 400 (state) to 1,200 (request log) bytes, and the stages'
# cost follows rows. In `epoch-audit bench-nights` a short night grows with the rows it re-reads and
# a long one stays near flat: 128 put the switch where they met (about 330,000 rows; the seventh
# session). Since a short run reads a long history from its files instead of caching it, a short
# rebuild of night 30 (700,000 rows) took 56-57 s against a long one's 67.6 s, so a row weighs 80:
# the switch comes near 775,000 rows plus a night's files (docs/performance.md).
BRONZE_ROW_BYTES = 80


def bronze_as_input_bytes(events: Path, traffic_lag_minutes: int | None) -> int:
    """The local ``bronze/events`` rows a run reads, weighed as input bytes (``BRONZE_ROW_BYTES``
    a row), from the table's Delta log: every state partition, and per cluster the traffic
    partitions of the event days its carried horizon (``traffic_lag_minutes`` before its latest
    traffic, from the files' ``event_time`` statistics where the log has them, else the whole days
    the lag can reach back from the newest day; None: no carry, all of them) can reach. Files a
    compaction replaced wait on disk for ``maintain``'s vacuum and are never read. No readable log:
    the directory's bytes."""
    if not (events / "_delta_log").is_dir():
        return local_bytes([events])
    try:
        import pyarrow as pa
        from deltalake import DeltaTable

        files = pa.table(DeltaTable(str(events)).get_add_actions(flatten=True)).to_pydict()
    except Exception:  # another writer's log features, a torn log: sized as a directory
        return local_bytes([events])
    sizes = files["size_bytes"]
    rows = files.get("num_records", [None] * len(sizes))
    weights = [size if n is None else n * BRONZE_ROW_BYTES for size, n in zip(sizes, rows, strict=True)]
    classes = files.get("partition.event_class", [None] * len(sizes))
    clusters = files.get("partition.cluster_id", [None] * len(sizes))
    days = [_as_date(d) for d in files.get("partition.event_date", [None] * len(sizes))]
    with_lag = traffic_lag_minutes is not None
    traffic = [c == "traffic" and d is not None and with_lag for c, d in zip(classes, days, strict=True)]
    newest: dict[Any, dt.date] = {}
    for is_traffic, cluster, day in zip(traffic, clusters, days, strict=True):
        if is_traffic:
            newest[cluster] = max(day, newest.get(cluster, day))
    reach = dt.timedelta(days=-(-(traffic_lag_minutes or 0) // 1440))  # whole days, rounded up
    first_day = {c: d - reach for c, d in newest.items()}
    # With the files' time statistics, the horizon's own day: the check stage reads the traffic
    # partitions from it on (epoch_audit.stages.carry.read_check_traffic), not a whole lag's days.
    latest = files.get("max.event_time", [None] * len(sizes))
    lag = dt.timedelta(minutes=traffic_lag_minutes or 0)
    last_time: dict[Any, dt.datetime] = {}
    for is_traffic, cluster, at in zip(traffic, clusters, latest, strict=True):
        if is_traffic and isinstance(at, dt.datetime):
            last_time[cluster] = max(at, last_time.get(cluster, at))
    for cluster, at in last_time.items():
        first_day[cluster] = max(first_day[cluster], (at - lag).date())
    return sum(
        weight for weight, is_traffic, cluster, day in zip(weights, traffic, clusters, days, strict=True)
        if not is_traffic or day >= first_day[cluster]
    )


def run_weight(inputs: list[Path | str], lake: str, traffic_lag_minutes: int | None = None) -> int | None:
    """What a local run over ``inputs`` (the files it reads: a ``--date`` night's deliveries, not
    the whole tree) into ``lake`` weighs in bytes: the files and the lake's bronze events the stages
    read (:func:`bronze_as_input_bytes`). An S3 input or lake is sized by listing it (its objects'
    sizes come with the listing); another store's: None (not sized)."""
    from epoch_audit import objstore

    remote_lake = objstore.is_remote(lake)
    places = [*inputs, objstore.join(lake, "bronze/events")] if remote_lake else list(inputs)
    remote = [p for p in places if isinstance(p, str) and objstore.is_remote(p)]
    if any(objstore.scheme(uri) not in objstore.S3_SCHEMES for uri in remote):
        return None
    try:
        remote_size = store_bytes(remote)
    except OSError:  # sizes only decide the JVM's settings: unknown is not sized
        return None
    lake_size = 0 if remote_lake else bronze_as_input_bytes(Path(lake) / "bronze" / "events", traffic_lag_minutes)
    return local_bytes([p for p in places if p not in remote]) + lake_size + remote_size


def is_below(weight: int | None, max_bytes: int) -> bool:
    """Whether a run of ``weight`` bytes (None: not sized) is under a limit of ``max_bytes`` (0: none is)."""
    return weight is not None and max_bytes > 0 and weight < max_bytes


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (Databricks serverless and shared clusters,
    ``--spark-remote``): no SparkContext, no py4j, only what the Connect protocol carries."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: SparkSession) -> int:
    """The session's task slots: SparkContext's where there is one; through Spark Connect the
    configured ``spark.default.parallelism``, else the local machine's cores."""
    if not is_connect(spark):
        return max(1, spark.sparkContext.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    return max(1, int(configured) if configured and configured.isdigit() else os.cpu_count() or 1)


def get_spark(
    master: str | None = "local[2]",
    driver_memory: str = "2g",
    extra_conf: dict[str, Any] | None = None,
    app_name: str = "epoch-audit",
    short_run: bool = False,
    packages: Sequence[str] = (),
    remote: str | None = None,
    write_class_archive: bool = True,
    c2_compiler: bool = True,
) -> SparkSession:
    """Return the active session if there is one (cluster, Databricks), else build one.

    ``spark.pyspark.python`` is pinned to this interpreter: workers started from another Python
    fail Arrow UDFs with "No module named pyarrow". ``short_run``: a local JVM without the C2
    compiler and Spark without generated code (:data:`SHORT_RUN_CONF`); ``extra_conf`` still wins.
    ``c2_compiler``: false for a mid-size run (:data:`MID_RUN_JAVA_OPTIONS`).
    ``packages``: Maven coordinates a local session loads (Spark's Ivy, cached in :func:`ivy_cache_dir`).
    ``remote``: a Spark Connect session instead — ``sc://host:port`` (a running server: only
    ``extra_conf`` is sent, as session settings) or ``local[N]`` (PySpark starts a Connect server
    in a local JVM, set up like a local session).
    ``write_class_archive``: whether this JVM may write the class archive (:mod:`epoch_audit.class_archive`)
    when there is none; a long-lived session (the test suite's) maps one but leaves writing it to a run.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        if not is_connect(active):
            jvm_names.install(active)
            one_partition.install()
        ship_imported_wheel(active)
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    archive_tmp = archive = None
    local_server = bool(remote) and str(remote).startswith("local")
    if remote and not local_server:
        builder = builder.remote(remote)
        for key, value in (extra_conf or {}).items():
            builder = builder.config(key, str(value))
        return builder.getOrCreate()
    if local_server or master:
        builder = builder.remote(remote) if local_server else builder.master(master)
        conf = dict(LOCAL_DEFAULTS)
        conf["spark.driver.memory"] = driver_memory
        conf["spark.pyspark.python"] = sys.executable
        if workers_import_this_package():
            conf["spark.python.daemon.module"] = "epoch_audit.worker_daemon"
        java_options = [f"-Dlog4j2.configurationFile={LOG4J2_CONF.as_uri()}"] if LOG4J2_CONF.is_file() else []
        if not local_server and "PYSPARK_GATEWAY_PORT" not in os.environ:
            # the JVM we launch (spark-submit's own is running already) maps the class archive,
            # or writes it when it exits
            from pyspark.find_spark_home import _find_spark_home

            archive_options, archive_tmp, archive = class_archive.java_options(_find_spark_home(), write_class_archive)
            java_options += archive_options
        java_options.append(run_java_options(short_run, driver_memory, c2_compiler))
        conf.update(SHORT_RUN_CONF if short_run else CODEGEN_CONF)
        if java_options:
            conf["spark.driver.extraJavaOptions"] = " ".join(java_options)
        if packages:
            conf["spark.jars.packages"] = ",".join(packages)
            conf["spark.jars.ivy"] = ivy_cache_dir()
        conf.update({k: str(v) for k, v in (extra_conf or {}).items()})
        for key, value in conf.items():
            builder = builder.config(key, value)
    elif extra_conf:
        for key, value in extra_conf.items():
            builder = builder.config(key, str(value))
    try:
        spark = _start_with_stdout_on_stderr(builder)
    except BaseException:
        if archive_tmp is not None:  # no JVM will write it: free the claim for the next session
            archive_tmp.unlink(missing_ok=True)
        raise
    if not is_connect(spark):  # Connect has no SparkContext; log4j2.properties quiets its server
        spark.sparkContext.setLogLevel("ERROR")
        jvm_names.install(spark)
        one_partition.install()
        if archive_tmp is not None and archive is not None:
            jvm = getattr(spark.sparkContext._gateway, "proc", None)
            class_archive.rename_when_written(getattr(jvm, "pid", None), archive_tmp, archive)
    ship_imported_wheel(spark)
    return spark


def workers_import_this_package(package: str = "epoch_audit") -> bool:
    """Whether Python workers this interpreter starts import ``package`` as the driver does: from a
    directory on the interpreter's own path (installed, editable) or on ``PYTHONPATH``, not from a
    wheel only the driver's path holds (spark-submit ``--py-files``) or from the script's directory."""
    spec = importlib.util.find_spec(package)
    origin = getattr(spec, "origin", None) if spec is not None else None
    if not origin or not os.path.isfile(origin):
        return False
    root = os.path.dirname(os.path.dirname(os.path.realpath(origin)))
    # sys.path[0] is the driver's script directory (or its working directory): a worker's is not
    entries = [*sys.path[1:], *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return root in {os.path.realpath(p) for p in entries if p}


def imported_wheel(package: str = "epoch_audit") -> str | None:
    """The ``.whl`` file ``package`` was imported from (a wheel on the Python path, as spark-submit
    ``--py-files`` puts it on the driver's), or None (installed, a source tree, a ``.zip``)."""
    spec = importlib.util.find_spec(package)
    loader = spec.loader if spec is not None else None
    if isinstance(loader, zipimport.zipimporter) and loader.archive.lower().endswith(".whl"):
        return loader.archive
    return None


_ZIPPED: dict[str, str] = {}  # wheel -> its .zip copy, made once per driver process
_SHIPPED: set[tuple[str, str]] = set()  # (application id, wheel): added to that SparkContext


def ship_imported_wheel(spark: SparkSession, package: str = "epoch_audit") -> str | None:
    """Put the wheel ``package`` was imported from on the executors' Python path too; return the
    ``.zip`` copy added (None: nothing to ship).

    spark-submit ``--py-files dist/epoch_audit-*.whl`` puts the wheel on the driver's path and copies
    it to every executor, but PySpark adds only ``.zip``, ``.egg`` and ``.jar`` files to the
    executors' Python path: their Python workers then import ``epoch_audit`` from whatever the hosts
    have installed, or fail with "No module named 'epoch_audit'". A wheel of pure Python is a zip
    archive; a ``.zip`` copy added with ``addPyFile`` is importable there, and the executors run the
    driver's code. Through Spark Connect there is no SparkContext (nothing is shipped).
    """
    wheel = imported_wheel(package)
    if wheel is None or is_connect(spark):
        return None
    if wheel not in _ZIPPED:
        # Served to the executors by the driver: a driver-local folder, removed when the driver exits.
        folder = tempfile.mkdtemp(prefix="epoch-audit-wheel-")
        atexit.register(shutil.rmtree, folder, True)
        _ZIPPED[wheel] = os.path.join(folder, os.path.basename(wheel)[: -len(".whl")] + ".zip")
        shutil.copyfile(wheel, _ZIPPED[wheel])
    context = spark.sparkContext
    if (context.applicationId, wheel) not in _SHIPPED:
        context.addPyFile(_ZIPPED[wheel])
        _SHIPPED.add((context.applicationId, wheel))
        log.debug("%s ships to the executors of %s as %s", wheel, context.applicationId, _ZIPPED[wheel])
    return _ZIPPED[wheel]


def _start_with_stdout_on_stderr(builder: SparkSession.Builder) -> SparkSession:
    """``builder.getOrCreate()`` with the JVM it may launch writing its standard output to our
    standard error: the JVM inherits our descriptors, and what it prints there (Ivy's progress,
    HotSpot warnings) would otherwise land in the middle of ``--json`` output."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no standard output at all
        return builder.getOrCreate()
    try:
        os.dup2(2, 1)
        return builder.getOrCreate()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def run_concurrently(tasks: Sequence[Callable[[], T]], workers: int) -> list[T]:
    """Each task's result, in the order of ``tasks``, run on up to ``workers`` threads.

    For independent Spark queries: a query's driver side (building the DataFrame over py4j,
    analysis, planning, scheduling) is one thread, and on small data it is most of the query's
    time, so one query is planned while another runs. Every task runs even if one fails; the
    first failure (in task order) is raised after all of them ended. ``workers`` 1: in order on
    this thread.
    """
    if workers <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=min(workers, len(tasks)), thread_name_prefix="epoch-audit-query") as pool:
        futures = [pool.submit(task) for task in tasks]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]
    return [f.result() for f in futures]


def run_longest_first(
    tasks: Mapping[str, Callable[[], T]], workers: int, expected: Mapping[str, float] | None = None
) -> tuple[dict[str, T], dict[str, float]]:
    """Each named task's result and wall seconds, run as :func:`run_concurrently` runs them, the
    longest first by ``expected`` seconds (a task without a figure keeps its place after those
    with one): with a few threads, a long query started last runs alone while the other threads
    idle, so the longest go first (Graham's LPT order). ``expected``: an earlier run's seconds."""
    known = expected or {}
    place = {name: i for i, name in enumerate(tasks)}
    order = sorted(tasks, key=lambda n: (n not in known, -known.get(n, 0.0), place[n]))
    seconds: dict[str, float] = {}

    def timed(name: str) -> Callable[[], T]:
        def run() -> T:
            started = time.perf_counter()
            try:
                return tasks[name]()
            finally:
                seconds[name] = round(time.perf_counter() - started, 3)
        return run

    results = run_concurrently([timed(n) for n in order], workers)
    return dict(zip(order, results, strict=True)), {n: seconds[n] for n in order if n in seconds}
