-- The 20 partitions with the most violations (all runs), errors first on ties.
-- Source: gold/violations; broker-level violations (no topic) are left out.
SELECT
  v.cluster_id,
  v.topic,
  v.partition,
  COUNT(*) AS violations,
  SUM(CASE WHEN v.severity = 'error' THEN 1 ELSE 0 END) AS errors,
  COUNT(DISTINCT v.invariant) AS invariants,
  MAX(v.event_time) AS last_event_time
FROM violations AS v
WHERE v.topic IS NOT NULL
GROUP BY v.cluster_id, v.topic, v.partition
ORDER BY violations DESC, errors DESC, v.cluster_id ASC NULLS LAST, v.topic, v.partition ASC NULLS LAST
LIMIT 20
