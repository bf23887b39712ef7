-- metrics: the per-rebalance numbers of metrics.md (kstore docs metrics), one row per
-- AssignmentCompleted E, in stream order, with exactly that page's columns.
-- Parameters: $cluster, $group, $timeline (each NULL: all).
--
-- The partition-level work is done once per E when it is stored (the projection
-- kstore/store/analytics_rows.py, rebuilt identically by `kstore rebuild`):
-- * kstore_topic_stats: per topic of E, the partitions it assigns (`assigned`), those
--   given to more than one member (`double_assigned`: left out of moved, new,
--   retainable and kept, and not a prev(p) for later events), `moved` / `new` (single
--   owner, prev(p) another member / None), `retainable` (prev(p) a member of the group
--   at E subscribed to the topic), `kept` (of those, owner = prev(p)), `revoked`
--   (partitions of the previous assignment, MemberReplaced aliasing applied, not given
--   again to the same member) and `unassigned` (existing topic with a subscriber at E,
--   partitions E gives to nobody). Topics add up to E's numbers.
-- * kstore_rebalance_stats: members of the group at E; imbalance and excess over the
--   members at E subscribing to at least one existing topic (NULL when there is none).
-- * duration_ms (here): `at` of E minus `at` of the latest RebalanceStarted before E of
--   the same generation, whole milliseconds rounded down; NULL without one.
WITH
stats AS (
    SELECT cluster, group_id, timeline, version, generation, "at", members, imbalance, excess
    FROM kstore_rebalance_stats
    WHERE ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timeline IS NULL OR timeline = $timeline)
),
topics AS (
    SELECT cluster, group_id, timeline, version,
           CAST(sum(assigned) AS BIGINT) AS assigned,
           CAST(sum(moved) AS BIGINT) AS moved,
           CAST(sum(new) AS BIGINT) AS new,
           CAST(sum(revoked) AS BIGINT) AS revoked,
           CAST(sum(unassigned) AS BIGINT) AS unassigned,
           CAST(sum(retainable) AS BIGINT) AS retainable,
           CAST(sum(kept) AS BIGINT) AS kept,
           CAST(sum(double_assigned) AS BIGINT) AS double_assigned
    FROM kstore_topic_stats
    WHERE ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timeline IS NULL OR timeline = $timeline)
    GROUP BY ALL
),
starts AS (
    SELECT e.cluster, e.group_id, e.timeline, e.version,
           arg_max(s."at", s.version) AS started
    FROM stats e
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
    CAST(e.members AS BIGINT) AS members,
    coalesce(t.assigned, 0) AS assigned,
    coalesce(t.moved, 0) AS moved,
    coalesce(t.new, 0) AS new,
    coalesce(t.revoked, 0) AS revoked,
    coalesce(t.unassigned, 0) AS unassigned,
    coalesce(t.retainable, 0) AS retainable,
    coalesce(t.kept, 0) AS kept,
    t.kept / nullif(t.retainable, 0) AS stickiness,
    CAST(e.imbalance AS BIGINT) AS imbalance,
    CAST(e.excess AS BIGINT) AS excess,
    coalesce(t.double_assigned, 0) AS double_assigned,
    (epoch_us(e."at") - epoch_us(s.started)) // 1000 AS duration_ms
FROM stats e
LEFT JOIN topics t USING (cluster, group_id, timeline, version)
LEFT JOIN starts s USING (cluster, group_id, timeline, version)
ORDER BY e.cluster, e.group_id, e.timeline, e.version
