-- The chaos harness (email_rag_harness/chaos): progress, fault targets and the end state it
-- verifies. Read-only against the run's own database.

-- name: chaos_progress
SELECT
  (SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'processing', 'failed')) AS open_jobs,
  (SELECT COUNT(*) FROM drafts WHERE status IN ('pending_review', 'stale')) AS open_drafts,
  (SELECT COUNT(*) FROM emails WHERE index_status = 'partially_indexed') AS partial,
  (SELECT COUNT(*) FROM emails) AS emails,
  (SELECT COUNT(*) FROM drafts) AS drafts,
  (SELECT COUNT(*) FROM send_attempts WHERE status = 'sent') AS sent,
  (SELECT COALESCE(MAX(last_uid), 0) FROM mailbox_cursors WHERE folder = 'INBOX') AS last_uid;

-- name: chaos_pending_drafts
SELECT d.id, d.status, d.email_id, e.message_id, e.from_addr
  FROM drafts d JOIN emails e ON e.id = d.email_id
 WHERE d.status IN ('pending_review', 'stale')
 ORDER BY d.id;

-- name: chaos_draft_send
SELECT d.status AS draft_status, s.status AS send_status
  FROM drafts d LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE d.id = %(id)s;

-- name: chaos_done_jobs
SELECT id, queue, kind FROM jobs
 WHERE state = 'done' AND kind IN ('process_email', 'send_draft')
 ORDER BY id;

-- name: chaos_db_connections
SELECT ID AS id FROM information_schema.PROCESSLIST
 WHERE DB = %(db)s AND ID <> CONNECTION_ID();

-- name: chaos_emails
SELECT id, message_id, from_addr, status, status_reason, index_status FROM emails ORDER BY id;

-- name: chaos_drafts
SELECT id, email_id, status FROM drafts ORDER BY id;

-- name: chaos_attempts
SELECT id, draft_id, status, message_id FROM send_attempts ORDER BY id;

-- name: chaos_jobs
SELECT id, kind, state, email_id, draft_id, queue, last_error FROM jobs ORDER BY id;

-- name: chaos_mail_state_events
-- Every audited mail-state change, oldest first (the caller keeps the last per mail).
SELECT entity_id, to_state FROM audit_log
 WHERE entity_type = 'email' AND to_state IS NOT NULL
 ORDER BY at, id;

-- name: chaos_entity_events
SELECT DISTINCT entity_type, entity_id, event FROM audit_log
 WHERE entity_type IN ('job', 'send_attempt');

-- name: chaos_event_counts
SELECT event, COUNT(*) AS n FROM audit_log GROUP BY event;

-- name: chaos_partially_indexed
SELECT COUNT(DISTINCT entity_id) AS n FROM audit_log
 WHERE entity_type = 'email' AND event = 'partially_indexed';

-- name: chaos_send_marks
-- How often each send attempt was marked 'attempted' (send_started) before a try.
SELECT entity_id, COUNT(*) AS n FROM audit_log
 WHERE entity_type = 'send_attempt' AND event = 'send_started'
 GROUP BY entity_id;

-- name: chaos_open_jobs_of_queue
SELECT id FROM jobs WHERE queue = %(queue)s AND state IN ('queued', 'failed') ORDER BY id;

-- name: chaos_refused_send_jobs
-- Send entries that ended dead after the relay refused the reply (an admin may retry them).
SELECT j.id AS job_id, s.id AS attempt_id
  FROM send_attempts s JOIN jobs j ON j.draft_id = s.draft_id AND j.kind = 'send_draft'
 WHERE s.status = 'failed' AND j.state = 'dead'
 ORDER BY s.id;

-- name: chaos_open_jobs
-- Entries still open at the end of a run (the liveness row names them).
SELECT j.id, j.kind, j.queue, j.state, j.worker, j.attempts, j.email_id, e.status AS mail_status
  FROM jobs j LEFT JOIN emails e ON e.id = j.email_id
 WHERE j.state IN ('queued', 'processing', 'failed')
 ORDER BY j.id;

-- name: chaos_oauth_alarm
-- The ALARM an admin sees for a mailbox whose OAuth2 consent was refused: the poll health
-- needs attention (status, web status page) and the token row needs authorization.
SELECT (SELECT MAX(needs_attention) FROM mailboxes WHERE name = %(mailbox)s) AS needs_attention,
       (SELECT status FROM oauth_tokens WHERE mailbox = %(mailbox)s) AS token_status;

-- name: chaos_processing_mail_jobs
-- Mail entries a worker holds now (its name is host:pid): the target of a blackholed link.
SELECT id, worker FROM jobs
 WHERE state = 'processing' AND kind = 'process_email' AND worker IS NOT NULL
 ORDER BY started_at;

-- name: chaos_job_claims
-- Who claimed an entry, in order, and whether it was reset, and its state now.
SELECT a.event, JSON_UNQUOTE(JSON_EXTRACT(a.detail, '$.worker')) AS worker, a.at,
       JSON_UNQUOTE(JSON_EXTRACT(a.detail, '$.heartbeat')) AS heartbeat
  FROM audit_log a
 WHERE a.entity_type = 'job' AND a.entity_id = %(id)s
   AND a.event IN ('claimed', 'stuck_reset')
 ORDER BY a.at, a.id;

-- name: chaos_job_state
SELECT state, worker, attempts FROM jobs WHERE id = %(id)s;

-- name: chaos_forget_candidates
-- Each inbound mail's sender with its status, its open queue entries (its own or its
-- drafts') and its replies in flight: the privacy_forget act erases a customer at rest.
SELECT LOWER(TRIM(e.from_addr)) AS address, e.id, e.status,
       (SELECT COUNT(*) FROM jobs j WHERE j.state NOT IN ('done', 'dead')
           AND (j.email_id = e.id OR j.draft_id IN (SELECT id FROM drafts WHERE email_id = e.id)))
         AS open_jobs,
       (SELECT COUNT(*) FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
         WHERE d.email_id = e.id AND s.status IN ('pending', 'attempted', 'unknown'))
         AS in_flight
  FROM emails e WHERE e.direction = 'in' AND e.from_addr IS NOT NULL;

-- name: chaos_erasure_state
SELECT (SELECT state FROM privacy_erasures WHERE address_hash = %(hash)s) AS state,
       (SELECT COUNT(*) FROM privacy_requests WHERE address_hash = %(hash)s) AS pending,
       (SELECT state FROM jobs WHERE job_key = CONCAT('privacy_forget:', %(hash)s)) AS job_state;

-- name: chaos_privacy_leftovers
-- What of an erased customer is still in MariaDB ({ids}: their erased mails' ids, {drafts}:
-- their drafts'): rows by id, audit detail naming the address, a pending request.
SELECT (SELECT COUNT(*) FROM emails WHERE id IN ({ids})) AS mails,
       (SELECT COUNT(*) FROM drafts WHERE email_id IN ({ids}) OR id IN ({drafts})) AS drafts,
       (SELECT COUNT(*) FROM send_attempts WHERE draft_id IN ({drafts})) AS send_attempts,
       (SELECT COUNT(*) FROM jobs WHERE email_id IN ({ids}) OR draft_id IN ({drafts})) AS jobs,
       (SELECT COUNT(*) FROM email_steps WHERE email_id IN ({ids})) AS steps,
       (SELECT COUNT(*) FROM erasure_marks WHERE email_id IN ({ids})) AS marks,
       (SELECT COUNT(*) FROM audit_log WHERE LOWER(CAST(detail AS CHAR)) LIKE %(pattern)s)
         AS audit_details,
       (SELECT COUNT(*) FROM privacy_requests) AS requests;
