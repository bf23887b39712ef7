-- topics: churn and stickiness per topic and time window, per stream.
-- moved, new, kept and retainable restricted to the partitions of each topic (the
-- definitions of metrics.md), summed over the window; stickiness = kept / retainable
-- over the window; imbalance = the window's average, over its rebalances, of max - min
-- partitions of the topic among the members subscribed to it at E.
-- Parameters: $cluster, $group, $timeline (NULL: all); $window: 'hour' (default) or 'day'.
WITH
events AS (
    SELECT cluster, group_id, timeline, version, "at"
    FROM kstore_rebalances
    WHERE ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timeline IS NULL OR timeline = $timeline)
),
moves AS (
    SELECT o.cluster, o.group_id, o.timeline, o.version, o.topic,
           count(o.previous_owner) AS moved,
           count(*) - count(o.previous_owner) AS new,
           count(s.member) AS retainable_moved
    FROM kstore_ownership o
    JOIN events USING (cluster, group_id, timeline, version)
    LEFT JOIN kstore_members_at s
      ON s.cluster = o.cluster AND s.group_id = o.group_id AND s.timeline = o.timeline
     AND s.version = o.version AND s.member = o.previous_owner AND s.topic = o.topic
    WHERE o.cause = 'AssignmentCompleted'
    GROUP BY ALL
),
subscribers AS (
    SELECT m.cluster, m.group_id, m.timeline, m.version, m.topic, m.member,
           coalesce(h.partitions, 0) AS load, coalesce(h.kept, 0) AS kept
    FROM kstore_members_at m
    JOIN events USING (cluster, group_id, timeline, version)
    LEFT JOIN kstore_holdings h USING (cluster, group_id, timeline, version, member, topic)
    WHERE m.topic IS NOT NULL
),
per_topic AS (
    SELECT cluster, group_id, timeline, version, topic,
           sum(kept) AS kept, max(load) - min(load) AS imbalance
    FROM subscribers GROUP BY ALL
),
joined AS (
    SELECT e.cluster, e.group_id, e.timeline, e."at",
           coalesce(p.topic, mv.topic) AS topic,
           coalesce(mv.moved, 0) AS moved, coalesce(mv.new, 0) AS new,
           coalesce(p.kept, 0) AS kept,
           coalesce(p.kept, 0) + coalesce(mv.retainable_moved, 0) AS retainable,
           p.imbalance
    FROM events e
    JOIN (per_topic p FULL JOIN moves mv USING (cluster, group_id, timeline, version, topic))
      USING (cluster, group_id, timeline, version)
)
SELECT
    cluster, group_id AS "group", timeline, topic,
    date_trunc(coalesce($window, 'hour'), "at") AS window_start,
    count(*) AS rebalances,
    sum(moved) AS churn,
    sum(new) AS new,
    sum(kept) AS kept,
    sum(retainable) AS retainable,
    sum(kept) / nullif(sum(retainable), 0) AS stickiness,
    avg(imbalance) AS imbalance
FROM joined
WHERE coalesce($window, 'hour') IN ('hour', 'day')
GROUP BY ALL
ORDER BY cluster, "group", timeline, topic, window_start
