-- Service levels (email_rag.review.service_levels): due times of waiting mails, computed in
-- Python from the mailbox's business hours and kept in emails.due_at / due_rule; the
-- triggers of migration 0380 keep the queue's 'due' sort keys in step.

-- name: sla_uncomputed
-- Waiting mails whose due time is not computed yet (their 'due' key starts with '2').
SELECT q.email_id, q.mailbox_id, MIN(q.sort_key) AS k,
       LEAST(COALESCE(e.sent_at, e.received_at), e.received_at) AS waiting_since
  FROM review_queue_keys q JOIN emails e ON e.id = q.email_id
 WHERE q.sort = 'due' AND q.sort_key >= CAST('2' AS BINARY)
 GROUP BY q.email_id, q.mailbox_id, waiting_since
 ORDER BY k
 LIMIT %(limit)s;

-- name: sla_set_due
-- due_at NULL with rule 'none': the mailbox has no service level.
UPDATE emails SET due_at = %(due_at)s, due_rule = %(rule)s, updated_at = updated_at
 WHERE id = %(id)s AND due_rule IS NULL;

-- name: sla_changed
-- Waiting mails of a mailbox whose due time was computed under another rule than its
-- service level now (the level changed, was added or was removed).
SELECT DISTINCT e.id FROM review_queue_keys q JOIN emails e ON e.id = q.email_id
 WHERE q.sort = 'due' AND q.mailbox_id = %(mailbox_id)s
   AND e.due_rule IS NOT NULL AND e.due_rule <> %(rule)s;

-- name: sla_forget
-- Computed again by the next sla_uncomputed (a closed mail keeps the due time it had).
UPDATE emails SET due_at = NULL, due_rule = NULL, updated_at = updated_at
 WHERE id IN ({ids});

-- name: sla_mailboxes
SELECT id, name FROM mailboxes;
