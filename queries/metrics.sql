-- metrics: the per-rebalance numbers of docs/spec/metrics.md, one row per
-- AssignmentCompleted E, in stream order, with exactly that page's columns.
-- Parameters: $cluster, $group, $timeline (each NULL: all).
--
-- Where each definition lives:
-- * prev(p): kstore_ownership (the store's projector) keeps, per partition, its owner in
--   the latest earlier AssignmentCompleted that gave it to exactly one member, renamed by
--   MemberReplaced. A row at E's version (cause AssignmentCompleted) is a partition that
--   E gives to exactly one member other than prev(p): previous_owner NULL = new, else
--   moved. Double-assigned partitions get no row and leave prev(p) as it was.
-- * kstore_holdings.kept: E's single-owner partitions whose prev(p) is their owner.
-- * members and subscriptions at E: kstore_members_at (the fold's members after E);
--   topics at E: kstore_topics_at.
-- * duration_ms: whole milliseconds, rounded down.
-- * revoked: kstore_revocations (pairs of the previous assignment, aliased, not repeated).
WITH
events AS (
    SELECT cluster, group_id, timeline, version, "at", generation
    FROM kstore_rebalances
    WHERE ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timeline IS NULL OR timeline = $timeline)
),
changes AS (
    SELECT o.cluster, o.group_id, o.timeline, o.version, o.topic, o.previous_owner,
           s.member IS NOT NULL AS retainable
    FROM kstore_ownership o
    JOIN events e USING (cluster, group_id, timeline, version)
    LEFT JOIN kstore_members_at s
      ON s.cluster = o.cluster AND s.group_id = o.group_id AND s.timeline = o.timeline
     AND s.version = o.version AND s.member = o.previous_owner AND s.topic = o.topic
    WHERE o.cause = 'AssignmentCompleted'
),
moves AS (
    SELECT cluster, group_id, timeline, version,
           count(previous_owner) AS moved,
           count(*) - count(previous_owner) AS new,
           count(*) FILTER (WHERE retainable) AS retainable_moved
    FROM changes GROUP BY ALL
),
holdings AS (
    SELECT h.*, s.member IS NOT NULL AS subscribed,
           t.topic IS NOT NULL AS topic_subscribed
    FROM kstore_holdings h
    JOIN events e USING (cluster, group_id, timeline, version)
    LEFT JOIN kstore_members_at s
      ON s.cluster = h.cluster AND s.group_id = h.group_id AND s.timeline = h.timeline
     AND s.version = h.version AND s.member = h.member AND s.topic = h.topic
    LEFT JOIN (
        SELECT DISTINCT m.cluster, m.group_id, m.timeline, m.version, m.topic
        FROM kstore_members_at m
        JOIN kstore_topics_at x USING (cluster, group_id, timeline, version, topic)
    ) t
      ON t.cluster = h.cluster AND t.group_id = h.group_id AND t.timeline = h.timeline
     AND t.version = h.version AND t.topic = h.topic
),
held AS (
    SELECT cluster, group_id, timeline, version,
           sum(partitions - shared) AS single,
           sum(kept) FILTER (WHERE subscribed) AS kept,
           sum(partitions - shared - missing) FILTER (WHERE topic_subscribed) AS covered
    FROM holdings GROUP BY ALL
),
doubles AS (
    SELECT d.cluster, d.group_id, d.timeline, d.version,
           count(DISTINCT (d.topic, d.partition)) AS double_assigned,
           count(DISTINCT (d.topic, d.partition)) FILTER (
               WHERE d.partition < x.partitions
                 AND EXISTS (
                     SELECT 1 FROM kstore_members_at m
                     WHERE m.cluster = d.cluster AND m.group_id = d.group_id
                       AND m.timeline = d.timeline AND m.version = d.version
                       AND m.topic = d.topic)
           ) AS covered
    FROM kstore_double_assignments d
    JOIN events e USING (cluster, group_id, timeline, version)
    LEFT JOIN kstore_topics_at x USING (cluster, group_id, timeline, version, topic)
    GROUP BY ALL
),
revocations AS (
    SELECT r.cluster, r.group_id, r.timeline, r.version,
           count(DISTINCT (r.topic, r.partition)) AS revoked
    FROM kstore_revocations r
    JOIN events e USING (cluster, group_id, timeline, version)
    GROUP BY ALL
),
-- partitions that E's members could be given: topics existing at E with a subscriber
wanted AS (
    SELECT x.cluster, x.group_id, x.timeline, x.version, sum(x.partitions) AS partitions
    FROM kstore_topics_at x
    JOIN events e USING (cluster, group_id, timeline, version)
    WHERE EXISTS (
        SELECT 1 FROM kstore_members_at m
        WHERE m.cluster = x.cluster AND m.group_id = x.group_id AND m.timeline = x.timeline
          AND m.version = x.version AND m.topic = x.topic)
    GROUP BY ALL
),
membership AS (
    SELECT m.cluster, m.group_id, m.timeline, m.version, m.member,
           bool_or(x.topic IS NOT NULL) AS counted
    FROM kstore_members_at m
    JOIN events e USING (cluster, group_id, timeline, version)
    LEFT JOIN kstore_topics_at x USING (cluster, group_id, timeline, version, topic)
    GROUP BY ALL
),
loads AS (
    SELECT m.cluster, m.group_id, m.timeline, m.version, m.counted,
           coalesce(l.load, 0) AS load
    FROM membership m
    LEFT JOIN (
        SELECT cluster, group_id, timeline, version, member, sum(partitions) AS load
        FROM holdings GROUP BY ALL
    ) l USING (cluster, group_id, timeline, version, member)
),
balance AS (
    SELECT cluster, group_id, timeline, version,
           count(*) AS members,
           max(load) FILTER (WHERE counted) - min(load) FILTER (WHERE counted) AS imbalance,
           sum(load) FILTER (WHERE counted) AS total,
           count(*) FILTER (WHERE counted) AS n
    FROM loads GROUP BY ALL
),
excess AS (
    SELECT l.cluster, l.group_id, l.timeline, l.version,
           CAST(sum(greatest(0, l.load - ceil(b.total / b.n))) AS BIGINT) AS excess
    FROM loads l JOIN balance b USING (cluster, group_id, timeline, version)
    WHERE l.counted
    GROUP BY ALL
),
starts AS (
    SELECT e.cluster, e.group_id, e.timeline, e.version,
           max(s.version) AS start_version
    FROM events e
    JOIN kstore_rebalance_starts s
      ON s.cluster = e.cluster AND s.group_id = e.group_id AND s.timeline = e.timeline
     AND s.generation = e.generation AND s.version < e.version
    GROUP BY ALL
)
SELECT
    e.cluster,
    e.group_id AS "group",
    e.timeline,
    e.version,
    e.generation,
    e."at",
    coalesce(b.members, 0) AS members,
    coalesce(h.single, 0) + coalesce(d.double_assigned, 0) AS assigned,
    coalesce(mv.moved, 0) AS moved,
    coalesce(mv.new, 0) AS new,
    coalesce(r.revoked, 0) AS revoked,
    coalesce(w.partitions, 0) - coalesce(h.covered, 0) - coalesce(d.covered, 0) AS unassigned,
    coalesce(h.kept, 0) + coalesce(mv.retainable_moved, 0) AS retainable,
    coalesce(h.kept, 0) AS kept,
    coalesce(h.kept, 0) / nullif(coalesce(h.kept, 0) + coalesce(mv.retainable_moved, 0), 0)
        AS stickiness,
    b.imbalance,
    x.excess,
    coalesce(d.double_assigned, 0) AS double_assigned,
    (epoch_us(e."at") - epoch_us(rs."at")) // 1000 AS duration_ms
FROM events e
LEFT JOIN moves mv USING (cluster, group_id, timeline, version)
LEFT JOIN held h USING (cluster, group_id, timeline, version)
LEFT JOIN doubles d USING (cluster, group_id, timeline, version)
LEFT JOIN revocations r USING (cluster, group_id, timeline, version)
LEFT JOIN wanted w USING (cluster, group_id, timeline, version)
LEFT JOIN balance b USING (cluster, group_id, timeline, version)
LEFT JOIN excess x USING (cluster, group_id, timeline, version)
LEFT JOIN starts st USING (cluster, group_id, timeline, version)
LEFT JOIN kstore_rebalance_starts rs
  ON rs.cluster = e.cluster AND rs.group_id = e.group_id AND rs.timeline = e.timeline
 AND rs.version = st.start_version
ORDER BY e.cluster, e.group_id, e.timeline, e.version
