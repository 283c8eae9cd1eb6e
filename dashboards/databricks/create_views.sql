-- One-time setup on Databricks SQL: the views the dashboard queries (dashboards/*.sql) read.
-- epoch-audit writes Delta tables by path (<lake>/<layer>/<name>) and registers nothing in a
-- metastore, so the views point at the paths. Replace /Volumes/main/epoch_audit/lake with the
-- bundle's lake_path and main.epoch_audit with ${catalog}.${schema} (databricks.yml variables).
CREATE SCHEMA IF NOT EXISTS main.epoch_audit;
CREATE OR REPLACE VIEW main.epoch_audit.violations AS
  SELECT * FROM delta.`/Volumes/main/epoch_audit/lake/gold/violations`;
CREATE OR REPLACE VIEW main.epoch_audit.daily_invariant_counts AS
  SELECT * FROM delta.`/Volumes/main/epoch_audit/lake/gold/daily_invariant_counts`;
CREATE OR REPLACE VIEW main.epoch_audit.validation_results AS
  SELECT * FROM delta.`/Volumes/main/epoch_audit/lake/gold/validation_results`;
CREATE OR REPLACE VIEW main.epoch_audit.ingest_accounting AS
  SELECT * FROM delta.`/Volumes/main/epoch_audit/lake/bronze/ingest_accounting`;
CREATE OR REPLACE VIEW main.epoch_audit.run_summary AS
  SELECT * FROM delta.`/Volumes/main/epoch_audit/lake/gold/run_summary`;
