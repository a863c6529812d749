-- The history import as a job an admin watches and steers (ingest/history_import.py).

-- Per mailbox: history mails stored and indexed, and whether the import is paused.
-- name: history_import_progress
SELECT m.id AS mailbox_id, m.name AS mailbox, m.history_paused AS paused,
       m.history_cutoff AS cutoff, COUNT(e.id) AS total,
       COALESCE(SUM(e.index_status <> 'pending'), 0) AS done,
       COALESCE(SUM(e.index_status = 'partially_indexed'), 0) AS partial
  FROM mailboxes m LEFT JOIN emails e ON e.mailbox_id = m.id AND e.status = 'history'
 GROUP BY m.id, m.name, m.history_paused, m.history_cutoff
 ORDER BY m.name;

-- Index entries of history mail per mailbox and state: dead ones are the import's errors,
-- done ones of the last %(window_s)s seconds its rate.
-- name: history_import_entries
SELECT e.mailbox_id, j.state,
       COUNT(*) AS n,
       COALESCE(SUM(j.state = 'done' AND j.finished_at >= NOW(6) - INTERVAL %(window_s)s SECOND),
                0) AS recent
  FROM jobs j JOIN emails e ON e.id = j.email_id
 WHERE j.kind = 'index_history' AND j.state IN ('dead', 'done')
 GROUP BY e.mailbox_id, j.state;

-- name: history_import_pause
UPDATE mailboxes SET history_paused = 1 WHERE id = %(mailbox_id)s AND history_paused = 0;

-- name: history_import_resume
UPDATE mailboxes SET history_paused = 0 WHERE id = %(mailbox_id)s AND history_paused = 1;

-- A paused import's waiting entries: due far ahead, so no claim, batch or re-dispatch takes
-- them (their state is unchanged); resume makes them due now.
-- name: history_import_park
UPDATE jobs j JOIN emails e ON e.id = j.email_id
   SET j.next_run_at = '2999-12-31 00:00:00'
 WHERE e.mailbox_id = %(mailbox_id)s AND j.kind = 'index_history'
   AND j.state IN ('queued', 'failed');

-- name: history_import_unpark
UPDATE jobs j JOIN emails e ON e.id = j.email_id
   SET j.next_run_at = NOW(6)
 WHERE e.mailbox_id = %(mailbox_id)s AND j.kind = 'index_history'
   AND j.state IN ('queued', 'failed') AND j.next_run_at >= '2999-01-01';

-- name: history_import_dead
SELECT j.id FROM jobs j JOIN emails e ON e.id = j.email_id
 WHERE e.mailbox_id = %(mailbox_id)s AND j.kind = 'index_history' AND j.state = 'dead'
 ORDER BY j.id;

-- name: history_import_mailbox
SELECT id, history_paused AS paused FROM mailboxes WHERE name = %(name)s;

-- In the poll's batch transaction: the history entries it created wait (parked) when the
-- mailbox's import is paused (the flag read in the same transaction: a pause during a
-- running poll parks the entries of its later batches too).
-- name: history_import_park_new
UPDATE jobs j JOIN mailboxes m ON m.id = %(mailbox_id)s AND m.history_paused = 1
   SET j.next_run_at = '2999-12-31 00:00:00'
 WHERE j.id IN ({ids}) AND j.state = 'queued';
