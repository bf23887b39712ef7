"""``kstore spark metrics``: docs/spec/metrics.md per rebalance, and windowed summaries.

The split of the DuckDB store, run on Spark:

1. Per stream, in one Spark task each, the store's own ``Projector`` folds the events and
   settles each ``AssignmentCompleted`` E into the rows it adds to
   ``kstore_rebalance_stats`` (members, imbalance, excess) and ``kstore_topic_stats``
   (per topic: assigned, moved, new, revoked, ...): the partition-level work, done by the
   code that does it for DuckDB, so there is one reading of metrics.md, not two.
2. Spark SQL adds the topics up per E (one aggregation over both tables' rows, so the
   tasks of step 1 run once) and finds each E's start (the latest ``RebalanceStarted``
   of its generation before it, from the log), as ``queries/metrics.sql`` does over
   those tables.

The result has the columns of the ``metrics`` query (``METRIC_COLUMNS``), one row per
``AssignmentCompleted``; ``summarise`` adds up a window's rebalances as
``queries/windows.sql`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore.spark._frames import STREAM_COLUMNS, map_streams, write_partitioned
from kstore.spark._schema import LogRow
from kstore.store.catalogue import ARROW_TYPES, columns
from kstore.store.projections import Projector, StreamHead

__all__ = ["METRIC_COLUMNS", "WINDOW_COLUMNS", "metrics_of", "summarise", "write_metrics"]

METRIC_COLUMNS: tuple[str, ...] = ("cluster", "group", "timeline", "version", "generation")
METRIC_COLUMNS += ("at", "members", "assigned", "moved", "new", "revoked", "unassigned")
METRIC_COLUMNS += ("retainable", "kept", "stickiness", "imbalance", "excess")
METRIC_COLUMNS += ("double_assigned", "duration_ms")

WINDOW_COLUMNS: tuple[str, ...] = ("cluster", "group", "timeline", "window_start")
WINDOW_COLUMNS += ("rebalances", "churn", "new", "revoked", "stickiness", "imbalance")

_BY = ["cluster"]
"""The results' partition column. Not the group too: a file per group and window of a
few rows each would make writing (and reading) slower than computing them."""

_REBALANCE = "kstore_rebalance_stats"
_TOPIC = "kstore_topic_stats"
_COUNTS: tuple[str, ...] = ("assigned", "moved", "new", "revoked", "unassigned")
_COUNTS += ("retainable", "kept", "double_assigned")

_KEY = (*STREAM_COLUMNS, "version")
_TAKEN = {
    _REBALANCE: columns(_REBALANCE),
    _TOPIC: (*_KEY, *_COUNTS),
}
"""The columns of ``_STATS`` each table's rows fill (the others are NULL)."""


def _stats_type(name: str) -> pa.DataType:
    # Times go to Spark as instants in UTC; the store keeps them naive (in UTC).
    return pa.timestamp("us", tz="UTC") if name == "at" else ARROW_TYPES[name]


_STATS = pa.schema(
    [
        pa.field(name, _stats_type(name))
        for name in dict.fromkeys([*_TAKEN[_REBALANCE], *_TAKEN[_TOPIC]])
    ]
)
"""The projector's rows for each E, both tables in one, the kinds of the read model's
catalogue: a ``kstore_rebalance_stats`` row has ``generation`` (never NULL there) and
``members``, ``imbalance``, ``excess``; a ``kstore_topic_stats`` row (``generation``
NULL) has one topic's counts."""


def _stats(events: list[LogRow]) -> pa.Table:
    projector = Projector(analytics_only=True)
    head = StreamHead()
    for row in events:
        event = row.event
        projector.feed(head, event, event.at.astimezone(UTC).replace(tzinfo=None))
    parts = []
    for table, taken in _TAKEN.items():
        rows = projector.arrow(table)
        arrays = [
            rows.column(f.name).cast(f.type) if f.name in taken else pa.nulls(len(rows), f.type)
            for f in _STATS
        ]
        parts.append(pa.Table.from_arrays(arrays, schema=_STATS))
    return pa.concat_tables(parts)


_METRICS_SQL = """
WITH
rebalances AS (  -- one row per E: its rebalance_stats row, its topics added up
    SELECT cluster, group_id, timeline, version,
           max(generation) AS generation, max(`at`) AS `at`, max(members) AS members,
           max(imbalance) AS imbalance, max(excess) AS excess,
           {sums}
    FROM {stats}
    GROUP BY cluster, group_id, timeline, version
),
starts AS (
    SELECT cluster, group_id, timeline, version, `at`, CAST(data.generation AS INT) AS generation
    FROM {log} WHERE type = 'RebalanceStarted'
),
started AS (  -- the latest RebalanceStarted before E of E's generation
    SELECT r.cluster, r.group_id, r.timeline, r.version, max_by(s.`at`, s.version) AS started
    FROM rebalances r
    JOIN starts s
      ON s.cluster = r.cluster AND s.group_id = r.group_id AND s.timeline = r.timeline
     AND s.generation = r.generation AND s.version < r.version
    GROUP BY r.cluster, r.group_id, r.timeline, r.version
)
SELECT
    r.cluster, r.group_id AS `group`, r.timeline, r.version, r.generation, r.`at`,
    r.members,
    coalesce(r.assigned, 0) AS assigned,
    coalesce(r.moved, 0) AS moved,
    coalesce(r.new, 0) AS new,
    coalesce(r.revoked, 0) AS revoked,
    coalesce(r.unassigned, 0) AS unassigned,
    coalesce(r.retainable, 0) AS retainable,
    coalesce(r.kept, 0) AS kept,
    CAST(r.kept AS DOUBLE) / nullif(r.retainable, 0) AS stickiness,
    r.imbalance,
    r.excess,
    coalesce(r.double_assigned, 0) AS double_assigned,
    (unix_micros(r.`at`) - unix_micros(st.started)) DIV 1000 AS duration_ms
FROM rebalances r
LEFT JOIN started st USING (cluster, group_id, timeline, version)
"""


@contextmanager
def metrics_of(spark: Any, log: Any) -> Iterator[Any]:
    """The metrics of every ``AssignmentCompleted`` in the log DataFrame ``log``, for the
    block. The query reads the projector's rows twice: they are computed once, kept
    (memory, then disk) while the block runs and dropped after it."""
    from pyspark import StorageLevel

    stats = map_streams(log, _stats, _STATS).persist(StorageLevel.MEMORY_AND_DISK)
    suffix = f"{id(log):x}"
    log.createOrReplaceTempView(f"kstore_log_{suffix}")
    stats.createOrReplaceTempView(f"kstore_stats_{suffix}")
    # The topics' counts (NULL on a rebalance_stats row) add up to E's.
    sums = ",\n           ".join(f"sum({c}) AS {c}" for c in _COUNTS)
    sql = _METRICS_SQL.format(log=f"kstore_log_{suffix}", stats=f"kstore_stats_{suffix}", sums=sums)
    try:
        yield spark.sql(sql).select(*METRIC_COLUMNS)
    finally:
        stats.unpersist()


def _in_stream_order(column: str) -> Any:
    """The average of a window's non-NULL ``column`` (a double) as ``queries/windows.sql``
    takes it (``avg(... ORDER BY version)``): added up in stream order, then divided by
    their count. ``F.avg`` adds in the partitions' order, so the same rows partitioned
    otherwise differed in the last digits, from DuckDB and from each other."""
    from pyspark.sql import functions as F

    # collect_list leaves out NULLs: the struct is NULL where the value is.
    pairs = F.collect_list(F.when(F.col(column).isNotNull(), F.struct("version", column)))
    values = F.transform(F.array_sort(pairs), lambda pair: pair[column])
    total = F.aggregate(values, F.lit(0.0).cast("double"), lambda added, value: added + value)
    return F.when(F.size(values) > 0, total / F.size(values))


def summarise(metrics: Any, window: str = "hour") -> Any:
    """Per stream and window (``hour`` or ``day`` of ``at``): the sums and averages, the
    same to the last digit as ``queries/windows.sql``'s whatever the partitioning."""
    from pyspark.sql import functions as F

    return (
        metrics.groupBy(
            "cluster", "group", "timeline", F.date_trunc(window, "at").alias("window_start")
        )
        .agg(
            F.count("*").alias("rebalances"),
            F.sum("moved").alias("churn"),
            F.sum("new").alias("new"),
            F.sum("revoked").alias("revoked"),
            _in_stream_order("stickiness").alias("stickiness"),
            # imbalance is a whole number: its sum is exact in any order
            F.avg("imbalance").alias("imbalance"),
        )
        .select(*WINDOW_COLUMNS)
    )


def write_metrics(spark: Any, log: Any, out: Path, window: str = "hour") -> int:
    """``out/metrics`` and ``out/windows`` as Parquet (``cluster=`` folders); the row count."""
    with metrics_of(spark, log) as computed:
        metrics = computed.persist()  # written twice: as it is, and summed up by window
        try:
            write_partitioned(
                metrics.repartition(*_BY), out / "metrics", ["group", "timeline", "version"], _BY
            )
            windows = summarise(metrics, window)
            write_partitioned(
                windows.repartition(*_BY),
                out / "windows",
                ["group", "timeline", "window_start"],
                _BY,
            )
            return int(metrics.count())
        finally:
            metrics.unpersist()
