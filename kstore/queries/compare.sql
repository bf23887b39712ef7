-- compare: one row per timeline of a group: whether it is complete (the coverage
-- query), its rebalances, total churn (moved), new and revoked, average stickiness and imbalance,
-- and total excess and unassigned (metrics.md), over the source versions it is compared
-- on. A partial timeline is compared over the prefix it covers: every timeline given
-- that answers the same source (the source itself and its replays) is summed over its
-- rebalances answering source versions up to the least `decided_to` of the partial ones
-- among them (`compared_to`; else its own `decided_to`). The `coverage` query names
-- each timeline's source.
-- The average stickiness adds the rebalances' up in stream order (an ordered aggregate):
-- DuckDB's parallel avg of doubles added its threads' shares in the order they finished,
-- so a timeline and a copy of it differed in the last digits; imbalance is an integer,
-- whose avg DuckDB sums exactly.
-- Parameters: $group (required), $cluster (default 'default'), $timelines (comma
-- separated; NULL: all of the group's).
-- Required: $group
WITH
coverage AS (SELECT * FROM @coverage WHERE cluster = coalesce($cluster, 'default')),
cuts AS (
    SELECT source, min(decided_to) AS upto FROM coverage WHERE NOT complete GROUP BY source
),
compared AS (
    SELECT c.*, coalesce(k.upto, c.decided_to) AS compared_to
    FROM coverage c
    LEFT JOIN cuts k ON k.source = c.source
    WHERE k.upto IS NULL OR c.source_version <= k.upto
)
SELECT m.timeline,
       c.complete,
       count(*) AS rebalances,
       sum(m.moved) AS churn,
       sum(m.new) AS new,
       sum(m.revoked) AS revoked,
       avg(m.stickiness ORDER BY m.version) AS stickiness,
       avg(m.imbalance) AS imbalance,
       sum(m.excess) AS excess,
       sum(m.unassigned) AS unassigned,
       c.decided_to,
       c.source_last,
       c.compared_to
FROM @metrics m
JOIN compared c ON c.timeline = m.timeline AND c.version = m.version
WHERE m.cluster = coalesce($cluster, 'default')
  AND ($timelines IS NULL OR list_contains(string_split($timelines, ','), m.timeline))
GROUP BY ALL
ORDER BY m.timeline
