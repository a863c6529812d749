-- IMAP ingestion: mailboxes (lease, poll health), cursors, mail rows, job rows,
-- and the re-dispatch of queued jobs (outbox).
-- Queries with {rows} / {keys} / {ids} are expanded by sql(name, rows=...) with one
-- placeholder group per row, filled by slot_params (multi-row statements: one round
-- trip per batch).

-- name: ingest_upsert_mailbox
INSERT INTO mailboxes (name, address) VALUES (%(name)s, %(address)s)
ON DUPLICATE KEY UPDATE address = VALUES(address);

-- The poller's view of a mailbox (ingest/mailbox_state.py Mailbox), with the database clock
-- and the connection's max_allowed_packet (what the poll's inserts must fit in).
-- name: ingest_mailbox_by_name
SELECT id, name, consecutive_failures, needs_attention, failing_since, last_error,
       backoff_until, lease_owner, lease_until, NOW(6) AS db_now,
       @@max_allowed_packet AS max_allowed_packet
  FROM mailboxes WHERE name = %(name)s;

-- name: ingest_max_allowed_packet
SELECT @@max_allowed_packet AS packet;

-- Take the lease when it is free, expired or ours, and (unless forced) the
-- mailbox is not in backoff. One conditional UPDATE: of two pollers at once,
-- exactly one gets rowcount 1.
-- name: ingest_take_lease
UPDATE mailboxes
   SET lease_owner = %(owner)s, lease_until = NOW(6) + INTERVAL %(lease_us)s MICROSECOND
 WHERE id = %(mailbox_id)s
   AND (lease_owner IS NULL OR lease_until IS NULL OR lease_until < NOW(6)
        OR lease_owner = %(owner)s)
   AND (%(force)s OR backoff_until IS NULL OR backoff_until <= NOW(6));

-- Take over the lease of a poller known to be dead (compare-and-swap on its owner).
-- name: ingest_take_dead_lease
UPDATE mailboxes
   SET lease_owner = %(owner)s, lease_until = NOW(6) + INTERVAL %(lease_us)s MICROSECOND
 WHERE id = %(mailbox_id)s AND lease_owner = %(dead_owner)s
   AND (%(force)s OR backoff_until IS NULL OR backoff_until <= NOW(6));

-- Renewed in every batch transaction: rowcount 0 = the lease was lost (fence).
-- name: ingest_renew_lease
UPDATE mailboxes SET lease_until = NOW(6) + INTERVAL %(lease_us)s MICROSECOND
 WHERE id = %(mailbox_id)s AND lease_owner = %(owner)s;

-- name: ingest_release_lease
UPDATE mailboxes SET lease_owner = NULL, lease_until = NULL
 WHERE id = %(mailbox_id)s AND lease_owner = %(owner)s;

-- name: ingest_poll_failed
UPDATE mailboxes
   SET consecutive_failures = %(failures)s,
       backoff_until = NOW(6) + INTERVAL %(backoff_us)s MICROSECOND,
       failing_since = COALESCE(failing_since, NOW(6)),
       last_error = %(error)s,
       last_error_at = NOW(6),
       needs_attention = IF(%(needs_attention)s, 1, needs_attention)
 WHERE id = %(mailbox_id)s;

-- A successful poll that ends here: ingest_poll_succeeded and ingest_release_lease in one
-- statement (the lease only when it is ours; lease_until first: it tests the owner before
-- the owner is cleared).
-- name: ingest_poll_succeeded_release
UPDATE mailboxes
   SET consecutive_failures = 0, backoff_until = NULL, failing_since = NULL,
       needs_attention = 0, last_success_at = NOW(6),
       lease_until = IF(lease_owner <=> %(owner)s, NULL, lease_until),
       lease_owner = IF(lease_owner <=> %(owner)s, NULL, lease_owner)
 WHERE id = %(mailbox_id)s;

-- name: ingest_poll_succeeded
UPDATE mailboxes
   SET consecutive_failures = 0, backoff_until = NULL, failing_since = NULL,
       needs_attention = 0, last_success_at = NOW(6)
 WHERE id = %(mailbox_id)s;

-- name: ingest_cursor
SELECT uidvalidity, last_uid FROM mailbox_cursors
 WHERE mailbox_id = %(mailbox_id)s AND folder = %(folder)s;

-- name: ingest_reset_cursor
INSERT INTO mailbox_cursors (mailbox_id, folder, uidvalidity, last_uid)
VALUES (%(mailbox_id)s, %(folder)s, %(uidvalidity)s, 0)
ON DUPLICATE KEY UPDATE uidvalidity = VALUES(uidvalidity), last_uid = 0;

-- last_uid is assigned first, so it still compares against the old uidvalidity.
-- name: ingest_advance_cursor
INSERT INTO mailbox_cursors (mailbox_id, folder, uidvalidity, last_uid)
VALUES (%(mailbox_id)s, %(folder)s, %(uidvalidity)s, %(last_uid)s)
ON DUPLICATE KEY UPDATE
  last_uid = IF(uidvalidity = VALUES(uidvalidity), GREATEST(last_uid, VALUES(last_uid)),
                VALUES(last_uid)),
  uidvalidity = VALUES(uidvalidity);

-- INSERT IGNORE ... RETURNING returns only the rows really inserted: the rest
-- are duplicates (unique mailbox_id + dedup_key + content_hash).
-- name: ingest_insert_emails
INSERT IGNORE INTO emails
  (mailbox_id, dedup_key, content_hash, message_id, folder, uidvalidity, uid, thread_key,
   in_reply_to, references_header, from_addr, from_name, to_addrs, cc_addrs, reply_addr,
   reply_rule, subject, sent_at, raw, raw_size, parse_status, parse_error, auto_reason, status,
   status_reason, body_text, body_html, attachments, attachment_text, index_status,
   direction, answered_via)
VALUES {rows}
RETURNING id, dedup_key, content_hash;

-- Mails already stored under the batch's dedup keys (Message-IDs), oldest first.
-- name: ingest_existing_emails
SELECT id, dedup_key, content_hash FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND dedup_key IN ({keys}) ORDER BY id;

-- The same, as a locking read (it sees rows another transaction committed after this
-- one's snapshot: a concurrent insert that made INSERT IGNORE skip a row).
-- name: ingest_existing_emails_locking
SELECT id, dedup_key, content_hash FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND dedup_key IN ({keys}) ORDER BY id LOCK IN SHARE MODE;

-- Rows stored before content hashes existed: their raw mail, to hash it once.
-- name: ingest_raw_for_hash
SELECT id, raw, raw_size FROM emails WHERE id IN ({ids});

-- name: ingest_set_content_hash
UPDATE emails SET content_hash = %(content_hash)s WHERE id = %(id)s AND content_hash = '';

-- name: ingest_mark_enqueued
UPDATE jobs SET enqueued_at = NOW(6) WHERE id IN ({ids});

-- Outbox: queued jobs, and failed jobs whose retry is due, page by page.
-- name: ingest_redispatch_candidates
SELECT id, queue, state, attempts FROM jobs
 WHERE state IN (%(queued)s, %(failed)s) AND next_run_at <= NOW(6)
   AND COALESCE(enqueued_at, created_at) <= NOW(6) - INTERVAL %(grace_us)s MICROSECOND
   AND id > %(after_id)s
 ORDER BY id
 LIMIT %(limit)s;

-- name: ingest_email_raw
SELECT raw, raw_size, parse_status, parse_error FROM emails WHERE id = %(id)s;

-- UIDs the server listed without a body (the cursor waits below them).
-- name: ingest_missing_uids
SELECT uid, misses FROM missing_uids
 WHERE mailbox_id = %(mailbox_id)s AND folder = %(folder)s AND uidvalidity = %(uidvalidity)s;

-- name: ingest_missing_uid_seen
INSERT INTO missing_uids (mailbox_id, folder, uidvalidity, uid, misses)
VALUES (%(mailbox_id)s, %(folder)s, %(uidvalidity)s, %(uid)s, %(misses)s)
ON DUPLICATE KEY UPDATE misses = VALUES(misses), last_missing_at = NOW(6);

-- name: ingest_missing_uid_clear
DELETE FROM missing_uids
 WHERE mailbox_id = %(mailbox_id)s AND folder = %(folder)s AND uidvalidity = %(uidvalidity)s
   AND uid = %(uid)s;
