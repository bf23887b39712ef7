-- member_history: a member's history: its membership events (joined, subscription
-- changes, left, replaced) and, for each rebalance, the partitions it was given.
-- Parameters: $member (required); $cluster, $group, $timeline (NULL: all).
-- Required: $member
WITH
scope AS (
    SELECT * FROM kstore_member_events
    WHERE ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timeline IS NULL OR timeline = $timeline)
),
membership AS (
    SELECT cluster, group_id, timeline, version, "at", type AS what,
           CASE
               WHEN type = 'MemberReplaced' AND old_member = $member
                   THEN 'replaced by ' || member
               WHEN type = 'MemberReplaced' THEN 'replaces ' || old_member
               WHEN type = 'MemberLeft' THEN reason
               ELSE array_to_string(topics, ',')
           END AS detail,
           NULL::INTEGER AS partitions
    FROM scope
    WHERE member = $member OR old_member = $member
),
held AS (
    SELECT a.cluster, a.group_id, a.timeline, a.version, r."at",
           'AssignmentCompleted' AS what,
           string_agg(a.topic || '-' || a."partition", ','
                      ORDER BY a.topic, a."partition") AS detail,
           count(*) AS partitions
    FROM kstore_assignments a
    JOIN kstore_rebalances r USING (cluster, group_id, timeline, version)
    WHERE a.member = $member
      AND ($cluster IS NULL OR a.cluster = $cluster)
      AND ($group IS NULL OR a.group_id = $group)
      AND ($timeline IS NULL OR a.timeline = $timeline)
    GROUP BY ALL
)
SELECT cluster, group_id AS "group", timeline, version, "at", what, detail, partitions
FROM (SELECT * FROM membership UNION ALL SELECT * FROM held)
ORDER BY cluster, "group", timeline, version
