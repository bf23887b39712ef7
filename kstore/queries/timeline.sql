-- timeline: the rebalances of each stream: generation, strategy, protocol, the reason
-- and start of the RebalanceStarted of the same generation before it, the duration, the
-- interval since the previous rebalance, and whether it belongs to a storm (at least
-- $storm_count rebalances, this one included, within $storm_seconds ending at it).
-- Parameters: $cluster, $group, $timeline (NULL: all); $storm_count (default 3),
-- $storm_seconds (default 300).
WITH
events AS (
    SELECT r.*,
           (SELECT s.version FROM kstore_rebalance_starts s
            WHERE s.cluster = r.cluster AND s.group_id = r.group_id
              AND s.timeline = r.timeline AND s.generation = r.generation
              AND s.version < r.version
            ORDER BY s.version DESC LIMIT 1) AS start_version
    FROM kstore_rebalances r
    WHERE ($cluster IS NULL OR r.cluster = $cluster)
      AND ($group IS NULL OR r.group_id = $group)
      AND ($timeline IS NULL OR r.timeline = $timeline)
),
described AS (
    SELECT e.*, s.reason, s."at" AS started,
           count(*) OVER (
               PARTITION BY e.cluster, e.group_id, e.timeline ORDER BY e."at"
               RANGE BETWEEN to_microseconds(
                   CAST(1000000 * coalesce(CAST($storm_seconds AS DOUBLE), 300) AS BIGINT))
               PRECEDING AND CURRENT ROW) AS recent,
           lag(e."at") OVER (
               PARTITION BY e.cluster, e.group_id, e.timeline ORDER BY e.version) AS previous_at
    FROM events e
    LEFT JOIN kstore_rebalance_starts s
      ON s.cluster = e.cluster AND s.group_id = e.group_id AND s.timeline = e.timeline
     AND s.version = e.start_version
)
SELECT
    cluster, group_id AS "group", timeline, version, generation, "at",
    strategy, protocol, reason, started,
    (epoch_us("at") - epoch_us(started)) // 1000 AS duration_ms,
    (epoch_us("at") - epoch_us(previous_at)) // 1000 AS interval_ms,
    recent >= coalesce(CAST($storm_count AS INTEGER), 3) AS storm
FROM described
ORDER BY cluster, "group", timeline, version
