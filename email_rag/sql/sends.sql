-- Send attempts. Status moves only through SendStore (email_rag/stores.py).

-- name: sends_insert
INSERT IGNORE INTO send_attempts (draft_id, message_id, status, recipients)
VALUES (%(draft_id)s, %(message_id)s, 'pending', %(recipients)s);

-- name: sends_insert_naive
-- settings.safeguards = false (chaos counter-check ONLY): every approval re-arms the send.
INSERT INTO send_attempts (draft_id, message_id, status, recipients)
VALUES (%(draft_id)s, %(message_id)s, 'pending', %(recipients)s)
ON DUPLICATE KEY UPDATE status = 'pending';

-- name: sends_by_draft_for_update
SELECT * FROM send_attempts WHERE draft_id = %(draft_id)s FOR UPDATE;

-- name: sends_by_draft
SELECT * FROM send_attempts WHERE draft_id = %(draft_id)s;

-- name: sends_get
SELECT * FROM send_attempts WHERE id = %(id)s;

-- name: sends_mark_attempted
UPDATE send_attempts SET status = 'attempted', tries = tries + 1, attempted_at = NOW(6)
 WHERE id = %(id)s AND status = 'pending';

-- name: sends_mark_attempted_naive
-- settings.safeguards = false (chaos counter-check ONLY): an attempted send is tried again.
UPDATE send_attempts SET status = 'attempted', tries = tries + 1, attempted_at = NOW(6)
 WHERE id = %(id)s AND status IN ('pending', 'attempted');

-- The mail of a draft with what an attachment download needs (raw mail, attachment list).

-- name: sends_get_for_update
SELECT * FROM send_attempts WHERE id = %(id)s FOR UPDATE;

-- name: sends_move
-- SendStore.move: a conditional status change with the relay's answer.
UPDATE send_attempts SET status = %(to)s, last_error = %(error)s,
       smtp_response = COALESCE(%(response)s, smtp_response), reconciled = %(reconciled)s,
       sent_at = IF(%(to)s = 'sent', NOW(6), sent_at)
 WHERE id = %(id)s AND status = %(from)s;

-- name: sends_rearm
-- SendStore: a refused attempt approved again (back to review, then approved): pending with
-- the recipient of the new approval; same Message-ID (the refused copy never left).
UPDATE send_attempts SET status = %(to)s, recipients = %(recipients)s, last_error = NULL
 WHERE id = %(id)s AND status = %(from)s;

-- name: sends_list
SELECT s.id, s.draft_id, d.email_id, s.status, s.tries, s.message_id, s.recipients,
       s.last_error, s.updated_at
  FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE (%(status)s IS NULL OR s.status = %(status)s)
 ORDER BY s.id LIMIT %(limit)s;
