-- Violations per day of the offending event, by invariant, severity and cluster.
-- Source: gold/daily_invariant_counts (rebuilt by every run's report stage); a null day holds the
-- violations without an event time. `suppressed`: of them, the ones an active suppression covers
-- (acknowledged in the suppressions file; violations - suppressed are the open ones).
SELECT
  d.date AS day,
  d.cluster_id,
  d.invariant,
  d.severity,
  SUM(d.count) AS violations,
  SUM(CASE WHEN d.confidence = 'confirmed' THEN d.count ELSE 0 END) AS confirmed,
  SUM(d.suppressed) AS suppressed
FROM daily_invariant_counts AS d
GROUP BY d.date, d.cluster_id, d.invariant, d.severity
ORDER BY day ASC NULLS LAST, d.cluster_id ASC NULLS LAST, d.invariant, d.severity
