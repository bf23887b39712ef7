-- key_owner: which member consumed key $key of topic $topic at time $at: the partition
-- that Kafka's default partitioner gives the key (murmur2 of its UTF-8 bytes) with the
-- topic's partition count in force at $at (its latest TopicChanged at or before $at;
-- none, and no row, when a TopicDeleted came after it),
-- and that partition's owner then (its latest ownership change at or before $at).
-- Parameters: $topic, $key, $at (required; ISO-8601, UTC when no zone);
-- $cluster, $group, $timeline (NULL: all).
-- Required: $topic, $key, $at
WITH
moment AS (
    SELECT CAST(CAST($at AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS TIMESTAMP) AS t
),
sizes AS (
    SELECT cluster, group_id, timeline,
           -- arg_max_null: a later TopicDeleted's NULL wins (arg_max would skip it).
           arg_max_null(CASE WHEN type = 'TopicChanged' THEN partitions END, version)
               AS partitions
    FROM kstore_topic_events, moment
    WHERE topic = $topic AND "at" <= moment.t
      AND ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timeline IS NULL OR timeline = $timeline)
    GROUP BY ALL
),
located AS (
    SELECT *, kstore_partition($key, partitions) AS "partition" FROM sizes
    WHERE partitions IS NOT NULL
)
SELECT l.cluster, l.group_id AS "group", l.timeline, $topic AS topic, $key AS "key",
       l.partitions, l."partition",
       (SELECT arg_max(o.owner, o.version) FROM kstore_ownership o, moment
        WHERE o.cluster = l.cluster AND o.group_id = l.group_id AND o.timeline = l.timeline
          AND o.topic = $topic AND o."partition" = l."partition" AND o."at" <= moment.t
       ) AS owner
FROM located l
ORDER BY l.cluster, "group", l.timeline
