-- What the stages read of a mail (core.records.Mail, MAIL_COLUMNS): every column but the
-- raw source and the HTML body; the runner reads the raw mail beside it for a step that
-- needs it (pipeline_run_mail_raw). A unit test holds this list equal to the record's fields.

-- name: pipeline_mail
SELECT id, status, status_reason, mailbox_id, subject, parse_status, message_id, thread_key,
       in_reply_to, from_addr, from_name, to_addrs, cc_addrs, reply_addr, reply_rule,
       sent_at, received_at, raw_size, parse_error, auto_reason, body_text, attachments,
       attachment_text, index_status, index_missing, category, priority, language, summary,
       needs_reply, draft_instruction
  FROM emails WHERE id = %(id)s;

-- The runner's read at the start of a run, in one statement: the mail as pipeline_mail reads
-- it (the same columns) and its mailbox's name (the draft step's reply frame). A unit test
-- holds the column list equal to the record's fields plus mailbox_name.
-- name: pipeline_run_mail
SELECT e.id, e.status, e.status_reason, e.mailbox_id, e.subject, e.parse_status, e.message_id,
       e.thread_key, e.in_reply_to, e.from_addr, e.from_name, e.to_addrs, e.cc_addrs,
       e.reply_addr, e.reply_rule, e.sent_at, e.received_at, e.raw_size, e.parse_error,
       e.auto_reason, e.body_text, e.attachments, e.attachment_text, e.index_status,
       e.index_missing, e.category, e.priority, e.language, e.summary, e.needs_reply,
       e.draft_instruction, m.name AS mailbox_name
  FROM emails e LEFT JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.id = %(id)s;

-- The same and the raw source: read when a step that needs it (the parse step) will run in
-- this run, instead of a read (and a commit) of its own; the runner drops it after that step.
-- name: pipeline_run_mail_raw
SELECT e.id, e.status, e.status_reason, e.mailbox_id, e.subject, e.parse_status, e.message_id,
       e.thread_key, e.in_reply_to, e.from_addr, e.from_name, e.to_addrs, e.cc_addrs,
       e.reply_addr, e.reply_rule, e.sent_at, e.received_at, e.raw_size, e.parse_error,
       e.auto_reason, e.body_text, e.attachments, e.attachment_text, e.index_status,
       e.index_missing, e.category, e.priority, e.language, e.summary, e.needs_reply,
       e.draft_instruction, m.name AS mailbox_name, e.raw
  FROM emails e LEFT JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.id = %(id)s;
