-- Retention per mailbox (email_rag.privacy.retention).

-- name: retention_mailboxes
SELECT id, name FROM mailboxes ORDER BY name;

-- name: retention_due
-- The mails of one mailbox whose case closed before %(cutoff)s, by id in (after, upto]. A
-- case is a thread (mailbox, thread_key; a mail without one is a case of its own); it is
-- closed when every mail of it is (closed_at set by migration 0350's triggers) and it
-- closed when its last mail did. The selection and the re-check inside the delete
-- transaction both use this query (the re-check over the batch's id range).
SELECT e.id FROM emails e
 WHERE e.mailbox_id = %(mailbox)s AND e.id > %(after)s AND e.id <= %(upto)s
   AND e.closed_at IS NOT NULL AND e.closed_at < %(cutoff)s
   AND NOT EXISTS (SELECT 1 FROM emails o
                    WHERE o.mailbox_id = e.mailbox_id AND o.thread_key = e.thread_key
                      AND (o.closed_at IS NULL OR o.closed_at >= %(cutoff)s))
 ORDER BY e.id LIMIT %(limit)s;

-- name: retention_erased_in
-- The retention batch events that erased one mail (their detail lists the mail ids).
SELECT id, at, actor, entity_type, entity_id, event, from_state, to_state, attempt, detail
  FROM audit_log
 WHERE entity_type = 'mailbox' AND event = 'retention_erased'
   AND JSON_CONTAINS(detail, %(id)s, '$.email_ids')
 ORDER BY at, id;

-- name: retention_any_marked
SELECT 1 AS marked FROM erasure_marks WHERE cause = 'retention' LIMIT 1;
