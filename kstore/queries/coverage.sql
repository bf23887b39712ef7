-- coverage: each rebalance of each timeline with the source version it answers, and up
-- to which source version its timeline has decided: complete or partial.
-- A replay's decisions name their source timeline (same cluster and group) and the
-- version of the source's AssignmentCompleted each answers (`source`, `source_version`
-- in their data; a follow-up round: the one its first round answers; an eager replay's
-- decision whose source follow-up round it has not: that round's); any other
-- timeline is its own source, each rebalance answering its own version. Per timeline:
-- * answered: the greatest source version its decisions answer. Where its last decision
--   is a follow-up round (two decisions answer that version) and the source's next event
--   is a RebalanceStarted, that rebalance is the same follow-up (kstore replay does not
--   replay it again, docs/analytics.md): it, and the round's AssignmentCompleted (the
--   first after it, if no RebalanceStarted comes first; events in between happened
--   during the round), are answered too. (AssignmentNotTakenUp facts, which follow a
--   decision, are passed over in seeking the next events.)
-- * decided_to: the version before the source's first AssignmentCompleted after
--   `answered` (nothing before it is left to decide), or the source's last version.
-- * source_last: the source's last version now; complete: decided_to = source_last (a
--   source that grows by a rebalance makes its replays partial again). NULL when the
--   source is not in the store.
-- Parameters: $cluster, $group (each NULL: all), $timelines (comma separated; NULL: all).
WITH
named AS MATERIALIZED (  -- one parse of each event's data, none naming no source
    SELECT cluster, group_id, timeline, version,
           CASE WHEN contains(data, '"source"')
                THEN json_extract_string(data, ['$.source', '$.source_version'])
           END AS fields
    FROM kstore_events
    WHERE type = 'AssignmentCompleted'
      AND ($cluster IS NULL OR cluster = $cluster)
      AND ($group IS NULL OR group_id = $group)
      AND ($timelines IS NULL OR list_contains(string_split($timelines, ','), timeline))
),
rebalances AS (
    SELECT cluster, group_id, timeline, version, fields[1] AS source,
           CAST(fields[2] AS INTEGER) AS source_version
    FROM named
),
replays AS (
    SELECT cluster, group_id, timeline, min(source) AS source, max(source_version) AS answered
    FROM rebalances
    WHERE source IS NOT NULL
    GROUP BY ALL
),
source_events AS (  -- seq: the order of the events but AssignmentNotTakenUp
    SELECT e.cluster, e.group_id, e.timeline, e.version, e.type,
           row_number() OVER (PARTITION BY e.cluster, e.group_id, e.timeline
                              ORDER BY e.version) AS seq
    FROM kstore_events e
    SEMI JOIN replays r
      ON r.cluster = e.cluster AND r.group_id = e.group_id AND r.source = e.timeline
    WHERE e.type <> 'AssignmentNotTakenUp'
),
follow_ups AS (  -- replays whose last decision is a follow-up round
    SELECT r.cluster, r.group_id, r.timeline
    FROM replays r
    JOIN rebalances d
      ON d.cluster = r.cluster AND d.group_id = r.group_id AND d.timeline = r.timeline
     AND d.source_version = r.answered
    GROUP BY ALL
    HAVING count(*) > 1
),
reach AS (
    SELECT r.cluster, r.group_id, r.timeline, r.source,
           CASE WHEN f.timeline IS NULL OR n1.type IS DISTINCT FROM 'RebalanceStarted'
                THEN r.answered
                ELSE coalesce(
                    (SELECT arg_min_null(CASE WHEN e.type = 'AssignmentCompleted'
                                              THEN e.version END, e.seq)
                     FROM source_events e
                     WHERE e.cluster = r.cluster AND e.group_id = r.group_id
                       AND e.timeline = r.source AND e.seq > n1.seq
                       AND e.type IN ('RebalanceStarted', 'AssignmentCompleted')),
                    n1.version) END AS answered
    FROM replays r
    LEFT JOIN follow_ups f USING (cluster, group_id, timeline)
    LEFT JOIN source_events a
      ON a.cluster = r.cluster AND a.group_id = r.group_id AND a.timeline = r.source
     AND a.version = r.answered
    LEFT JOIN source_events n1
      ON n1.cluster = r.cluster AND n1.group_id = r.group_id AND n1.timeline = r.source
     AND n1.seq = a.seq + 1
),
timelines AS (
    SELECT s.cluster, s.group_id, s.timeline,
           coalesce(r.source, s.timeline) AS source,
           CASE WHEN r.timeline IS NULL THEN s.version
                ELSE coalesce(
                    (SELECT min(e.version) - 1 FROM source_events e
                     WHERE e.cluster = r.cluster AND e.group_id = r.group_id
                       AND e.timeline = r.source AND e.version > r.answered
                       AND e.type = 'AssignmentCompleted'),
                    src.version)
           END AS decided_to,
           src.version AS source_last
    FROM kstore_streams s
    LEFT JOIN reach r USING (cluster, group_id, timeline)
    LEFT JOIN kstore_streams src
      ON src.cluster = s.cluster AND src.group_id = s.group_id
     AND src.timeline = coalesce(r.source, s.timeline)
    WHERE ($cluster IS NULL OR s.cluster = $cluster)
      AND ($group IS NULL OR s.group_id = $group)
)
SELECT d.cluster, d.group_id AS "group", d.timeline, d.version, t.source,
       CASE WHEN t.source = d.timeline THEN d.version ELSE d.source_version END
           AS source_version,
       t.decided_to, t.source_last, t.decided_to = t.source_last AS complete
FROM rebalances d
JOIN timelines t USING (cluster, group_id, timeline)
ORDER BY d.cluster, "group", d.timeline, d.version
