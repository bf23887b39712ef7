"""``kstore spark replay``: every stream replayed with other strategies, in parallel.

One Spark task walks a stream's events in version order through
``kstore.analytics.replay.replay_events``, the function behind ``kstore replay`` (so a
Spark replay equals it event for event), once per strategy. The new timelines
(``replay/<strategy>``, ``replay/<source>/<strategy>`` for a source other than
``recorded``) are written in the log's Parquet form, a folder per cluster and
each group's replays in one file; their ``position`` is NULL, as they belong to no
store's log yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kstore._errors import UsageError
from kstore.analytics.replay import reads_assignments, replay_events
from kstore.assignors import get_assignor
from kstore.model._timelines import RECORDED, replay_name
from kstore.model.events import AssignmentCompleted, StreamId
from kstore.model.strategies import COOPERATIVE_STRATEGIES, SAME
from kstore.spark._export import fresh_folder
from kstore.spark._frames import map_streams, write_partitioned
from kstore.spark._schema import LogRow, event_schema, events_to_arrow, spark_schema

if TYPE_CHECKING:
    from pyspark.accumulators import Accumulator

__all__ = ["replay_log", "write_replays"]


def _lines() -> Any:
    """An accumulator type adding up lines across tasks (pyspark is imported when used)."""
    from pyspark.accumulators import AccumulatorParam

    class Lines(AccumulatorParam[list[str]]):
        def zero(self, value: list[str]) -> list[str]:
            return []

        def addInPlace(self, value1: list[str], value2: list[str]) -> list[str]:
            return value1 + value2

    return Lines()


def _replayer(strategies: Sequence[str], warnings: Accumulator[list[str]] | None) -> Any:
    def replay_stream(events: list[LogRow]) -> pa.Table:
        source = events[0].event.stream
        rows: list[LogRow] = []
        for strategy in strategies:
            # The default source here is ``recorded`` (a task sees its group's source
            # timeline only); any other source's replays are named after it.
            timeline = replay_name(
                source.timeline, strategy, default_source=source.timeline == RECORDED
            )
            target = StreamId(source.cluster, source.group, timeline)
            found: list[str] = []
            replayed = replay_events((row.event for row in events), target, strategy, found)
            rows.extend(
                LogRow(None, version, event) for version, event in enumerate(replayed, start=1)
            )
            if found and warnings is not None:
                where = f"{target.cluster}/{target.group} {target.timeline}"
                warnings.add([f"{where} {warning}" for warning in found])
        return events_to_arrow(rows)

    return replay_stream


def _source(log: Any, strategies: Sequence[str]) -> Any:
    """The log as ``kstore replay`` reads its source: without ``position``, and each
    ``AssignmentCompleted``'s assignment empty unless the replays may make follow-up
    rounds (``reads_assignments``) or the log has a cooperative decision (whose
    follow-up round every replay must see: ``replay.cooperative``, here as Spark's
    expression). The recorded assignments, most of a log's bytes, are then neither read
    from Parquet nor shuffled nor turned into Python objects."""
    from pyspark.sql import functions as F

    if reads_assignments(*strategies):
        return log.drop("position")
    protocol, name = F.col("data")["protocol"], F.col("data")["strategy"]
    decided = F.col("type") == AssignmentCompleted.type_name()
    cooperative = (protocol == "cooperative") | (
        protocol.isNull() & name.isin(list(COOPERATIVE_STRATEGIES))
    )
    if log.where(decided & cooperative).limit(1).count():
        return log.drop("position")

    data = spark_schema()["data"].dataType
    kind = data["assignment"].dataType
    empty = F.when(F.col("type") == AssignmentCompleted.type_name(), F.create_map().cast(kind))
    # The struct made again field by field: Spark prunes the fields that no expression
    # reads from the Parquet it scans, but ``withField`` reads ``data`` whole, so every
    # recorded assignment was still decoded, then dropped.
    fields = [
        (empty if field.name == "assignment" else F.col("data")[field.name]).alias(field.name)
        for field in data.fields
    ]
    return log.drop("position").withColumn("data", F.struct(*fields))


def replay_log(
    log: Any,
    strategies: Sequence[str],
    source: str = RECORDED,
    warnings: Accumulator[list[str]] | None = None,
) -> Any:
    """The replays of the log's ``source`` timelines with each strategy (a DataFrame);
    the assignors' warnings, one line each naming the stream, go to ``warnings``."""
    if not strategies:
        raise UsageError("--strategies: name at least one strategy")
    for strategy in strategies:
        if strategy != SAME:  # same: each generation's own flavour, known in the task
            get_assignor(strategy)  # an unknown name fails here, not in a task
    return map_streams(
        _source(log.where(log.timeline == source), strategies),
        _replayer(list(strategies), warnings),
        event_schema(),
    )


def write_replays(
    log: Any,
    strategies: Sequence[str],
    out: Path,
    source: str = RECORDED,
    warnings: list[str] | None = None,
) -> int:
    """Write the replays under ``out/events``; the number of events written. The
    assignors' warnings (one line each, naming the stream) are added to ``warnings``."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    fresh_folder(out)
    found = log.sparkSession.sparkContext.accumulator([], _lines())
    # Counted on the way to the files: one pass, nothing kept in memory for a count.
    written = Observation("replayed")
    replays = replay_log(log, strategies, source, found)
    replays = replays.observe(written, F.count(F.lit(1)).alias("events"))
    # Each task holds whole groups (``map_streams``), in order: a group's replays go to
    # one file, as they come.
    write_partitioned(replays, out / "events", None)
    count = int(written.get["events"])
    if warnings is not None:
        # A task run again (a lost executor, a cache evicted) adds its lines again.
        warnings.extend(sorted(set(found.value)))
    return count
