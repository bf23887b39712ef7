-- compare: one row per timeline of a group: its rebalances, total churn (moved), new
-- and revoked, average stickiness and imbalance, and total excess (metrics.md).
-- Parameters: $group (required), $cluster (default 'default'), $timelines (comma
-- separated; NULL: all of the group's).
-- Required: $group
SELECT m.timeline,
       count(*) AS rebalances,
       sum(m.moved) AS churn,
       sum(m.new) AS new,
       sum(m.revoked) AS revoked,
       avg(m.stickiness) AS stickiness,
       avg(m.imbalance) AS imbalance,
       sum(m.excess) AS excess,
       sum(m.unassigned) AS unassigned
FROM @metrics m
WHERE m.cluster = coalesce($cluster, 'default')
  AND ($timelines IS NULL OR list_contains(string_split($timelines, ','), m.timeline))
GROUP BY m.timeline
ORDER BY m.timeline
