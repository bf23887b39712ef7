-- timelines: several timelines of one group side by side, rebalance by rebalance: one
-- row per time at which any of them completed a rebalance, and per timeline its
-- metrics (metrics.md) at that time (replays keep the times of the events they replay).
-- Parameters: $group (required), $cluster (default 'default'), $timelines (comma
-- separated; NULL: all of the group's).
-- Required: $group
SELECT m.timeline, m."at", m.version, m.generation, m.members, m.moved, m.new, m.revoked,
       m.kept, m.retainable, m.stickiness, m.imbalance, m.excess, m.unassigned
FROM @metrics m
WHERE m.cluster = coalesce($cluster, 'default')
  AND ($timelines IS NULL OR list_contains(string_split($timelines, ','), m.timeline))
ORDER BY m."at", m.timeline, m.version
