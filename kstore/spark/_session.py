"""The Spark session: ``--master`` (default ``local[*]``) and ``--conf k=v`` pass through."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from kstore._errors import UsageError

__all__ = [
    "DEFAULTS",
    "build_session",
    "conf_set",
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


def fit_jvm(
    master: str | None, conf: Mapping[str, str], inputs: Sequence[Path | str]
) -> dict[str, str]:
    """``conf`` with the JIT compiler's first tier only for a local run on a small input.

    A short run's JVM spends most of its CPU compiling its own hot code with C2, work that
    a few seconds of tasks never pay back: ``kstore spark metrics`` on 3,000 events took
    33 CPU seconds of the JVM with it, 20 with C1 alone. Past ``_SMALL_INPUT`` bytes the
    tasks run long enough for C2's faster code to win. A given
    ``spark.driver.extraJavaOptions`` is kept as it is."""
    if master is None or not master.startswith("local") or _DRIVER_JAVA in conf:
        return dict(conf)
    size = _input_bytes(inputs)
    if size is None or size > _SMALL_INPUT:
        return dict(conf)
    return {**conf, _DRIVER_JAVA: "-XX:TieredStopAtLevel=1"}


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
