-- Drafts, approval and send attempts.

-- name: drafts_get_for_update
SELECT * FROM drafts WHERE id = %(id)s FOR UPDATE;

-- name: drafts_get
SELECT * FROM drafts WHERE id = %(id)s;

-- name: drafts_next_version
SELECT COALESCE(MAX(version), 0) + 1 AS v FROM drafts WHERE email_id = %(email_id)s;

-- name: drafts_insert
INSERT INTO drafts (email_id, version, status, subject, body_draft, sources, language,
                    prompt_version, model, check_flags)
VALUES (%(email_id)s, %(version)s, 'pending_review', %(subject)s, %(body)s, %(sources)s,
        %(language)s, %(prompt_version)s, %(model)s, %(check_flags)s);

-- name: drafts_insert_manual
-- A reply staff wrote by hand (sending/handwrite.py): pending review like any draft.
INSERT INTO drafts (email_id, version, status, subject, body_draft, sources, language, source)
VALUES (%(email_id)s, %(version)s, 'pending_review', %(subject)s, %(body)s, '[]',
        %(language)s, 'manual');

-- name: emails_set_reply
-- The reply decision of a mail set by staff (an address typed for a hand-written reply).
UPDATE emails SET reply_addr = %(reply_addr)s, reply_rule = %(reply_rule)s WHERE id = %(id)s;

-- name: drafts_approve
UPDATE drafts SET status = %(to)s, approved_by = %(by)s, approved_at = NOW(6),
       body_final = %(body_final)s, edit_diff = %(edit_diff)s, stale_reason = NULL
 WHERE id = %(id)s AND status = %(from)s;

-- name: drafts_reject
UPDATE drafts SET status = %(to)s, rejected_by = %(by)s, reject_reason = %(reject_reason)s
 WHERE id = %(id)s AND status = %(from)s;

-- name: drafts_newer_inbound
-- Inbound mail of the same thread that arrived after the given time (not our own, not automatic).
SELECT id, subject, created_at FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND thread_key = %(thread_key)s AND id <> %(email_id)s
   AND created_at > %(since)s AND auto_reason IS NULL
 ORDER BY id LIMIT 1;

-- name: drafts_mark_stale
UPDATE drafts SET status = %(to)s, stale_reason = %(reason)s WHERE id = %(id)s AND status = %(from)s;

-- name: drafts_mail_attachment_list
-- The mail of a draft with what a streamed attachment download needs (no raw bytes).
SELECT e.id, LENGTH(e.raw) AS stored_size, e.attachments
  FROM drafts d JOIN emails e ON e.id = d.email_id
 WHERE d.id = %(id)s;

-- name: emails_raw_piece
-- A slice of a stored raw mail (start is 1-based): attachments are read in pieces.
SELECT SUBSTRING(raw, %(start)s, %(length)s) AS piece FROM emails WHERE id = %(id)s;

-- name: drafts_mail_attachments
-- The mail of a draft with what an attachment download needs (raw mail, attachment list).
SELECT e.id, e.raw, e.attachments FROM drafts d JOIN emails e ON e.id = d.email_id
 WHERE d.id = %(id)s;

-- name: drafts_move
-- DraftStore.move: one conditional status change.
UPDATE drafts SET status = %(to)s WHERE id = %(id)s AND status = %(from)s;

-- name: drafts_open_of_mail_for_update
SELECT id FROM drafts WHERE email_id = %(email_id)s AND status IN ('pending_review', 'stale')
 ORDER BY id FOR UPDATE;

-- name: drafts_reply_mail
-- The mail a draft answers (ReplyMail): status, threading headers and the stored reply
-- decision; never the body or the raw bytes.
SELECT id, status, mailbox_id, subject, message_id, references_header, thread_key, from_addr,
       reply_addr, reply_rule
  FROM emails WHERE id = %(id)s;

-- name: drafts_reply_mail_for_update
SELECT id, status, mailbox_id, subject, message_id, references_header, thread_key, from_addr,
       reply_addr, reply_rule
  FROM emails WHERE id = %(id)s FOR UPDATE;

-- name: drafts_show_mail
-- The mail a draft answers, as the draft page and `drafts show` read it (never the raw bytes).
SELECT e.id, e.mailbox_id, m.name AS mailbox, e.status, e.status_reason, e.subject,
       e.from_addr, e.from_name, e.to_addrs, e.reply_addr, e.reply_rule, e.received_at,
       e.thread_key, e.summary, e.body_text, e.body_html, e.attachments, e.category,
       e.language, e.priority, e.classification_defaulted
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.id = %(id)s;
