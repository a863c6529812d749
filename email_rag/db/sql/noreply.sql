-- Mails the LLM suggested need no reply, with no header confirming it (email_rag.review.no_reply).

-- name: noreply_suggested
SELECT e.id, e.received_at, e.from_addr, e.subject, e.category, e.priority, e.language,
       e.summary, e.status_reason, m.name AS mailbox
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.status = 'no_reply_suggested'
   AND (%(mailbox)s IS NULL OR m.name = %(mailbox)s)
   AND (%(scope)s IS NULL OR FIND_IN_SET(e.mailbox_id, %(scope)s))
 ORDER BY e.received_at, e.id
 LIMIT %(limit)s;

-- name: noreply_mail_for_update
SELECT id, status, needs_reply FROM emails WHERE id = %(id)s FOR UPDATE;

-- name: noreply_move
-- MailStore.move out of no_reply_suggested, with the staff's answer.
UPDATE emails SET status = %(to)s, status_reason = %(reason)s, needs_reply = %(needs_reply)s
 WHERE id = %(id)s AND status = %(from)s;

-- name: noreply_clear_steps
-- A reply after all: the steps after classify run again (the audit log keeps the history).
DELETE FROM email_steps WHERE email_id = %(email_id)s AND step IN ('index', 'retrieve', 'draft');
