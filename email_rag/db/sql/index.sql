-- Indexing and retrieval (index step, retrieve step, periodic sync).

-- name: index_parent_by_message_id
-- The mail an In-Reply-To points at, in the same mailbox (graph reply_to edge).
SELECT id FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND message_id = %(message_id)s AND id <> %(id)s
 ORDER BY id LIMIT 1;

-- name: index_sent_replies
-- Our replies to one mail that actually left (drafts sent), oldest first.
SELECT d.id AS draft_id, COALESCE(s.sent_at, d.updated_at) AS sent_at,
       COALESCE(d.body_final, d.body_draft) AS reply_text, d.subject AS reply_subject
  FROM drafts d LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE d.email_id = %(id)s AND d.status = 'sent'
 ORDER BY d.id;

-- name: index_sent_replies_many
-- index_sent_replies for a batch of mails.
SELECT d.email_id, d.id AS draft_id, COALESCE(s.sent_at, d.updated_at) AS sent_at
  FROM drafts d LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE d.email_id IN ({ids}) AND d.status = 'sent'
 ORDER BY d.email_id, d.id;

-- name: index_set_status
UPDATE emails SET index_status = %(status)s, index_missing = %(missing)s WHERE id = %(id)s;

-- name: index_get_for_update
SELECT id, index_status, index_missing FROM emails WHERE id = %(id)s FOR UPDATE;

-- The sync's batches: what indexing reads (MailToIndex) and the index state, never the raw mail.
-- name: index_partial_batch
-- The partially indexed mails, page by page (the columns of pipeline_mail: core.records.Mail).
SELECT id, status, status_reason, mailbox_id, subject, parse_status, message_id, thread_key,
       in_reply_to, from_addr, from_name, to_addrs, cc_addrs, reply_addr, reply_rule,
       sent_at, received_at, raw_size, parse_error, auto_reason, body_text, attachments,
       attachment_text, index_status, index_missing, category, priority, language, summary,
       needs_reply, draft_instruction
  FROM emails
 WHERE index_status = 'partially_indexed' AND id > %(after)s
 ORDER BY id LIMIT %(limit)s;

-- name: index_all_batch
-- Every mail whose index step has run (re-index everything, e.g. onto a new store).
SELECT id, status, status_reason, mailbox_id, subject, parse_status, message_id, thread_key,
       in_reply_to, from_addr, from_name, to_addrs, cc_addrs, reply_addr, reply_rule,
       sent_at, received_at, raw_size, parse_error, auto_reason, body_text, attachments,
       attachment_text, index_status, index_missing, category, priority, language, summary,
       needs_reply, draft_instruction
  FROM emails
 WHERE index_status IN ('complete', 'partially_indexed', 'skipped') AND id > %(after)s
 ORDER BY id LIMIT %(limit)s;

-- name: index_status_of
SELECT id, index_status, index_missing FROM emails WHERE id = %(id)s;

-- name: index_count_partial
SELECT COUNT(*) AS n FROM emails WHERE index_status = 'partially_indexed';

-- name: index_count_all
-- The mails a re-index of everything has still before it: index step run, after %(after)s.
SELECT COUNT(*) AS n FROM emails
 WHERE index_status IN ('complete', 'partially_indexed', 'skipped') AND id > %(after)s;

-- name: index_thread_mails
-- The other mails of a thread (retrieval context from MariaDB, always available).
SELECT id, subject, from_addr, received_at, status, LEFT(body_text, 4000) AS body_text
  FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND thread_key = %(thread_key)s AND id <> %(id)s
 ORDER BY received_at, id LIMIT %(limit)s;

-- name: index_sender_history
-- The sender's earlier mails in the mailbox (used when the graph store is off or down).
SELECT id AS email_id, subject, received_at, thread_key, category, status
  FROM emails
 WHERE mailbox_id = %(mailbox_id)s AND from_addr = %(from_addr)s AND id <> %(id)s
 ORDER BY received_at DESC, id DESC LIMIT %(limit)s;

-- name: index_sent_cases
-- Of the candidate mails ({ids}: sql(name, ids=n) with slot_params(ids=...)), those with a
-- reply of ours, with that reply: a draft we sent, or (history import) the reply of ours
-- from the Sent folder that answered it (answered_by, once that reply is parsed). Per mail
-- the last row wins: the newest sent draft, else the Sent reply.
SELECT e.id AS email_id, e.subject, e.from_addr, e.received_at, e.category,
       LEFT(e.body_text, 4000) AS body_text, NULL AS draft_id, r.id AS reply_email_id,
       LEFT(r.body_text, 8000) AS reply_text, 0 AS pick
  FROM emails e JOIN emails r ON r.id = e.answered_by AND r.parse_status <> 'pending'
 WHERE e.id IN ({ids})
UNION ALL
SELECT e.id AS email_id, e.subject, e.from_addr, e.received_at, e.category,
       LEFT(e.body_text, 4000) AS body_text, d.id AS draft_id, NULL AS reply_email_id,
       COALESCE(d.body_final, d.body_draft) AS reply_text, 1 AS pick
  FROM emails e JOIN drafts d ON d.email_id = e.id AND d.status = 'sent'
 WHERE e.id IN ({ids})
 ORDER BY email_id, pick, draft_id;

-- name: index_mailbox_names
SELECT id, name FROM mailboxes;

-- name: index_emails_by_ids
SELECT e.id, e.mailbox_id, e.subject, e.from_addr, e.received_at, e.status, e.index_status,
       (e.answered_by IS NOT NULL
        OR EXISTS (SELECT 1 FROM drafts d WHERE d.email_id = e.id AND d.status = 'sent'))
         AS has_sent_reply
  FROM emails e WHERE e.id IN ({ids});

-- name: index_lexical
-- The lexical ranking of retrieval: the mails of a mailbox whose subject and text share the
-- most (rare) words with the query (InnoDB FULLTEXT ft_email_text, boolean mode; the query
-- is built by indexing.retrieval.lexical_query: optional words and word* prefixes only),
-- best first.
SELECT id, MATCH(subject, body_text) AGAINST (%(q)s IN BOOLEAN MODE) AS score
  FROM emails
 WHERE MATCH(subject, body_text) AGAINST (%(q)s IN BOOLEAN MODE)
   AND mailbox_id = %(mailbox_id)s AND id <> %(id)s
 ORDER BY score DESC, id LIMIT %(limit)s;

-- name: index_lexical_any_mailbox
-- The same over every mailbox (`email-rag search` without --mailbox).
SELECT id, MATCH(subject, body_text) AGAINST (%(q)s IN BOOLEAN MODE) AS score
  FROM emails
 WHERE MATCH(subject, body_text) AGAINST (%(q)s IN BOOLEAN MODE)
 ORDER BY score DESC, id LIMIT %(limit)s;
