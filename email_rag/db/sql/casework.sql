-- Pending / snooze, reopen and forward on the desk (review/snooze.py, review/reopen.py,
-- sending/forward.py).

-- name: snooze_set
INSERT INTO mail_snoozes (email_id, until_at, snoozed_by)
VALUES (%(email_id)s, %(until)s, %(by)s)
ON DUPLICATE KEY UPDATE until_at = VALUES(until_at), snoozed_by = VALUES(snoozed_by),
                        snoozed_at = CURRENT_TIMESTAMP(6);

-- name: snooze_get
SELECT email_id, until_at, snoozed_by, snoozed_at FROM mail_snoozes
 WHERE email_id = %(email_id)s;

-- name: snooze_get_for_update
SELECT email_id, until_at, snoozed_by, snoozed_at FROM mail_snoozes
 WHERE email_id = %(email_id)s FOR UPDATE;

-- name: snooze_delete
DELETE FROM mail_snoozes WHERE email_id = %(email_id)s;

-- name: snooze_due
-- Snoozes whose date has passed, oldest first (the wake pass deletes each one it ends).
SELECT email_id, until_at, snoozed_by, snoozed_at FROM mail_snoozes
 WHERE until_at <= UTC_TIMESTAMP(6) ORDER BY until_at LIMIT %(limit)s;

-- name: snooze_end_due
-- Ends one snooze if it is still the one that was found due (another process may have
-- ended it, or someone snoozed the mail again meanwhile).
DELETE FROM mail_snoozes WHERE email_id = %(email_id)s AND until_at = %(until)s
   AND until_at <= UTC_TIMESTAMP(6);

-- name: forward_recent
-- The same forward (mail, recipient, text) made in the last minutes: a double click or a
-- repeated form, answered with the first one instead of a second send.
SELECT d.id AS draft_id, d.created_at FROM drafts d
  JOIN send_attempts s ON s.draft_id = d.id
 WHERE d.email_id = %(email_id)s AND d.source = 'forward' AND s.recipients = %(recipient)s
   AND d.body_draft = %(body)s AND d.created_at > NOW(6) - INTERVAL %(window_s)s SECOND
 ORDER BY d.id DESC LIMIT 1;

-- name: drafts_insert_forward
-- A forward of a mail to an address (sending/forward.py): approved at once by the user who
-- forwards it, sent by the send job like an approved reply.
INSERT INTO drafts (email_id, version, status, subject, body_draft, body_final, sources,
                    language, source, approved_by, approved_at)
VALUES (%(email_id)s, %(version)s, 'approved', %(subject)s, %(body)s, %(body)s, '[]', NULL,
        'forward', %(by)s, NOW(6));

-- name: forward_mail
-- What a forward quotes of a mail (headers as received, the text; never the raw bytes).
SELECT id, mailbox_id, status, subject, from_addr, from_name, to_addrs, cc_addrs,
       COALESCE(sent_at, received_at) AS sent_at, body_text, message_id
  FROM emails WHERE id = %(id)s FOR UPDATE;

-- name: forwards_of_mail
-- The forwards of a mail with their send state (mail page).
SELECT d.id AS draft_id, d.approved_by, d.created_at, d.status, s.status AS send_status,
       s.recipients
  FROM drafts d LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE d.email_id = %(email_id)s AND d.source = 'forward'
 ORDER BY d.id;

-- name: saved_views_of_user
SELECT id, name, query FROM saved_views WHERE user_id = %(user_id)s ORDER BY name;

-- name: saved_view_set
-- Saving under a name the user has already replaces that view's filters.
INSERT INTO saved_views (user_id, name, query) VALUES (%(user_id)s, %(name)s, %(query)s)
ON DUPLICATE KEY UPDATE query = VALUES(query);

-- name: saved_view_delete
DELETE FROM saved_views WHERE id = %(id)s AND user_id = %(user_id)s;
