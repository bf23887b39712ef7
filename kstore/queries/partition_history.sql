-- partition_history: who owned each partition, from when to when: one row per change
-- of owner (kstore_ownership: an AssignmentCompleted that gives the partition to one
-- member other than its previous owner, or a MemberReplaced), `until` being the time of
-- the partition's next change (NULL: still its owner at the end of the stream).
-- Parameters: $cluster, $group, $timeline (NULL: all); $topic, $partition (NULL: all).
SELECT
    cluster, group_id AS "group", timeline, topic, "partition",
    owner, previous_owner, "at" AS since,
    lead("at") OVER (
        PARTITION BY cluster, group_id, timeline, topic, "partition" ORDER BY version
    ) AS until,
    version, generation, cause
FROM kstore_ownership
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND ($group IS NULL OR group_id = $group)
  AND ($timeline IS NULL OR timeline = $timeline)
  AND ($topic IS NULL OR topic = $topic)
  AND ($partition IS NULL OR "partition" = CAST($partition AS INTEGER))
ORDER BY cluster, "group", timeline, topic, "partition", version
