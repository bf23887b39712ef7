"""Spark plumbing shared by the jobs: reading and writing the log, one task per stream."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore._errors import UsageError
from kstore._gc import cyclic_gc_paused
from kstore.spark._schema import EVENT_COLUMNS, LogRow, read_batch, spark_schema
from kstore.spark._session import conf_set, fit_partitions

__all__ = [
    "LOG_FOLDERS",
    "STREAM_COLUMNS",
    "StreamFunction",
    "log_paths",
    "map_streams",
    "read_log",
    "write_partitioned",
]

STREAM_COLUMNS = ["cluster", "group_id", "timeline"]

LOG_FOLDERS = ["cluster"]
"""The folders of a log that Spark writes (ingest, replay): one per cluster, the rows of
each file sorted by group. A folder per group, as ``export`` writes with Arrow, costs
Spark's writer a file, its checksum file and, on a local disk without Hadoop's native
library, a ``chmod`` process for each: more than replaying the group."""

_PLANNED_WRITE = "spark.sql.optimizer.plannedWrite.enabled"
_WRITERS = "spark.sql.maxConcurrentOutputFileWriters"
_OPEN_FILES = 64
"""Files a task keeps open at once when it writes its rows unsorted (a file per cluster
it holds); past that many Spark sorts the rest."""

_OUT_ROWS = 2000
"""Rows a task hands back to Spark at once: a stream's few rows each time would cost the
JVM a batch's setup (an Arrow reader, a vector per nested field) per stream."""

StreamFunction = Callable[[list[LogRow]], pa.Table]
"""One stream's events in version order -> rows (a table of the job's output schema)."""


def log_paths(folders: Sequence[Path | str]) -> list[str]:
    """The ``events`` folders of the logs ``folders``; a local one that is missing is
    a usage error (said before Spark starts, by the commands)."""
    paths = [f"{str(folder).rstrip('/')}/events" for folder in folders]
    if not paths:
        raise UsageError("--in: name at least one folder")
    for folder, path in zip(folders, paths, strict=True):
        if "://" not in path and not Path(path).is_dir():
            raise UsageError(f"{folder}: no events/ folder here (write one with export or ingest)")
    return paths


def read_log(spark: Any, folders: Sequence[Path | str]) -> Any:
    """The logs under ``folders`` as one (``export``/``ingest``/``replay`` output folders),
    an event in several of them once.

    Each folder's ``events`` subfolder is read with its ``cluster=`` (and ``export``'s
    ``group_id=``) paths.
    """
    paths = log_paths(folders)
    fit_partitions(spark, paths)
    frames = [
        spark.read.schema(spark_schema()).option("basePath", path).parquet(path) for path in paths
    ]
    if len(frames) == 1:
        return frames[0].select(*EVENT_COLUMNS)
    from pyspark.sql import functions as F

    log = functools.reduce(
        lambda a, b: a.unionByName(b),
        (f.select(*EVENT_COLUMNS, F.lit(i).alias(_INPUT)) for i, f in enumerate(frames)),
    )
    # The same event in two of them is one event: ``export`` writes the store's replay
    # timelines, and ``spark replay`` writes the same events again (same ids, same
    # versions), so ``metrics --in LOG --in REPLAYS`` counted each of those rebalances
    # twice (a user trial, following the README).
    once = log.dropDuplicates([*STREAM_COLUMNS, "version", "event_id"])
    _refuse_two_histories(once, folders)
    return once.drop(_INPUT)


_INPUT = "_kstore_input"
"""Which ``--in`` folder a row came from (its index), while the inputs are read as one."""


def _refuse_two_histories(log: Any, folders: Sequence[Path | str]) -> None:
    """Two inputs with one stream's version as different events (two stores' groups of
    one name, or two different replays written under one timeline) would be read as
    one history made of both: a usage error naming the first such version."""
    from pyspark.sql import functions as F

    found = (
        log.groupBy(*STREAM_COLUMNS, "version")
        .agg(F.count(F.lit(1)).alias("events"), F.collect_set(_INPUT).alias("inputs"))
        .where(F.col("events") > 1)
        .orderBy(*STREAM_COLUMNS, "version")
        .limit(1)
        .collect()
    )
    if found:
        row = found[0]
        where = " and ".join(f"--in {folders[i]}" for i in sorted(row["inputs"]))
        raise UsageError(
            f"{where}: {row['cluster']}/{row['group_id']} "
            f"{row['timeline']} version {row['version']:,} is a different event in each "
            "(two histories under one name); read them apart"
        )


def write_partitioned(
    frame: Any, out: Path | str, order: list[str] | None, by: list[str] = LOG_FOLDERS
) -> None:
    """``frame`` as Parquet in a folder per value of ``by``, each task's rows sorted by
    ``by`` then ``order``. No shuffle: each task writes a file per value of ``by`` that it
    holds, so a frame whose tasks hold whole groups writes each group to one file.

    ``order`` None: each task's rows are in the order wanted already (``map_streams``
    gives its streams sorted), so they are written as they come, a file open per value of
    ``by`` at once, not sorted again (Spark sorts them by ``by`` otherwise)."""
    spark = frame.sparkSession
    if order is not None:
        frame.sortWithinPartitions(*by, *order).write.partitionBy(*by).parquet(str(out))
        return
    with conf_set(spark, {_PLANNED_WRITE: "false", _WRITERS: str(_OPEN_FILES)}):
        frame.write.partitionBy(*by).parquet(str(out))


def _streams_of(batches: Iterator[pa.RecordBatch]) -> Iterator[list[LogRow]]:
    """Rows sorted by stream then version, cut into one list per stream (across batches)."""
    current: list[LogRow] = []
    stream: tuple[str, str, str] | None = None
    for batch in batches:
        # A batch's events hold no cycles: the collector's passes over them would find
        # nothing to free.
        with cyclic_gc_paused():
            rows, (clusters, groups, timelines) = read_batch(batch)
        start = 0
        for index, key in enumerate(zip(clusters, groups, timelines, strict=True)):
            if key != stream:
                current += rows[start:index]
                if current:
                    yield current
                current, start, stream = [], index, key
        current += rows[start:]
    if current:
        yield current


def _joined(tables: list[pa.Table]) -> list[pa.RecordBatch]:
    """``tables`` (of one schema) as one batch; none for none."""
    if not tables:
        return []
    batches: list[pa.RecordBatch] = pa.concat_tables(tables).combine_chunks().to_batches()
    return batches


def map_streams(frame: Any, function: StreamFunction, schema: pa.Schema) -> Any:
    """``function`` over every stream of the log ``frame``, each stream whole in one task.

    The streams are hash-partitioned and sorted, then each task walks its streams in
    order (``mapInArrow``): far cheaper per stream than a grouped UDF.
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        done: list[pa.Table] = []
        rows = 0
        for events in _streams_of(batches):
            # A stream's objects hold no cycles worth a collection: the collector's
            # passes were 5% of a replay's Python time.
            with cyclic_gc_paused():
                table = function(events)
            done.append(table)
            rows += table.num_rows
            if rows >= _OUT_ROWS:
                yield from _joined(done)
                done, rows = [], 0
        yield from _joined(done)

    # The shuffle's partitions as many as ``fit_partitions`` set, each a task: without a
    # number adaptive execution merges them into about one task per core, so the stream
    # work, far more than the bytes say, ended on one core while the other had finished.
    tasks = int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    return (
        frame.repartition(tasks, *STREAM_COLUMNS)
        .sortWithinPartitions(*STREAM_COLUMNS, "version")
        .mapInArrow(run, spark_schema(schema))
    )
