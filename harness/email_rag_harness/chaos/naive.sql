-- The chaos harness's counter-check (the naive column): the product's guarded queries
-- without their guards. Loaded by harness/email_rag_harness/chaos/naive.py, never by the product.

-- name: jobs_claim_naive
-- jobs_claim without the state/due/queue check: a duplicate delivery re-runs an entry that
-- is done, dead or held by another worker.
UPDATE jobs
   SET state = 'processing', attempts = attempts + 1, started_at = NOW(6),
       finished_at = NULL, worker = %(worker)s
 WHERE id = %(id)s;

-- name: sends_insert_naive
-- sends_insert without "one attempt per draft": every approval re-arms the send.
INSERT INTO send_attempts (draft_id, message_id, status, recipients)
VALUES (%(draft_id)s, %(message_id)s, 'pending', %(recipients)s)
ON DUPLICATE KEY UPDATE status = 'pending';

-- name: sends_mark_attempted_naive
-- sends_mark_attempted that also takes an attempted send: it is tried again, blindly.
UPDATE send_attempts SET status = 'attempted', tries = tries + 1, attempted_at = NOW(6)
 WHERE id = %(id)s AND status IN ('pending', 'attempted');
