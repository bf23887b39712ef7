-- anomalies: odd facts of each rebalance: partitions assigned to more than one member
-- (kind 'double-assigned', one row per partition, `members` listing them), partitions
-- of subscribed topics assigned to nobody ('unassigned'), partitions that do not exist
-- ('nonexistent-partition'), and members given partitions while not in the group
-- ('unknown-member', one row per member and topic, `partitions` counting them).
-- A partition a cooperative rebalance (KIP-429) gives to nobody because it takes it
-- from its previous owner (the owner revokes it first; a follow-up round assigns it) is
-- 'withheld', and `expected` is true: the protocol does that, nothing went wrong. The
-- protocol is the event's, else the strategy catalogue's (kstore_protocol).
-- In stream order, a rebalance whose generation is below the one before it
-- ('generation-backwards') and an event of any type whose `at` is before the one before
-- it ('time-backwards'; `generation` NULL unless it is a rebalance) are listed too: a
-- recorder's clock or a merge of two recorders' streams, not what a group does.
-- Parameters: $cluster, $group, $timeline (NULL: all).
WITH
events AS (
    SELECT cluster, group_id, timeline, version, "at", generation,
           coalesce(protocol, kstore_protocol(strategy)) AS protocol
    FROM kstore_rebalances
    WHERE ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timeline IS NULL OR timeline = $timeline)
),
doubles AS (
    SELECT cluster, group_id, timeline, version, 'double-assigned' AS kind,
           topic, "partition", string_agg(member, ',' ORDER BY member) AS members,
           1 AS partitions
    FROM kstore_double_assignments JOIN events USING (cluster, group_id, timeline, version)
    GROUP BY ALL
),
wanted AS (  -- topics a member subscribes to with a partition nobody is given
    SELECT DISTINCT x.cluster, x.group_id, x.timeline, x.version, x.topic, x.partitions
    FROM kstore_topics_at x
    JOIN events USING (cluster, group_id, timeline, version)
    JOIN kstore_members_at m USING (cluster, group_id, timeline, version, topic)
    -- kstore_topic_stats counts them (`unassigned`: partitions less those covered, for a
    -- topic that exists and has subscribers): only those rebalances' partitions are
    -- looked for, not every partition of every rebalance
    JOIN kstore_topic_stats t USING (cluster, group_id, timeline, version, topic)
    WHERE t.unassigned > 0
),
unassigned AS (
    SELECT w.cluster, w.group_id, w.timeline, w.version,
           CASE WHEN e.protocol = 'cooperative' AND EXISTS (
                    SELECT 1 FROM kstore_revocations v
                    WHERE v.cluster = w.cluster AND v.group_id = w.group_id
                      AND v.timeline = w.timeline AND v.version = w.version
                      AND v.topic = w.topic AND v."partition" = p.range)
                THEN 'withheld' ELSE 'unassigned' END AS kind,
           w.topic, CAST(p.range AS INTEGER) AS "partition", NULL AS members, 1 AS partitions
    FROM wanted w JOIN events e USING (cluster, group_id, timeline, version),
         range(w.partitions) p
    WHERE NOT EXISTS (
        SELECT 1 FROM kstore_assignments a
        WHERE a.cluster = w.cluster AND a.group_id = w.group_id AND a.timeline = w.timeline
          AND a.version = w.version AND a.topic = w.topic AND a."partition" = p.range)
),
nonexistent AS (
    SELECT DISTINCT a.cluster, a.group_id, a.timeline, a.version,
           'nonexistent-partition' AS kind, a.topic, a."partition",
           NULL AS members, 1 AS partitions
    FROM kstore_assignments a
    JOIN events USING (cluster, group_id, timeline, version)
    LEFT JOIN kstore_topics_at x USING (cluster, group_id, timeline, version, topic)
    WHERE x.partitions IS NULL OR a."partition" >= x.partitions
),
unknown AS (
    SELECT a.cluster, a.group_id, a.timeline, a.version, 'unknown-member' AS kind,
           a.topic, NULL AS "partition", a.member AS members,
           count(DISTINCT a."partition") AS partitions
    FROM kstore_assignments a
    JOIN events USING (cluster, group_id, timeline, version)
    WHERE NOT EXISTS (
        SELECT 1 FROM kstore_members_at m
        WHERE m.cluster = a.cluster AND m.group_id = a.group_id AND m.timeline = a.timeline
          AND m.version = a.version AND m.member = a.member)
    GROUP BY ALL
),
generations AS (
    SELECT cluster, group_id, timeline, version, 'generation-backwards' AS kind,
           NULL AS topic, NULL AS "partition", NULL AS members, NULL AS partitions
    FROM (SELECT *, lag(generation) OVER (PARTITION BY cluster, group_id, timeline
                                          ORDER BY version) AS before
          FROM events)
    WHERE generation < before
),
late AS (  -- events of any type before the one before them
    SELECT cluster, group_id, timeline, version, "at"
    FROM (SELECT cluster, group_id, timeline, version, "at",
                 lag("at") OVER (PARTITION BY cluster, group_id, timeline
                                 ORDER BY version) AS before
          FROM kstore_events
          WHERE ($cluster IS NULL OR cluster = $cluster)
            AND ($group IS NULL OR group_id = $group)
            AND ($timeline IS NULL OR timeline = $timeline))
    WHERE "at" < before
),
found AS (
    SELECT * FROM doubles
    UNION ALL SELECT * FROM unassigned
    UNION ALL SELECT * FROM nonexistent
    UNION ALL SELECT * FROM unknown
    UNION ALL SELECT * FROM generations
    UNION ALL
    SELECT cluster, group_id, timeline, version, 'time-backwards', NULL, NULL, NULL, NULL
    FROM late
)
SELECT f.cluster, f.group_id AS "group", f.timeline, f.version, e.generation,
       coalesce(e."at", l."at") AS "at", f.kind, f.topic, f."partition", f.members,
       f.partitions, f.kind = 'withheld' AS expected
FROM found f
LEFT JOIN events e USING (cluster, group_id, timeline, version)
LEFT JOIN late l USING (cluster, group_id, timeline, version)
ORDER BY f.cluster, "group", f.timeline, f.version, f.kind, f.topic, f."partition", f.members
