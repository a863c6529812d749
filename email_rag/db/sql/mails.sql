-- Mails (emails table). Status moves only through MailStore (email_rag/db/stores.py).

-- name: emails_get_for_update
SELECT id, status FROM emails WHERE id = %(id)s FOR UPDATE;

-- name: emails_move
-- MailStore.move: one conditional status change (the store checked the transition table).
UPDATE emails SET status = %(to)s, status_reason = %(reason)s
 WHERE id = %(id)s AND status = %(from)s;

-- name: emails_move_with_instruction
-- Regenerate: the status change and the staff's instruction for the next draft.
UPDATE emails SET status = %(to)s, status_reason = %(reason)s,
       draft_instruction = %(instruction)s
 WHERE id = %(id)s AND status = %(from)s;

-- name: emails_thread_others
SELECT id, subject, from_addr, received_at, status FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND thread_key = %(thread_key)s AND id <> %(id)s
 ORDER BY received_at, id;

