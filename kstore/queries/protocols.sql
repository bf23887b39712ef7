-- protocols: each stream's rebalances by the protocol they ran under: the
-- AssignmentCompleted's `protocol`, else its strategy's in kstore's catalogue
-- (kstore_protocol; NULL for a strategy kstore does not know). So: whether a stream
-- has a cooperative rebalance, whose follow-up rounds any replay of it must know of
-- (docs/analytics.md; `kstore replay` learns it from the source's events as it reads
-- them).
-- Parameters: $cluster, $group, $timeline (NULL: all).
SELECT cluster, group_id AS "group", timeline,
       coalesce(protocol, kstore_protocol(strategy)) AS protocol, count(*) AS rebalances
FROM kstore_rebalances
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND ($group IS NULL OR group_id = $group)
  AND ($timeline IS NULL OR timeline = $timeline)
GROUP BY ALL
ORDER BY ALL
