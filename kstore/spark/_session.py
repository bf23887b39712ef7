"""The Spark session: ``--master`` (default ``local[*]``) and ``--conf k=v`` pass through."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kstore._errors import UsageError

__all__ = [
    "C1_ONLY",
    "DEFAULTS",
    "JvmFit",
    "build_session",
    "class_archive",
    "conf_set",
    "finish_archive",
    "fit_jvm",
    "fit_partitions",
    "parse_conf",
    "progress_line",
]

_SHUFFLE = "spark.sql.shuffle.partitions"
_LISTING = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
_BYTES_PER_PARTITION = 4 << 20
"""Input bytes (Parquet or JSON Lines) per shuffle partition: a task's stream work on
4 MiB of compressed events takes seconds, long beside a task's start, short beside a run."""
_MAX_PARTITIONS = 2000
_DRIVER_JAVA = "spark.driver.extraJavaOptions"
_SMALL_INPUT = 64 << 20

C1_ONLY = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
"""The JVM's first JIT tier only, with the code cache the tiered JVM has. With C1 alone
the JVM reserves 48 MB of code cache, not 240: a session that ran a few hundred jobs
filled it ("CodeCache is full. Compiler has been disabled"), then failed its next task
with ``InternalError: ... linkToVirtual`` (no room for a method handle's stub) and shut
Spark down."""

DEFAULTS: dict[str, str] = {
    # Times are UTC everywhere in kstore; Spark's session zone would otherwise be the
    # machine's and shift every `at` it renders.
    "spark.sql.session.timeZone": "UTC",
    # A group or cluster named "007" must stay a string when read back from a path.
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The per-stream tasks turn each Arrow batch into Python objects: small batches keep
    # a Python worker's memory to a few streams' worth, whatever a partition holds.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
    # Batches cut by rows only: with a byte limit (Spark's default: 64 MiB) the JVM sizes
    # the batch's Arrow vectors after every row it adds, walking each nested vector (the
    # events' ``data``): a third of a replay's task time in the JVM. Int.MaxValue turns
    # the check off; the row limit above keeps batches small.
    "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
    # kstore prints one progress line of its own (``progress_line``), on a terminal only.
    "spark.ui.showConsoleProgress": "false",
    # The web UI costs seconds of a short command's start; ``--conf spark.ui.enabled=true``.
    "spark.ui.enabled": "false",
    # Partitions sized from the data: the shuffles start from ``fit_partitions``'s count
    # and adaptive execution merges the small ones, so a few thousand events make a task
    # or two, not 200.
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
}
"""kstore's settings; a ``--conf`` of the same key wins."""


def parse_conf(items: Iterable[str]) -> dict[str, str]:
    """``k=v`` strings (``--conf``) as a dict; a malformed one is a usage error."""
    conf: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf: expected KEY=VALUE, not {item!r}")
        conf[key.strip()] = value
    return conf


def build_session(
    master: str | None = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "kstore",
) -> Any:
    """A ``SparkSession`` (a running one is reused, with ``conf`` applied where it can be).

    ``master=None`` leaves the master to ``spark-submit`` (``--master`` there). Python
    workers run this interpreter unless ``PYSPARK_PYTHON`` says otherwise, so they see
    kstore and its dependencies.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master is not None and master.startswith("local"):
        # Local mode: bind to the loopback, not to the machine's outward address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in (DEFAULTS | dict(conf or {})).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _input_bytes(paths: Sequence[Path | str]) -> int | None:
    """Bytes of the files under ``paths``; ``None`` if one is not a local path."""
    total = 0
    for path in paths:
        if "://" in str(path):
            return None
        local = Path(path)
        files = [local] if local.is_file() else local.rglob("*")
        total += sum(f.stat().st_size for f in files if f.is_file())
    return total


def _java() -> Path | None:
    """The ``java`` that Spark's launcher runs (``JAVA_HOME``'s, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).is_file() else None


def class_archive(conf: Mapping[str, str]) -> Path | None:
    """Where the driver JVM's class-data-sharing archive is kept (``None``: nowhere).

    A dynamic archive holds the classes a JVM loaded, parsed and verified, for the next
    JVM to map instead of loading them again from Spark's jars. It is valid for one
    JVM build and one class path only, so its name carries both (the ``java`` file and
    its time, pyspark's version and its jars, the driver's extra class path) and the heap
    size (above 32 GB the JVM's object layout changes). It lives in the user's cache
    folder (``$XDG_CACHE_HOME/kstore``, else ``~/.cache/kstore``)."""
    java = _java()
    if java is None:
        return None
    import pyspark

    spark_home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    jars = spark_home / "jars"
    listing = sorted(os.listdir(jars)) if jars.is_dir() else []
    stat = java.stat()
    key = [str(java), str(stat.st_mtime_ns), str(stat.st_size), pyspark.__version__]
    key += [str(spark_home), *listing, os.environ.get("SPARK_CLASSPATH", "")]
    key += [conf.get(name, "") for name in ("spark.driver.extraClassPath", "spark.driver.memory")]
    digest = hashlib.sha256("\0".join(key).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kstore"
    return cache / f"spark-{pyspark.__version__}-classes-{digest}.jsa"


_GC = "-XX:+UseParallelGC"
"""The throughput collector, not G1 (the JVM's default): its cheaper write barriers and
no concurrent refinement threads left a 2,000-group replay's JVM 42.0-48.9 CPU s
against 47.0-54.5 with G1 (C2 on, alternated, load 6-12). A local run's heap is the
driver's, its pauses nobody waits on but the run itself."""

_QUIET_CDS = "-Xlog:cds*=off"
"""An archive the JVM cannot use (another class path, a JVM it does not know) is skipped
with a warning on standard output, the command's own: not printed."""


@dataclass(frozen=True)
class JvmFit:
    """The settings for the session, and the class archive its JVM writes at its exit
    (``making``: a name of its own, renamed to ``archive`` once the JVM has exited)."""

    conf: dict[str, str]
    archive: Path | None = None
    making: Path | None = None


def fit_jvm(master: str | None, conf: Mapping[str, str], inputs: Sequence[Path | str]) -> JvmFit:
    """The driver JVM's options for a local run, unless ``spark.driver.extraJavaOptions``
    is given (then ``conf`` is kept as it is):

    - the JIT compiler's first tier only for a small input. A short run's JVM spends
      most of its CPU compiling its own hot code with C2, work that a few seconds of
      tasks never pay back: ``kstore spark metrics`` on 3,000 events took 33 CPU seconds
      of the JVM with it, 20 with C1 alone. Past ``_SMALL_INPUT`` bytes the tasks run
      long enough for C2's faster code to win.
    - the parallel (throughput) collector (``_GC``).
    - the classes of Spark shared from an archive (``class_archive``), which a JVM
      writes at its exit when there is none yet: a session and its first job took 12
      CPU s of the JVM with it against 19-21 without (C2 on; with C1 only, no gain).
      The JVM maps a truncated archive and crashes on it, so one is written under a
      name of its own and renamed into place only once its JVM has exited well
      (``finish_archive``); commands running at once each write their own, and the
      last rename wins."""
    if master is None or not master.startswith("local") or _DRIVER_JAVA in conf:
        return JvmFit(dict(conf))
    options = [_GC]
    size = _input_bytes(inputs)
    if size is not None and size <= _SMALL_INPUT:
        options += C1_ONLY.split()
    archive = class_archive(conf)
    making = None
    if archive is not None and archive.is_file():
        options += [f"-XX:SharedArchiveFile={archive}", _QUIET_CDS]
    elif archive is not None and _writable(archive.parent):
        making = archive.with_name(f"{archive.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        options += [f"-XX:ArchiveClassesAtExit={making}", _QUIET_CDS]
    return JvmFit({**conf, _DRIVER_JAVA: " ".join(options)}, archive, making)


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def finish_archive(fit: JvmFit) -> None:
    """After the session has stopped: end its JVM and, if it exited well, put the class
    archive it wrote (``fit.making``) in place. Nothing to do when no archive was being
    made, or when the JVM was not started with ``fit``'s options (a running one)."""
    if fit.making is None or fit.archive is None:
        return
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    try:
        if gateway is None or process is None or process.stdin is None:
            return
        # The JVM exits when its standard input ends, writing the archive as it goes.
        gateway.shutdown()
        process.stdin.close()
        ended = process.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None
        if ended == 0 and fit.making.is_file():
            os.replace(fit.making, fit.archive)
    finally:
        fit.making.unlink(missing_ok=True)


@contextmanager
def conf_set(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """The session's ``settings`` while the block runs, each as it was (or unset) after."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def fit_partitions(spark: Any, paths: Sequence[Path | str]) -> None:
    """Partitions sized for the input under ``paths``, before it is read.

    Shuffle partitions: one per 4 MiB, at least the default parallelism (every core
    busy), at most 2,000; adaptive execution then merges those that turn out small. The
    folders (a log has one per group) are listed by as many tasks as there are cores,
    not one task per folder. A ``--conf`` of either setting is kept."""
    given = spark.sparkContext.getConf()
    cores = int(spark.sparkContext.defaultParallelism)
    if not given.contains(_LISTING):
        spark.conf.set(_LISTING, str(cores))
    if given.contains(_SHUFFLE):
        return
    size = _input_bytes(paths)
    if size is None:
        return
    wanted = -(-size // _BYTES_PER_PARTITION)
    spark.conf.set(_SHUFFLE, str(max(cores, min(wanted, _MAX_PARTITIONS))))


def _progress_text(spark: Any) -> str | None:
    tracker = spark.sparkContext.statusTracker()
    done = total = 0
    stages = 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            stages += 1
            done += info.numCompletedTasks
            total += info.numTasks
    if not stages:
        return None
    return f"spark: {done}/{total} tasks of {stages} running stage{'s' if stages > 1 else ''}"


@contextmanager
def progress_line(spark: Any, stream: TextIO | None = None) -> Iterator[None]:
    """One line on ``stream`` (standard error) saying how far Spark's running stages
    are, rewritten in place twice a second and erased at the end; nothing when the
    stream is not a terminal."""
    out = stream if stream is not None else sys.stderr
    if not out.isatty():
        yield
        return
    stop = threading.Event()

    def show() -> None:
        shown = 0
        while not stop.wait(0.5):
            text = _progress_text(spark)
            if text is None:
                continue
            out.write("\r" + text.ljust(shown))
            out.flush()
            shown = len(text)
        if shown:
            out.write("\r" + " " * shown + "\r")
            out.flush()

    thread = threading.Thread(target=show, name="kstore-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
