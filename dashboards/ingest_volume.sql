-- Ingest volume and quarantine rate per run and cluster.
-- Source: bronze/ingest_accounting (one row per file slice a run read), and gold/run_summary for
-- run_day, the UTC day the run started (null for a run killed before it completed).
SELECT
  a.run_id,
  r.run_date AS run_day,
  a.cluster_id,
  COUNT(DISTINCT a.file_id) AS files,
  SUM(a.lines_read) AS lines_read,
  SUM(a.parsed) AS parsed,
  SUM(a.irrelevant) AS irrelevant,
  SUM(a.malformed) AS malformed,
  ROUND(CAST(SUM(a.malformed) AS DOUBLE) / NULLIF(SUM(a.lines_read), 0), 6) AS quarantine_rate
FROM ingest_accounting AS a
LEFT JOIN run_summary AS r ON r.run_id = a.run_id
GROUP BY a.run_id, r.run_date, a.cluster_id
ORDER BY a.run_id, a.cluster_id ASC NULLS LAST
