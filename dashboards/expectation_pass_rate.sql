-- Expectation pass rate per run and suite (bronze, silver, gold).
-- Source: gold/validation_results; skipped expectations are not evaluated and do not count;
-- an erroring expectation counts as failed. pass_rate is null when nothing was evaluated.
SELECT
  r.run_id,
  MIN(r.validated_at) AS validated_at,
  r.suite,
  SUM(CASE WHEN r.status <> 'skipped' THEN 1 ELSE 0 END) AS evaluated,
  SUM(CASE WHEN r.status = 'passed' THEN 1 ELSE 0 END) AS passed,
  SUM(CASE WHEN r.status IN ('failed', 'error') THEN 1 ELSE 0 END) AS failed,
  SUM(CASE WHEN r.status = 'skipped' THEN 1 ELSE 0 END) AS skipped,
  SUM(CASE WHEN r.status IN ('failed', 'error') AND r.critical THEN 1 ELSE 0 END) AS critical_failed,
  ROUND(
    CAST(SUM(CASE WHEN r.status = 'passed' THEN 1 ELSE 0 END) AS DOUBLE)
      / NULLIF(SUM(CASE WHEN r.status <> 'skipped' THEN 1 ELSE 0 END), 0),
    4
  ) AS pass_rate
FROM validation_results AS r
GROUP BY r.run_id, r.suite
ORDER BY validated_at, r.run_id, r.suite
