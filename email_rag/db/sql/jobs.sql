-- Queue entries (jobs table). MariaDB decides who runs what; Redis only carries ids.

-- name: jobs_claim
-- Only one worker can move an entry from queued/failed to processing, and only a worker
-- of the entry's queue (%(queue)s: the queue the delivery came on; NULL = run in-process
-- by a test or a CLI command): a delivery on the wrong queue is a no-op.
UPDATE jobs
   SET state = 'processing', attempts = attempts + 1, started_at = NOW(6),
       finished_at = NULL, worker = %(worker)s
 WHERE id = %(id)s AND state IN ('queued', 'failed') AND next_run_at <= NOW(6)
   AND (%(queue)s IS NULL OR queue = %(queue)s);

-- Companions of a batch job (history index jobs): up to %(limit)s other entries of the same
-- kind and queue that wait and are due, oldest first, locked (entries another worker is
-- claiming are skipped, never waited for). Failed entries are left to their own delivery.
-- name: jobs_companions_for_update
SELECT id FROM jobs
 WHERE state = 'queued' AND next_run_at <= NOW(6) AND kind = %(kind)s AND queue = %(queue)s
   AND id <> %(id)s
 ORDER BY next_run_at LIMIT %(limit)s
 FOR UPDATE SKIP LOCKED;

-- name: jobs_claim_many
UPDATE jobs
   SET state = 'processing', attempts = attempts + 1, started_at = NOW(6),
       finished_at = NULL, worker = %(worker)s
 WHERE id IN ({ids}) AND state = 'queued';

-- name: jobs_get_mine_many
SELECT * FROM jobs WHERE id IN ({ids}) AND state = 'processing' AND worker = %(worker)s
 ORDER BY id;

-- name: jobs_get
SELECT * FROM jobs WHERE id = %(id)s;

-- name: jobs_get_for_update
SELECT * FROM jobs WHERE id = %(id)s FOR UPDATE;

-- name: jobs_finish
UPDATE jobs SET state = 'done', finished_at = NOW(6), last_error = NULL
 WHERE id = %(id)s AND state = 'processing' AND worker = %(worker)s;

-- name: jobs_fail
UPDATE jobs SET state = %(state)s, finished_at = NOW(6), last_error = %(error)s,
       next_run_at = NOW(6) + INTERVAL %(delay)s SECOND
 WHERE id = %(id)s AND state = 'processing' AND worker = %(worker)s;

-- name: jobs_handoff
-- Move a claimed entry to another queue without counting the hand-off as an attempt.
UPDATE jobs SET state = 'queued', queue = %(queue)s, attempts = GREATEST(attempts - 1, 0),
       worker = NULL, started_at = NULL, next_run_at = NOW(6)
 WHERE id = %(id)s AND state = 'processing' AND worker = %(worker)s;

-- name: jobs_still_mine
SELECT id FROM jobs WHERE id = %(id)s AND state = 'processing' AND worker = %(worker)s;

-- name: jobs_stuck
-- A plain read, no FOR UPDATE: locking the scanned 'processing' range deadlocked the
-- workers' claims and checkpoints (found by the chaos harness); each reset below is
-- a compare-and-set on one row instead.
SELECT * FROM jobs
 WHERE state = 'processing' AND started_at < NOW(6) - INTERVAL %(seconds)s SECOND
 ORDER BY id LIMIT %(limit)s;

-- name: jobs_reset_stuck
-- Only the claim that was found stuck (same worker, same start): a job finished or
-- re-claimed in the meantime is left alone.
UPDATE jobs SET state = %(state)s, worker = NULL, finished_at = NOW(6), last_error = %(error)s,
       next_run_at = NOW(6) + INTERVAL %(delay)s SECOND
 WHERE id = %(id)s AND state = 'processing' AND worker <=> %(worker)s
   AND started_at <=> %(started_at)s;

-- name: jobs_insert
-- The one statement that creates queue entries (jobs.store.create_jobs), {rows}: (kind,
-- job_key, email_id, draft_id, queue, state) per row. A row whose natural key exists is
-- skipped and not returned: the caller decides (a fresh cycle, coalesce, or keep it).
INSERT IGNORE INTO jobs (kind, job_key, email_id, draft_id, queue, state) VALUES {rows}
RETURNING *;

-- name: steps_confirmed
SELECT step, detail FROM email_steps WHERE email_id = %(email_id)s;

-- name: steps_confirm
INSERT INTO email_steps (email_id, step, detail) VALUES (%(email_id)s, %(step)s, %(detail)s)
ON DUPLICATE KEY UPDATE detail = VALUES(detail), confirmed_at = NOW(6);

-- name: jobs_move_requeue
-- Store move: a fresh retry cycle from now (admin retry, approved again, regenerate, resend).
UPDATE jobs SET state = %(to)s, attempts = 0, next_run_at = NOW(6), worker = NULL,
       started_at = NULL, finished_at = NULL, last_error = NULL,
       queue = COALESCE(%(queue)s, queue)
 WHERE id = %(id)s AND state = %(from)s;

-- name: jobs_move_close
-- Store move: the entry's work is over (a refused send returned to review).
UPDATE jobs SET state = %(to)s, finished_at = COALESCE(finished_at, NOW(6))
 WHERE id = %(id)s AND state = %(from)s;

-- name: jobs_move_resolve
-- Store move: an admin closed the entry by hand, with a note.
UPDATE jobs SET state = %(to)s, finished_at = COALESCE(finished_at, NOW(6)),
       last_error = CONCAT(COALESCE(last_error, ''), ' [resolved: ', %(note)s, ']')
 WHERE id = %(id)s AND state = %(from)s;

-- name: jobs_open_of_mail_for_update
-- Entries of a mail an admin can close: waiting or failed, not resolved by hand yet.
SELECT * FROM jobs WHERE email_id = %(email_id)s
   AND state IN ('dead', 'failed', 'queued', 'processing')
   AND LOCATE('[resolved: ', COALESCE(last_error, '')) = 0
 ORDER BY id FOR UPDATE;

-- name: jobs_by_key_for_update
SELECT * FROM jobs WHERE job_key = %(job_key)s FOR UPDATE;

-- name: jobs_list
-- %(states)s: comma-separated states, '' for every state.
SELECT j.id, j.kind, j.email_id, j.draft_id, j.queue, j.state, j.attempts, j.next_run_at,
       j.started_at, j.worker, j.last_error, e.status AS mail_status, e.subject
  FROM jobs j LEFT JOIN emails e ON e.id = j.email_id
 WHERE %(states)s = '' OR FIND_IN_SET(j.state, %(states)s)
 ORDER BY j.id LIMIT %(limit)s;

-- name: jobs_still_mine_for_update
SELECT id FROM jobs WHERE id = %(id)s AND state = 'processing' AND worker = %(worker)s FOR UPDATE;
