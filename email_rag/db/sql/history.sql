-- History import (issue 31): the cut-off per mailbox, answered links, progress.

-- Stored once, at the first poll: the configured cut-off, else now (UTC, like emails.sent_at).
-- name: history_cutoff_init
UPDATE mailboxes
   SET history_cutoff = COALESCE(history_cutoff, %(cutoff)s, UTC_TIMESTAMP(6))
 WHERE id = %(mailbox_id)s AND history_cutoff IS NULL;

-- name: history_cutoff
SELECT history_cutoff FROM mailboxes WHERE id = %(mailbox_id)s;

-- name: history_cutoff_by_name
SELECT id, name, history_cutoff FROM mailboxes WHERE name = %(name)s FOR UPDATE;

-- name: history_cutoff_set
UPDATE mailboxes SET history_cutoff = %(cutoff)s WHERE id = %(mailbox_id)s;

-- A reply of ours names these Message-IDs (In-Reply-To, References): the inbound mails
-- among them are answered by it (the first reply found wins).
-- name: history_answered_candidates
SELECT id, message_id FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND message_id IN ({ids}) AND direction = 'in'
   AND answered_by IS NULL
 FOR UPDATE;

-- Stored replies of ours answering these inbound mails (the reply came first: other folder).
-- name: history_replies_to
SELECT id, in_reply_to FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND direction = 'out' AND in_reply_to IN ({ids})
 ORDER BY id;

-- name: history_set_answered_by
UPDATE emails SET answered_by = %(reply_id)s, answered_via = 'sent_reply'
 WHERE id = %(id)s AND answered_by IS NULL;

-- name: history_progress
SELECT COUNT(*) AS total,
       COALESCE(SUM(index_status <> 'pending'), 0) AS done,
       COALESCE(SUM(direction = 'out'), 0) AS replies,
       COALESCE(SUM(answered_via IS NOT NULL), 0) AS answered
  FROM emails WHERE status = 'history';

-- name: history_recent_done
SELECT COUNT(*) AS n FROM jobs
 WHERE kind = 'index_history' AND state = 'done'
   AND finished_at >= NOW(6) - INTERVAL %(window_s)s SECOND;

-- The index job's parse of a history mail (stored headers-read only, like new mail).
-- name: history_set_parsed
UPDATE emails
   SET parse_status = %(parse_status)s, parse_error = %(parse_error)s,
       body_text = %(body_text)s, body_html = %(body_html)s, attachments = %(attachments)s,
       attachment_text = %(attachment_text)s
 WHERE id = %(id)s AND parse_status = 'pending';

-- The mails of a batch of index jobs (the columns of pipeline_mail: core.records.Mail),
-- without the raw mail (history_raws reads it in groups for the parse).
-- name: history_batch_mails
SELECT id, status, status_reason, mailbox_id, subject, parse_status, message_id, thread_key,
       in_reply_to, from_addr, from_name, to_addrs, cc_addrs, reply_addr, reply_rule,
       sent_at, received_at, raw_size, parse_error, auto_reason, body_text, attachments,
       attachment_text, index_status, index_missing, category, priority, language, summary,
       needs_reply, draft_instruction
  FROM emails WHERE id IN ({ids});

-- name: history_raws
SELECT id, raw FROM emails WHERE id IN ({ids});
