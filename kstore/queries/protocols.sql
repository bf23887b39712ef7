-- protocols: each stream's rebalances by the protocol they ran under: the
-- AssignmentCompleted's `protocol`, else its strategy's in kstore's catalogue
-- (kstore_protocol; NULL for a strategy kstore does not know). `kstore replay` reads it
-- to see whether its source has a cooperative rebalance, whose follow-up round any
-- replay must know of (docs/analytics.md), and so whether to read the source's
-- assignments at all.
-- Parameters: $cluster, $group, $timeline (NULL: all).
SELECT cluster, group_id AS "group", timeline,
       coalesce(protocol, kstore_protocol(strategy)) AS protocol, count(*) AS rebalances
FROM kstore_rebalances
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND ($group IS NULL OR group_id = $group)
  AND ($timeline IS NULL OR timeline = $timeline)
GROUP BY ALL
ORDER BY ALL
