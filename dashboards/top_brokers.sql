-- The 20 brokers named by the most violations (all runs), errors first on ties.
-- Source: gold/violations; violations that name no broker are left out.
SELECT
  v.cluster_id,
  v.broker_id,
  COUNT(*) AS violations,
  SUM(CASE WHEN v.severity = 'error' THEN 1 ELSE 0 END) AS errors,
  COUNT(DISTINCT v.invariant) AS invariants,
  COUNT(DISTINCT CONCAT(COALESCE(v.topic, ''), '-', COALESCE(CAST(v.partition AS STRING), ''))) AS partitions,
  MAX(v.event_time) AS last_event_time
FROM violations AS v
WHERE v.broker_id IS NOT NULL
GROUP BY v.cluster_id, v.broker_id
ORDER BY violations DESC, errors DESC, v.cluster_id ASC NULLS LAST, v.broker_id
LIMIT 20
