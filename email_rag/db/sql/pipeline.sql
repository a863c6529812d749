-- What the stages read of a mail (core.records.Mail, MAIL_COLUMNS): every column but the
-- raw source and the HTML body; a step that needs the raw mail reads it itself
-- (ingest_email_raw). A unit test holds this list equal to the record's fields.

-- name: pipeline_mail
SELECT id, status, status_reason, mailbox_id, subject, parse_status, message_id, thread_key,
       in_reply_to, from_addr, from_name, to_addrs, cc_addrs, reply_addr, reply_rule,
       sent_at, received_at, raw_size, parse_error, auto_reason, body_text, attachments,
       attachment_text, index_status, index_missing, category, priority, language, summary,
       needs_reply, draft_instruction
  FROM emails WHERE id = %(id)s;
