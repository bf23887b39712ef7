"""``kstore spark metrics``: shared/spec/metrics.md per rebalance, and windowed summaries.

Two steps, the split the DuckDB store makes too:

1. Per stream, in one Spark task each, the store's own fold (``GroupState``, advanced
   with the partitions' last owners by ``Projector``) states what it knows at each E:
   ``prev(p)`` of E's partitions, the previous assignment (MemberReplaced applied), the
   members with their subscriptions and the topics. No second fold is written for Spark.
2. Spark SQL computes every number from those facts and from E's assignment exploded
   partition by partition (a cluster can afford the partition-level joins that the
   DuckDB query avoids with pre-aggregated holdings).

The result has the columns of the ``metrics`` query (``METRIC_COLUMNS``), one row per
``AssignmentCompleted``; ``summarise`` adds up a window's rebalances as
``queries/windows.sql`` does.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore.spark._frames import STREAM_COLUMNS, map_streams, write_partitioned
from kstore.spark._schema import LogRow
from kstore.store.events import AssignmentCompleted
from kstore.store.projections import Projector, StreamHead

__all__ = ["METRIC_COLUMNS", "WINDOW_COLUMNS", "compute_metrics", "summarise", "write_metrics"]

METRIC_COLUMNS: tuple[str, ...] = ("cluster", "group", "timeline", "version", "generation")
METRIC_COLUMNS += ("at", "members", "assigned", "moved", "new", "revoked", "unassigned")
METRIC_COLUMNS += ("retainable", "kept", "stickiness", "imbalance", "excess")
METRIC_COLUMNS += ("double_assigned", "duration_ms")

WINDOW_COLUMNS: tuple[str, ...] = ("cluster", "group", "timeline", "window_start")
WINDOW_COLUMNS += ("rebalances", "churn", "new", "revoked", "stickiness", "imbalance")

_BY = ["cluster"]
"""The results' partition column. Not the group too: a file per group and window of a
few rows each would make writing (and reading) slower than computing them."""

_FACTS = pa.schema(
    [
        *(pa.field(name, pa.string()) for name in STREAM_COLUMNS),
        pa.field("version", pa.int32()),
        pa.field("kind", pa.string()),
        pa.field("member", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int64()),
        pa.field("partitions", pa.int64()),
    ]
)
"""What the fold knows at each E (``version``), by ``kind``:

- ``prev``: ``member`` = prev(p) of a partition E assigns (none: no row);
- ``before``: a (member, partition) of the previous assignment, MemberReplaced applied;
- ``member``: a member of the group at E and a topic it subscribes to (NULL: none);
- ``topic``: a topic that exists at E with its ``partitions``.
"""


def _facts(events: list[LogRow]) -> pa.Table:
    # The store's projector, without its tables, keeps the fold and every partition's
    # last owner (``prev(p)``: double assignments skipped, MemberReplaced applied).
    projector = Projector(keep=False)
    head = StreamHead()
    rows: list[tuple[Any, ...]] = []
    for row in events:
        event = row.event
        data = event.data
        if isinstance(data, AssignmentCompleted):
            last = head.last_owner
            version = head.state.version + 1
            assigned = dict.fromkeys(tp for tps in data.assignment.values() for tp in tps)
            rows.extend(
                (version, "prev", last[tp], tp[0], tp[1], None) for tp in assigned if tp in last
            )
            rows.extend(
                (version, "before", member, topic, partition, None)
                for member, tps in head.state.assignment.items()
                for topic, partition in dict.fromkeys(tps)
            )
        projector.feed(head, event, event.at.astimezone(UTC).replace(tzinfo=None))
        if isinstance(data, AssignmentCompleted):
            state = head.state
            rows.extend(
                (state.version, "member", member_id, topic, None, None)
                for member_id, member in state.members.items()
                for topic in (dict.fromkeys(member.topics) or (None,))
            )
            rows.extend(
                (state.version, "topic", None, topic, None, count)
                for topic, count in state.topics.items()
            )
    stream = events[0].event.stream
    columns = list(zip(*rows, strict=True)) if rows else [()] * 6
    names = _FACTS.names[len(STREAM_COLUMNS) :]
    table = {name: [value] * len(rows) for name, value in zip(STREAM_COLUMNS, stream, strict=True)}
    table |= {name: list(values) for name, values in zip(names, columns, strict=True)}
    return pa.table(table, schema=_FACTS)


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
prevs AS (SELECT * FROM {facts} WHERE kind = 'prev'),
subscribed AS (  -- (member, topic) pairs of the group at E
    SELECT DISTINCT cluster, group_id, timeline, version, member, topic
    FROM members WHERE topic IS NOT NULL
),
singles AS (  -- partitions E gives to one member, with prev(p)
    SELECT o.cluster, o.group_id, o.timeline, o.version, o.topic, o.member, p.member AS prev
    FROM owners o
    LEFT JOIN prevs p
      ON p.cluster = o.cluster AND p.group_id = o.group_id AND p.timeline = o.timeline
     AND p.version = o.version AND p.topic = o.topic AND p.partition = o.partition
    WHERE o.holders = 1
),
continuity AS (
    SELECT s.cluster, s.group_id, s.timeline, s.version,
           count_if(s.prev <> s.member) AS moved,
           count_if(s.prev IS NULL) AS new,
           count_if(m.member IS NOT NULL) AS retainable,
           count_if(m.member IS NOT NULL AND s.prev = s.member) AS kept
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
revoked AS (  -- partitions of the previous assignment's members that E takes from them
    SELECT p.cluster, p.group_id, p.timeline, p.version,
           count(DISTINCT p.topic, p.partition) AS revoked
    FROM {facts} p
    LEFT ANTI JOIN held h
      ON h.cluster = p.cluster AND h.group_id = p.group_id AND h.timeline = p.timeline
     AND h.version = p.version AND h.member = p.member AND h.topic = p.topic
     AND h.partition = p.partition
    WHERE p.kind = 'before'
    GROUP BY p.cluster, p.group_id, p.timeline, p.version
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
    """``out/metrics`` and ``out/windows`` as Parquet (``cluster=`` folders); the row count."""
    metrics = compute_metrics(spark, log).persist()
    try:
        write_partitioned(metrics, out / "metrics", ["group", "timeline", "version"], _BY)
        write_partitioned(
            summarise(metrics, window), out / "windows", ["group", "timeline", "window_start"], _BY
        )
        return int(metrics.count())
    finally:
        metrics.unpersist()
