-- windows: churn, stickiness and imbalance per time window, per stream.
-- Sums churn (moved), new and revoked over the window's rebalances and averages
-- stickiness and imbalance (metrics.md), window by the start of the hour or day of `at`.
-- The average stickiness adds the rebalances' up in stream order (an ordered aggregate:
-- DuckDB's parallel avg of doubles varied in the last digits from run to run).
-- Parameters: $cluster, $group, $timeline (NULL: all); $window: 'hour' (default) or 'day'.
SELECT
    m.cluster, m."group", m.timeline,
    date_trunc(coalesce($window, 'hour'), m."at") AS window_start,
    count(*) AS rebalances,
    sum(m.moved) AS churn,
    sum(m.new) AS new,
    sum(m.revoked) AS revoked,
    avg(m.stickiness ORDER BY m.version) AS stickiness,
    avg(m.imbalance) AS imbalance
FROM @metrics m
WHERE coalesce($window, 'hour') IN ('hour', 'day')
GROUP BY ALL
ORDER BY m.cluster, m."group", m.timeline, window_start
