-- timelines: several timelines of one group side by side, rebalance by rebalance: one
-- row per time at which any of them completed a rebalance, and per timeline its
-- metrics (metrics.md) at that time (replays keep the times of the events they replay),
-- the source version the rebalance answers and whether its timeline is complete, up to
-- which source version it has decided (the coverage query).
-- Parameters: $group (required), $cluster (default 'default'), $timelines (comma
-- separated; NULL: all of the group's).
-- Required: $group
SELECT m.timeline, m."at", m.version, m.generation, m.members, m.moved, m.new, m.revoked,
       m.kept, m.retainable, m.stickiness, m.imbalance, m.excess, m.unassigned,
       c.source, c.source_version, c.decided_to, c.complete
FROM @metrics m
JOIN @coverage c
  ON c.cluster = m.cluster AND c."group" = m."group" AND c.timeline = m.timeline
 AND c.version = m.version
WHERE m.cluster = coalesce($cluster, 'default')
  AND ($timelines IS NULL OR list_contains(string_split($timelines, ','), m.timeline))
ORDER BY m."at", m.timeline, m.version
