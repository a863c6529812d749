-- The checkpoint of long commands (issue 43; db/run_results.py): one row per run of a
-- command over a scope (e.g. failed-retry/all, reindex/partial). status is `running` while
-- it works (a killed run stays `running`), then an end state of core/run_result.py. The
-- counts are written after each confirmed item, so a killed run's row says how far it got;
-- the next run of the same command and scope continues it (continued_by) and reports
-- "resuming: N done earlier" (resumed_from = the earlier run's resumed_from + processed).
-- cursor_key: the last confirmed item of a command that walks its items in order (reindex
-- --all walks mail ids): the next run starts after it.
-- current_item: the item in hand (set before it, cleared with the counts after it): a run
-- killed in between names it, and the next run asks the business state whether it was done.
CREATE TABLE IF NOT EXISTS run_results (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  command VARCHAR(64) NOT NULL,
  scope VARCHAR(190) NOT NULL,
  status VARCHAR(32) NOT NULL,
  processed INT NOT NULL DEFAULT 0,
  failed INT NOT NULL DEFAULT 0,
  skipped INT NOT NULL DEFAULT 0,
  remaining INT NOT NULL DEFAULT 0,
  resumed_from INT NOT NULL DEFAULT 0,
  continued_by BIGINT NULL,
  current_item VARCHAR(190) NULL,
  cursor_key VARCHAR(190) NULL,
  actor VARCHAR(190) NOT NULL,
  started_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  finished_at DATETIME(6) NULL,
  KEY run_results_open (command, scope, continued_by, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
