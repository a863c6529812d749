-- Deleting mails in every store (email_rag.privacy.erasure), shared by privacy forget and
-- retention. The row deletes themselves are the privacy_delete_* queries (privacy.sql).

-- name: erasure_mark
-- The mails whose erasure begins: a later run of the same cause finishes them.
INSERT IGNORE INTO erasure_marks (email_id, mailbox_id, cause)
SELECT id, mailbox_id, %(cause)s FROM emails WHERE id IN ({ids});

-- name: erasure_marked
SELECT email_id FROM erasure_marks
 WHERE cause = %(cause)s AND mailbox_id = %(mailbox)s AND email_id > %(after)s
 ORDER BY email_id LIMIT %(limit)s;

-- name: erasure_unmark
DELETE FROM erasure_marks WHERE email_id IN ({ids});

-- name: erasure_lock_jobs
-- Locks the queue entries of these mails and their drafts until the commit: a worker's
-- claim (one conditional UPDATE) waits, then finds the entry gone.
SELECT id FROM jobs WHERE email_id IN ({ids})
    OR draft_id IN (SELECT id FROM drafts WHERE email_id IN ({ids})) FOR UPDATE;

-- name: erasure_busy
-- Mails never deleted now: a worker holds them (their entry or a draft's is processing), or
-- a reply of theirs is in flight (send attempt pending, attempted or unknown).
SELECT email_id FROM jobs WHERE state = 'processing' AND email_id IN ({ids})
UNION
SELECT d.email_id FROM jobs j JOIN drafts d ON d.id = j.draft_id
 WHERE j.state = 'processing' AND d.email_id IN ({ids})
UNION
SELECT d.email_id FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE s.status IN ('pending', 'attempted', 'unknown') AND d.email_id IN ({ids});

-- name: erasure_attempts
-- The send attempts of these mails whose outcome is settled (their journal file, if one was
-- left, is removed).
SELECT s.id FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE d.email_id IN ({ids}) AND s.status NOT IN ('pending', 'attempted', 'unknown');

-- name: erasure_attachment_count
SELECT COALESCE(SUM(JSON_LENGTH(attachments)), 0) AS n FROM emails WHERE id IN ({ids});

-- name: erasure_reindex
-- Mails whose erasure was begun and then called off (their case opened again): their vector
-- points and graph documents may be gone, so the periodic sync writes them again.
UPDATE emails SET index_status = 'partially_indexed', index_missing = 'vectors,graph'
 WHERE id IN ({ids}) AND index_status IN ('complete', 'partially_indexed');

-- name: erasure_children
-- The mails that answer these mails (their In-Reply-To names one of them, as
-- index_parent_by_message_id links them): their reply_to edges end at a mail erased now.
SELECT p.id AS parent, c.id AS child FROM emails p
  JOIN emails c ON c.mailbox_id = p.mailbox_id AND c.in_reply_to = p.message_id
               AND c.id <> p.id
 WHERE p.id IN ({ids});

-- name: erasure_audit_entities
-- The drafts, send attempts and queue entries of these mails: their audit events are the
-- mails' too (entity ids as text, as audit_log keeps them).
SELECT 'draft' AS entity_type, CAST(id AS CHAR) AS entity_id FROM drafts
 WHERE email_id IN ({ids})
UNION ALL
SELECT 'send_attempt', CAST(s.id AS CHAR) FROM send_attempts s
  JOIN drafts d ON d.id = s.draft_id WHERE d.email_id IN ({ids})
UNION ALL
SELECT 'job', CAST(id AS CHAR) FROM jobs
 WHERE email_id IN ({ids}) OR draft_id IN (SELECT id FROM drafts WHERE email_id IN ({ids}));

-- name: erasure_audit_details
-- The events of these entities that have a detail (ix_audit_entity; ids are text). No
-- locking read: nothing but this erasure changes an event (migration 0360).
SELECT id, detail FROM audit_log
 WHERE detail IS NOT NULL AND ((entity_type = 'email' AND entity_id IN ({mails}))
    OR (entity_type = 'draft' AND entity_id IN ({drafts}))
    OR (entity_type = 'send_attempt' AND entity_id IN ({sends}))
    OR (entity_type = 'job' AND entity_id IN ({jobs})));

-- name: audit_erasure_begin
-- Lets this session overwrite audit detail (trigger audit_log_no_update, migration 0360).
SET @email_rag_audit_erasure = 1;

-- name: audit_erasure_end
SET @email_rag_audit_erasure = NULL;

-- name: audit_erase_detail
UPDATE audit_log SET detail = %(detail)s WHERE id = %(id)s;

-- name: erasure_person_kept
-- Whether a mail other than these ({ids}: the batch being erased) still names the address
-- (as privacy_mail_ids matches it): its graph vertex stays.
SELECT EXISTS (SELECT 1 FROM emails WHERE id NOT IN ({ids}) AND (
         LOWER(TRIM(from_addr)) = %(address)s OR LOWER(TRIM(reply_addr)) = %(address)s
      OR FIND_IN_SET(%(address)s, REPLACE(LOWER(COALESCE(to_addrs, '')), ' ', '')) > 0
      OR FIND_IN_SET(%(address)s, REPLACE(LOWER(COALESCE(cc_addrs, '')), ' ', '')) > 0))
       AS kept;
