"""Spark plumbing shared by the jobs: reading and writing the log, one task per stream."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore._errors import UsageError
from kstore.spark._export import PARTITION_COLUMNS
from kstore.spark._schema import EVENT_COLUMNS, LogRow, arrow_to_events, spark_schema
from kstore.spark._session import fit_partitions

__all__ = [
    "STREAM_COLUMNS",
    "StreamFunction",
    "map_streams",
    "read_log",
    "write_partitioned",
]

STREAM_COLUMNS = ["cluster", "group_id", "timeline"]

StreamFunction = Callable[[list[LogRow]], pa.Table]
"""One stream's events in version order -> rows (a table of the job's output schema)."""


def read_log(spark: Any, folders: Sequence[Path | str]) -> Any:
    """The logs under ``folders`` as one (``export``/``ingest``/``replay`` output folders).

    Each folder's ``events`` subfolder is read with its ``cluster=``/``group_id=`` paths.
    """
    frames = []
    paths = [f"{str(folder).rstrip('/')}/events" for folder in folders]
    for folder, path in zip(folders, paths, strict=True):
        if "://" not in path and not Path(path).is_dir():
            raise UsageError(f"{folder}: no events/ folder here (write one with export or ingest)")
        frame = spark.read.schema(spark_schema()).option("basePath", path).parquet(path)
        frames.append(frame.select(*EVENT_COLUMNS))
    if not frames:
        raise UsageError("--in: name at least one folder")
    fit_partitions(spark, paths)
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def write_partitioned(
    frame: Any, out: Path | str, order: list[str], by: list[str] = PARTITION_COLUMNS
) -> None:
    """``frame`` as Parquet partitioned by ``by`` (cluster and group), rows sorted by ``order``."""
    (
        frame.repartition(*by)
        .sortWithinPartitions(*by, *order)
        .write.partitionBy(*by)
        .parquet(str(out))
    )


def _streams_of(batches: Iterator[pa.RecordBatch]) -> Iterator[list[LogRow]]:
    """Rows sorted by stream then version, cut into one list per stream (across batches)."""
    current: list[LogRow] = []
    for batch in batches:
        for row in arrow_to_events(batch):
            if current and row.event.stream != current[-1].event.stream:
                yield current
                current = []
            current.append(row)
    if current:
        yield current


def map_streams(frame: Any, function: StreamFunction, schema: pa.Schema) -> Any:
    """``function`` over every stream of the log ``frame``, each stream whole in one task.

    The streams are hash-partitioned and sorted, then each task walks its streams in
    order (``mapInArrow``): far cheaper per stream than a grouped UDF.
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for events in _streams_of(batches):
            yield from function(events).to_batches()

    return (
        frame.repartition(*STREAM_COLUMNS)
        .sortWithinPartitions(*STREAM_COLUMNS, "version")
        .mapInArrow(run, spark_schema(schema))
    )
