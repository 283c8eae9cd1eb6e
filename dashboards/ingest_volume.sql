-- Ingest volume and quarantine rate per run and cluster.
-- Source: bronze/ingest_accounting (one row per file slice a run read). run_day is the first eight
-- characters of the run id: the day the run started, for generated run ids (YYYYMMDDTHHMMSSZ-xxxxxx).
SELECT
  a.run_id,
  SUBSTR(a.run_id, 1, 8) AS run_day,
  a.cluster_id,
  COUNT(DISTINCT a.file_id) AS files,
  SUM(a.lines_read) AS lines_read,
  SUM(a.parsed) AS parsed,
  SUM(a.irrelevant) AS irrelevant,
  SUM(a.malformed) AS malformed,
  ROUND(CAST(SUM(a.malformed) AS DOUBLE) / NULLIF(SUM(a.lines_read), 0), 6) AS quarantine_rate
FROM ingest_accounting AS a
GROUP BY a.run_id, a.cluster_id
ORDER BY a.run_id, a.cluster_id ASC NULLS LAST
