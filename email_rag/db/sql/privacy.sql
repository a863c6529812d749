-- What is stored about one person (email_rag.privacy.personal_data): the mails from or to an
-- address (the parsed address columns, compared lower-cased; display names never match)
-- and everything that hangs off them.

-- name: privacy_mail_ids
-- %(address)s is already lower-cased and trimmed. to_addrs / cc_addrs hold the parsed
-- addresses joined by ", ".
SELECT id FROM emails
 WHERE LOWER(TRIM(from_addr)) = %(address)s
    OR LOWER(TRIM(reply_addr)) = %(address)s
    OR FIND_IN_SET(%(address)s, REPLACE(LOWER(COALESCE(to_addrs, '')), ' ', '')) > 0
    OR FIND_IN_SET(%(address)s, REPLACE(LOWER(COALESCE(cc_addrs, '')), ' ', '')) > 0
 ORDER BY id;

-- name: privacy_mails
SELECT e.*, m.name AS mailbox FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.id IN ({ids}) ORDER BY e.id;

-- name: privacy_drafts
SELECT * FROM drafts WHERE email_id IN ({ids}) ORDER BY email_id, version;

-- name: privacy_draft_edits
SELECT de.draft_id, u.name AS user_name, de.body, de.saved_at
  FROM draft_edits de JOIN users u ON u.id = de.user_id
 WHERE de.draft_id IN ({ids}) ORDER BY de.draft_id, de.saved_at;

-- name: privacy_mail_notes
SELECT email_id, author, body, created_at FROM mail_notes
 WHERE email_id IN ({ids}) ORDER BY email_id, created_at, id;

-- name: privacy_send_attempts
SELECT s.*, d.email_id FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE s.draft_id IN ({ids}) ORDER BY s.id;

-- name: privacy_audit_events
-- The events whose entity is one of the person's mails, drafts or send attempts.
SELECT id, at, actor, entity_type, entity_id, event, from_state, to_state, attempt, detail
  FROM audit_log
 WHERE (entity_type = 'email' AND entity_id IN ({mails}))
    OR (entity_type = 'draft' AND entity_id IN ({drafts}))
    OR (entity_type = 'send_attempt' AND entity_id IN ({sends}))
 ORDER BY at, id;

-- name: privacy_plan_counts
-- What forget would delete in MariaDB for these mails.
SELECT (SELECT COUNT(*) FROM emails WHERE id IN ({ids})) AS mails,
       (SELECT COUNT(*) FROM drafts WHERE email_id IN ({ids})) AS drafts,
       (SELECT COUNT(*) FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
         WHERE d.email_id IN ({ids})) AS send_attempts,
       (SELECT COUNT(*) FROM draft_edits de JOIN drafts d ON d.id = de.draft_id
         WHERE d.email_id IN ({ids})) AS draft_edits,
       (SELECT COUNT(*) FROM labelled_examples WHERE email_id IN ({ids})) AS labelled_examples,
       (SELECT COUNT(*) FROM jobs WHERE email_id IN ({ids})
           OR draft_id IN (SELECT id FROM drafts WHERE email_id IN ({ids}))) AS jobs;

-- name: privacy_erasure_start
INSERT INTO privacy_erasures (address_hash, reason, requested_by, state)
VALUES (%(hash)s, %(reason)s, %(by)s, 'running')
-- an erasure run again (partial, or done and asked again) is running again
ON DUPLICATE KEY UPDATE state = IF(state IN ('partial', 'done', 'running'), 'running', state),
                        reason = VALUES(reason), requested_by = VALUES(requested_by),
                        last_error = NULL,
                        finished_at = NULL;

-- name: privacy_erasure_progress
UPDATE privacy_erasures SET mails_erased = mails_erased + %(mails)s, state = %(state)s,
       last_error = %(error)s,
       finished_at = IF(%(state)s = 'done', CURRENT_TIMESTAMP(6), NULL)
 WHERE address_hash = %(hash)s AND state = 'running';

-- name: privacy_lock_mails
SELECT id FROM emails WHERE id IN ({ids}) FOR UPDATE;

-- The deletes of one batch of mails, children first, in one transaction (erasure.erase_batch);
-- draft_edits, draft_presence and mail_assignments go with ON DELETE CASCADE.
-- name: privacy_delete_jobs
DELETE FROM jobs WHERE email_id IN ({ids});

-- name: privacy_delete_draft_jobs
-- The queue entries of the mails' drafts (send jobs), by ix_job_draft: an OR with the
-- statement above would scan and lock every queue entry.
DELETE j FROM drafts d JOIN jobs j ON j.draft_id = d.id WHERE d.email_id IN ({ids});

-- name: privacy_delete_send_attempts
DELETE s FROM send_attempts s JOIN drafts d ON d.id = s.draft_id WHERE d.email_id IN ({ids});

-- name: privacy_unlink_bounces
UPDATE send_attempts SET bounce_email_id = NULL WHERE bounce_email_id IN ({ids});

-- name: privacy_unlink_answers
UPDATE emails SET answered_by = NULL WHERE answered_by IN ({ids});

-- name: privacy_delete_queue_keys
DELETE FROM review_queue_keys WHERE email_id IN ({ids});

-- name: privacy_delete_drafts
DELETE FROM drafts WHERE email_id IN ({ids});

-- name: privacy_delete_steps
DELETE FROM email_steps WHERE email_id IN ({ids});

-- name: privacy_delete_examples
DELETE FROM labelled_examples WHERE email_id IN ({ids});

-- name: privacy_delete_knowledge_candidates
-- A case proposed as knowledge goes with the mail it answered (an approved one is an article
-- of its own by then, written without personal data).
DELETE FROM knowledge_candidates WHERE email_id IN ({ids});

-- name: privacy_delete_mails
DELETE FROM emails WHERE id IN ({ids});

-- name: privacy_audit_naming
-- The verification's search of the audit log: events whose detail holds the address.
SELECT COUNT(*) AS n FROM audit_log WHERE LOWER(CAST(detail AS CHAR)) LIKE %(pattern)s;

-- name: privacy_erasure_verified
-- What forget's verification still found (NULL: nothing): kept with the erasure.
UPDATE privacy_erasures SET last_error = %(found)s WHERE address_hash = %(hash)s;

-- name: privacy_erasures_recent
SELECT e.address_hash, e.reason, e.requested_by, e.state, e.mails_erased, e.last_error,
       e.requested_at, e.finished_at, r.requested_at IS NOT NULL AS pending
  FROM privacy_erasures e LEFT JOIN privacy_requests r ON r.address_hash = e.address_hash
UNION ALL
SELECT r.address_hash, r.reason, r.requested_by, 'queued', 0, NULL, r.requested_at, NULL, 1
  FROM privacy_requests r
 WHERE NOT EXISTS (SELECT 1 FROM privacy_erasures e WHERE e.address_hash = r.address_hash)
 ORDER BY requested_at DESC LIMIT %(limit)s;

-- name: privacy_request_put
-- An erasure asked for in the web, for the vector worker (asked again: the newest reason).
INSERT INTO privacy_requests (address_hash, address, reason, requested_by)
VALUES (%(hash)s, %(address)s, %(reason)s, %(by)s)
ON DUPLICATE KEY UPDATE reason = VALUES(reason), requested_by = VALUES(requested_by);

-- name: privacy_request_get
SELECT address_hash, address, reason, requested_by FROM privacy_requests
 WHERE address_hash = %(hash)s;

-- name: privacy_request_done
DELETE FROM privacy_requests WHERE address_hash = %(hash)s;
