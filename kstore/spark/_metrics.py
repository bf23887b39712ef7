"""``kstore spark metrics``: shared/spec/metrics.md per rebalance, and windowed summaries.

Two steps, the split the DuckDB store makes too:

1. Per stream, in one Spark task each, the store's own ``Projector`` folds the events and
   states the facts that need the fold: ``prev(p)`` changes (``kstore_ownership``), the
   members and their subscriptions at E, the topics at E, and the revocations
   (MemberReplaced aliasing applied). No second fold is written for Spark.
2. Spark SQL computes every number from those facts and from E's assignment exploded
   partition by partition (a cluster can afford the partition-level joins that the
   DuckDB query avoids with pre-aggregated holdings).

The result has the columns of the ``metrics`` query (``METRIC_COLUMNS``), one row per
``AssignmentCompleted``; ``summarise`` adds up a window's rebalances as
``queries/windows.sql`` does.
"""

from __future__ import annotations

import itertools
from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore.spark._frames import STREAM_COLUMNS, map_streams, write_partitioned
from kstore.spark._schema import LogRow
from kstore.store.projections import Projector, StreamHead

__all__ = ["METRIC_COLUMNS", "WINDOW_COLUMNS", "compute_metrics", "summarise", "write_metrics"]

METRIC_COLUMNS: tuple[str, ...] = ("cluster", "group", "timeline", "version", "generation")
METRIC_COLUMNS += ("at", "members", "assigned", "moved", "new", "revoked", "unassigned")
METRIC_COLUMNS += ("retainable", "kept", "stickiness", "imbalance", "excess")
METRIC_COLUMNS += ("double_assigned", "duration_ms")

WINDOW_COLUMNS: tuple[str, ...] = ("cluster", "group", "timeline", "window_start")
WINDOW_COLUMNS += ("rebalances", "churn", "new", "revoked", "stickiness", "imbalance")

_BY = ["cluster", "group"]
"""The results' partition columns: the query's own names, so a reader gets them back."""

_FACTS = pa.schema(
    [
        *(pa.field(name, pa.string()) for name in STREAM_COLUMNS),
        pa.field("version", pa.int32()),
        pa.field("kind", pa.string()),
        pa.field("member", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int64()),
        pa.field("partitions", pa.int64()),
        pa.field("previous_owner", pa.string()),
    ]
)
"""Facts of the fold at each E; ``kind``: change, member, topic or revoked."""

# kind -> (projector table, its column for each fact column it fills)
_KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "change": (
        "ownership",
        {"member": "owner", "topic": "topic", "partition": "partition"}
        | {"previous_owner": "previous_owner"},
    ),
    "member": ("kstore_members_at", {"member": "member", "topic": "topic"}),
    "topic": ("kstore_topics_at", {"topic": "topic", "partitions": "partitions"}),
    "revoked": (
        "kstore_revocations",
        {"member": "member", "topic": "topic", "partition": "partition"},
    ),
}


def _facts(events: list[LogRow]) -> pa.Table:
    projector = Projector()
    head = StreamHead()
    for row in events:
        projector.feed(head, row.event, row.event.at.astimezone(UTC).replace(tzinfo=None))
    tables = projector.analytics.tables | {"ownership": projector.ownership}
    columns: dict[str, list[Any]] = {name: [] for name in _FACTS.names}
    for kind, (table, fill) in _KINDS.items():
        source = tables[table]
        keep = [
            i
            for i in range(len(source["version"]))
            if kind != "change" or source["cause"][i] == "AssignmentCompleted"
        ]
        size = len(keep)
        for name in STREAM_COLUMNS:
            columns[name].extend(source[name][i] for i in keep)
        columns["version"].extend(source["version"][i] for i in keep)
        columns["kind"].extend(itertools.repeat(kind, size))
        for name in _FACTS.names[len(STREAM_COLUMNS) + 2 :]:
            if name in fill:
                columns[name].extend(source[fill[name]][i] for i in keep)
            else:
                columns[name].extend(itertools.repeat(None, size))
    return pa.table(columns, schema=_FACTS)


_METRICS_SQL = """
WITH
rebalances AS (
    SELECT cluster, group_id, timeline, version, `at`, CAST(data.generation AS INT) AS generation,
           data.assignment AS assignment
    FROM {log} WHERE type = 'AssignmentCompleted'
),
starts AS (
    SELECT cluster, group_id, timeline, version, `at`, CAST(data.generation AS INT) AS generation
    FROM {log} WHERE type = 'RebalanceStarted'
),
held AS (  -- E's (member, partition) pairs, each once
    SELECT DISTINCT r.cluster, r.group_id, r.timeline, r.version, a.member, tp.topic,
           tp.partition
    FROM rebalances r
    LATERAL VIEW explode(r.assignment) a AS member, tps
    LATERAL VIEW explode(a.tps) t AS tp
),
owners AS (
    SELECT cluster, group_id, timeline, version, topic, partition,
           count(*) AS holders, min(member) AS member
    FROM held GROUP BY cluster, group_id, timeline, version, topic, partition
),
members AS (SELECT * FROM {facts} WHERE kind = 'member'),
topics AS (SELECT * FROM {facts} WHERE kind = 'topic'),
changes AS (SELECT * FROM {facts} WHERE kind = 'change'),
subscribed AS (  -- (member, topic) pairs of the group at E
    SELECT DISTINCT cluster, group_id, timeline, version, member, topic
    FROM members WHERE topic IS NOT NULL
),
singles AS (  -- partitions E gives to one member, with prev(p)
    SELECT o.cluster, o.group_id, o.timeline, o.version, o.topic, o.member,
           c.version IS NOT NULL AS changed,
           CASE WHEN c.version IS NULL THEN o.member ELSE c.previous_owner END AS prev
    FROM owners o
    LEFT JOIN changes c
      ON c.cluster = o.cluster AND c.group_id = o.group_id AND c.timeline = o.timeline
     AND c.version = o.version AND c.topic = o.topic AND c.partition = o.partition
    WHERE o.holders = 1
),
continuity AS (
    SELECT s.cluster, s.group_id, s.timeline, s.version,
           count_if(s.changed AND s.prev IS NOT NULL) AS moved,
           count_if(s.prev IS NULL) AS new,
           count_if(m.member IS NOT NULL) AS retainable,
           count_if(m.member IS NOT NULL AND NOT s.changed) AS kept
    FROM singles s
    LEFT JOIN subscribed m
      ON m.cluster = s.cluster AND m.group_id = s.group_id AND m.timeline = s.timeline
     AND m.version = s.version AND m.member = s.prev AND m.topic = s.topic
    GROUP BY s.cluster, s.group_id, s.timeline, s.version
),
assigned AS (
    SELECT cluster, group_id, timeline, version, count(*) AS assigned,
           count_if(holders > 1) AS double_assigned
    FROM owners GROUP BY cluster, group_id, timeline, version
),
revoked AS (
    SELECT cluster, group_id, timeline, version,
           count(DISTINCT topic, partition) AS revoked
    FROM {facts} WHERE kind = 'revoked'
    GROUP BY cluster, group_id, timeline, version
),
wanted AS (  -- every partition of a topic that exists at E and has a subscriber
    SELECT t.cluster, t.group_id, t.timeline, t.version, t.topic, p AS partition
    FROM topics t
    LEFT SEMI JOIN subscribed m
      ON m.cluster = t.cluster AND m.group_id = t.group_id AND m.timeline = t.timeline
     AND m.version = t.version AND m.topic = t.topic
    LATERAL VIEW explode(sequence(0, t.partitions - 1)) x AS p
),
unassigned AS (
    SELECT w.cluster, w.group_id, w.timeline, w.version, count(*) AS unassigned
    FROM wanted w
    LEFT ANTI JOIN owners o
      ON o.cluster = w.cluster AND o.group_id = w.group_id AND o.timeline = w.timeline
     AND o.version = w.version AND o.topic = w.topic AND o.partition = w.partition
    GROUP BY w.cluster, w.group_id, w.timeline, w.version
),
membership AS (  -- each member at E; counted when it subscribes to an existing topic
    SELECT m.cluster, m.group_id, m.timeline, m.version, m.member,
           bool_or(t.topic IS NOT NULL) AS counted
    FROM members m
    LEFT JOIN topics t
      ON t.cluster = m.cluster AND t.group_id = m.group_id AND t.timeline = m.timeline
     AND t.version = m.version AND t.topic = m.topic
    GROUP BY m.cluster, m.group_id, m.timeline, m.version, m.member
),
loads AS (
    SELECT m.cluster, m.group_id, m.timeline, m.version, m.counted,
           count(h.member) AS load
    FROM membership m
    LEFT JOIN held h
      ON h.cluster = m.cluster AND h.group_id = m.group_id AND h.timeline = m.timeline
     AND h.version = m.version AND h.member = m.member
    GROUP BY m.cluster, m.group_id, m.timeline, m.version, m.member, m.counted
),
spread AS (
    SELECT cluster, group_id, timeline, version, count(*) AS members,
           max(load) FILTER (WHERE counted) - min(load) FILTER (WHERE counted) AS imbalance,
           sum(load) FILTER (WHERE counted) AS total,
           count_if(counted) AS n
    FROM loads GROUP BY cluster, group_id, timeline, version
),
excess AS (
    SELECT l.cluster, l.group_id, l.timeline, l.version,
           sum(greatest(0, l.load - ceil(s.total / s.n))) AS excess
    FROM loads l
    JOIN spread s
      ON s.cluster = l.cluster AND s.group_id = l.group_id AND s.timeline = l.timeline
     AND s.version = l.version
    WHERE l.counted
    GROUP BY l.cluster, l.group_id, l.timeline, l.version
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
    coalesce(s.members, 0) AS members,
    coalesce(a.assigned, 0) AS assigned,
    coalesce(c.moved, 0) AS moved,
    coalesce(c.new, 0) AS new,
    coalesce(v.revoked, 0) AS revoked,
    coalesce(u.unassigned, 0) AS unassigned,
    coalesce(c.retainable, 0) AS retainable,
    coalesce(c.kept, 0) AS kept,
    CAST(c.kept AS DOUBLE) / nullif(c.retainable, 0) AS stickiness,
    s.imbalance,
    CAST(x.excess AS BIGINT) AS excess,
    coalesce(a.double_assigned, 0) AS double_assigned,
    (unix_micros(r.`at`) - unix_micros(st.started)) DIV 1000 AS duration_ms
FROM rebalances r
LEFT JOIN continuity c USING (cluster, group_id, timeline, version)
LEFT JOIN assigned a USING (cluster, group_id, timeline, version)
LEFT JOIN revoked v USING (cluster, group_id, timeline, version)
LEFT JOIN unassigned u USING (cluster, group_id, timeline, version)
LEFT JOIN spread s USING (cluster, group_id, timeline, version)
LEFT JOIN excess x USING (cluster, group_id, timeline, version)
LEFT JOIN started st USING (cluster, group_id, timeline, version)
"""


def compute_metrics(spark: Any, log: Any) -> Any:
    """The metrics of every ``AssignmentCompleted`` in the log DataFrame ``log``."""
    # The SQL reads the facts several times: fold each stream once.
    facts = map_streams(log, _facts, _FACTS).persist()
    suffix = f"{id(log):x}"
    log.createOrReplaceTempView(f"kstore_log_{suffix}")
    facts.createOrReplaceTempView(f"kstore_facts_{suffix}")
    return spark.sql(
        _METRICS_SQL.format(log=f"kstore_log_{suffix}", facts=f"kstore_facts_{suffix}")
    ).select(*METRIC_COLUMNS)


def summarise(metrics: Any, window: str = "hour") -> Any:
    """Per stream and window (``hour`` or ``day`` of ``at``): the sums and averages."""
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
            F.avg("stickiness").alias("stickiness"),
            F.avg("imbalance").alias("imbalance"),
        )
        .select(*WINDOW_COLUMNS)
    )


def write_metrics(spark: Any, log: Any, out: Path, window: str = "hour") -> int:
    """``out/metrics`` and ``out/windows`` as Parquet (``cluster=/group=``); the row count."""
    metrics = compute_metrics(spark, log).persist()
    try:
        write_partitioned(metrics, out / "metrics", ["timeline", "version"], _BY)
        write_partitioned(
            summarise(metrics, window), out / "windows", ["timeline", "window_start"], _BY
        )
        return int(metrics.count())
    finally:
        metrics.unpersist()
