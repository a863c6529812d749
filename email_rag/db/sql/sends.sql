-- Send attempts. Status moves only through SendStore (email_rag/db/stores.py).

-- name: sends_insert
INSERT IGNORE INTO send_attempts (draft_id, message_id, status, recipients)
VALUES (%(draft_id)s, %(message_id)s, 'pending', %(recipients)s);

-- name: sends_by_draft_for_update
SELECT * FROM send_attempts WHERE draft_id = %(draft_id)s FOR UPDATE;

-- name: sends_by_draft
SELECT * FROM send_attempts WHERE draft_id = %(draft_id)s;

-- name: sends_get
SELECT * FROM send_attempts WHERE id = %(id)s;

-- name: sends_mark_attempted
UPDATE send_attempts SET status = 'attempted', tries = tries + 1, attempted_at = NOW(6)
 WHERE id = %(id)s AND status = 'pending';

-- The mail of a draft with what an attachment download needs (raw mail, attachment list).

-- name: sends_get_for_update
SELECT * FROM send_attempts WHERE id = %(id)s FOR UPDATE;

-- name: sends_move
-- SendStore.move: a conditional status change with the relay's answer.
-- verified_by: how the new status was established (relay_250, sent_folder, admin; NULL when
-- nothing is established); accepted_at: when the relay answered 250 (from the send journal
-- when the write is finished after a MariaDB outage).
UPDATE send_attempts SET status = %(to)s, last_error = %(error)s,
       smtp_response = COALESCE(%(response)s, smtp_response), reconciled = %(reconciled)s,
       sent_at = IF(%(to)s = 'sent', COALESCE(%(accepted_at)s, NOW(6)), sent_at),
       accepted_at = COALESCE(%(accepted_at)s, accepted_at),
       verified_by = %(verified_by)s,
       verified_at = IF(%(verified_by)s IS NULL, NULL, NOW(6)),
       decided_by = %(decided_by)s
 WHERE id = %(id)s AND status = %(from)s;

-- name: sends_bounce
-- SendStore: a bounce (DSN) names the attempt: it did not arrive.
UPDATE send_attempts SET status = %(to)s, last_error = %(diagnostic)s, verified_by = 'bounce',
       verified_at = NOW(6), bounce_email_id = %(bounce_email_id)s, decided_by = NULL
 WHERE id = %(id)s AND status = %(from)s;

-- name: sends_by_message_id_for_update
-- The send attempt a bounce names by the original Message-ID.
SELECT s.id, s.draft_id, s.status, s.message_id, d.email_id
  FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE s.message_id = %(message_id)s FOR UPDATE;

-- name: sends_last_to_recipient
-- A bounce without the original Message-ID: the newest sent (or unknown) attempt to this
-- recipient within the window.
SELECT s.id, s.draft_id, s.status, s.message_id, d.email_id
  FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE s.recipients = %(recipient)s AND s.status IN ('sent', 'unknown')
   AND s.updated_at > NOW(6) - INTERVAL %(days)s DAY
 ORDER BY s.id DESC LIMIT 1 FOR UPDATE;

-- name: sends_rearm_new_id
-- SendStore: a bounced attempt approved again: pending with a NEW Message-ID (the bounced
-- copy is in the Sent folder under the old one, which reconciliation must not find).
UPDATE send_attempts SET status = %(to)s, recipients = %(recipients)s,
       message_id = %(message_id)s, last_error = NULL, verified_by = NULL, verified_at = NULL,
       accepted_at = NULL, reconciled = 0
 WHERE id = %(id)s AND status = %(from)s;

-- name: sends_rearm
-- SendStore: a refused attempt approved again (back to review, then approved): pending with
-- the recipient of the new approval; same Message-ID (the refused copy never left).
UPDATE send_attempts SET status = %(to)s, recipients = %(recipients)s, last_error = NULL
 WHERE id = %(id)s AND status = %(from)s;

-- name: sends_list
SELECT s.id, s.draft_id, d.email_id, s.status, s.verified_by, s.decided_by, s.tries,
       s.message_id, s.recipients, s.last_error, s.smtp_response, s.accepted_at, s.sent_at,
       s.updated_at
  FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE (%(status)s IS NULL OR s.status = %(status)s)
 ORDER BY s.id LIMIT %(limit)s;

-- name: sends_mailbox_of_attempt
SELECT m.name FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
  JOIN emails e ON e.id = d.email_id JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE s.id = %(id)s;

-- name: sends_mailbox_of_mail
-- The mailbox a reply leaves from: its name (Sent folder, display name) and address.
SELECT name, address FROM mailboxes WHERE id = %(id)s;
