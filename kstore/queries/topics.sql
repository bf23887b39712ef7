-- topics: churn and stickiness per topic and time window, per stream.
-- moved, new, revoked, kept and retainable restricted to the partitions of each topic
-- (the definitions of metrics.md; over a rebalance's topics they add up to its
-- `metrics` row), summed over the window; stickiness = kept / retainable over the
-- window; imbalance = the window's average, over its rebalances, of max - min
-- partitions of the topic among the members subscribed to it at E (NULL: none).
-- A topic has a row for a rebalance E when E assigns it, the previous assignment held
-- it or a member of the group at E subscribes to it (kstore_topic_stats).
-- Parameters: $cluster, $group, $timeline (NULL: all); $window: 'hour' (default) or 'day'.
SELECT
    t.cluster, t.group_id AS "group", t.timeline, t.topic,
    date_trunc(coalesce($window, 'hour'), s."at") AS window_start,
    count(*) AS rebalances,
    CAST(sum(t.moved) AS BIGINT) AS churn,
    CAST(sum(t.new) AS BIGINT) AS new,
    CAST(sum(t.revoked) AS BIGINT) AS revoked,
    CAST(sum(t.kept) AS BIGINT) AS kept,
    CAST(sum(t.retainable) AS BIGINT) AS retainable,
    sum(t.kept) / nullif(sum(t.retainable), 0) AS stickiness,
    avg(t.imbalance) AS imbalance
FROM kstore_topic_stats t
JOIN kstore_rebalance_stats s USING (cluster, group_id, timeline, version)
WHERE coalesce($window, 'hour') IN ('hour', 'day')
  AND ($cluster IS NULL OR t.cluster = $cluster)
  AND ($group IS NULL OR t.group_id = $group)
  AND ($timeline IS NULL OR t.timeline = $timeline)
GROUP BY ALL
ORDER BY t.cluster, "group", t.timeline, t.topic, window_start
