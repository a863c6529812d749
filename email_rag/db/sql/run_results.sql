-- The checkpoint of long commands (db/run_results.py, migration 0450).

-- name: run_results_open
-- The latest run of a command over a scope that did not complete and was not continued
-- yet: killed (running), interrupted or partial. Locked: two runs starting at once take
-- turns, and only one continues it.
SELECT id, command, scope, status, processed, failed, skipped, remaining, resumed_from,
       current_item, cursor_key
  FROM run_results
 WHERE command = %(command)s AND scope = %(scope)s AND continued_by IS NULL
   AND status IN ('running', 'interrupted', 'partial')
 ORDER BY id DESC
 LIMIT 1
 FOR UPDATE;

-- name: run_results_insert
INSERT INTO run_results (command, scope, status, remaining, resumed_from, cursor_key, actor)
VALUES (%(command)s, %(scope)s, 'running', %(remaining)s, %(resumed_from)s, %(cursor)s,
        %(actor)s);

-- name: run_results_continue
-- The earlier run is continued by a new one: a killed run (still running) becomes
-- interrupted. Conditional on its status: a run that finished meanwhile keeps its own.
UPDATE run_results
   SET continued_by = %(continued_by)s,
       status = IF(status = 'running', 'interrupted', status)
 WHERE id = %(id)s AND continued_by IS NULL
   AND status IN ('running', 'interrupted', 'partial');

-- name: run_results_item
-- The item in hand, before it is tried; only while the run runs.
UPDATE run_results
   SET current_item = %(item)s
 WHERE id = %(id)s AND status = 'running';

-- name: run_results_progress
-- The counts after each confirmed item (the checkpoint); only while the run runs.
UPDATE run_results
   SET processed = %(processed)s, failed = %(failed)s, skipped = %(skipped)s,
       remaining = %(remaining)s, current_item = NULL,
       cursor_key = COALESCE(%(cursor)s, cursor_key)
 WHERE id = %(id)s AND status = 'running';

-- name: run_results_finish
UPDATE run_results
   SET status = %(status)s, processed = %(processed)s, failed = %(failed)s,
       skipped = %(skipped)s, remaining = %(remaining)s, finished_at = CURRENT_TIMESTAMP(6)
 WHERE id = %(id)s AND status = 'running';

-- name: run_results_get
SELECT id, command, scope, status, processed, failed, skipped, remaining, resumed_from,
       continued_by, current_item, cursor_key
  FROM run_results
 WHERE id = %(id)s;

-- name: run_results_latest
-- The newest run of a command over a scope that was not continued (what a caller that
-- handed the run to another process reports: reindex --queue --wait).
SELECT id, command, scope, status, processed, failed, skipped, remaining, resumed_from,
       continued_by, current_item, cursor_key, started_at
  FROM run_results
 WHERE command = %(command)s AND scope = %(scope)s AND continued_by IS NULL
 ORDER BY id DESC
 LIMIT 1;
