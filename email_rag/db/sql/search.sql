-- Search over every mail and reply, and the customer page (review/search.py). Texts are
-- cut to 20,000 characters: a snippet is made from them, never the whole of a huge mail.
-- The search pages newest first through one order over both kinds: (at, kind, id)
-- descending, kind 1 for a mail and 0 for a reply; a page's cursor (c_at, c_kind, c_id)
-- is its last hit, and each query reads what comes after it (c_at NULL: the first page).

-- name: search_mails
SELECT e.id AS email_id, e.subject, e.from_addr, e.from_name, e.status,
       COALESCE(LEAST(e.sent_at, e.received_at), e.received_at) AS at, m.name AS mailbox,
       LEFT(e.body_text, 20000) AS text
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE MATCH(e.subject, e.from_addr, e.from_name, e.body_text)
       AGAINST (%(search)s IN BOOLEAN MODE)
   AND (%(scope)s IS NULL OR FIND_IN_SET(e.mailbox_id, %(scope)s))
   AND (%(c_at)s IS NULL
        OR COALESCE(LEAST(e.sent_at, e.received_at), e.received_at) < %(c_at)s
        OR (COALESCE(LEAST(e.sent_at, e.received_at), e.received_at) = %(c_at)s
            AND (%(c_kind)s > 1 OR (%(c_kind)s = 1 AND e.id < %(c_id)s))))
 ORDER BY at DESC, e.id DESC LIMIT %(limit)s;

-- name: search_replies
-- Our replies (drafts that are or were a reply: not rejected, replaced or forwarded).
SELECT d.email_id, d.id AS draft_id, d.subject, e.from_addr, e.from_name, d.status,
       COALESCE(s.sent_at, d.approved_at, d.created_at) AS at, m.name AS mailbox,
       LEFT(COALESCE(d.body_final, d.body_draft), 20000) AS text
  FROM drafts d JOIN emails e ON e.id = d.email_id JOIN mailboxes m ON m.id = e.mailbox_id
  LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE MATCH(d.body_draft, d.body_final) AGAINST (%(search)s IN BOOLEAN MODE)
   AND d.status IN ('pending_review', 'stale', 'approved', 'sent', 'failed')
   AND d.source <> 'forward'
   AND (%(scope)s IS NULL OR FIND_IN_SET(e.mailbox_id, %(scope)s))
   AND (%(c_at)s IS NULL OR COALESCE(s.sent_at, d.approved_at, d.created_at) < %(c_at)s
        OR (COALESCE(s.sent_at, d.approved_at, d.created_at) = %(c_at)s
            AND (%(c_kind)s > 0 OR (%(c_kind)s = 0 AND d.id < %(c_id)s))))
 ORDER BY at DESC, d.id DESC LIMIT %(limit)s;

-- name: customer_mails
-- Every mail of one sender address in the user's mailboxes, newest first, with its waiting
-- draft (if any).
SELECT e.id, e.subject, e.from_name, e.status, e.category,
       COALESCE(LEAST(e.sent_at, e.received_at), e.received_at) AS at, m.name AS mailbox,
       (SELECT MAX(d.id) FROM drafts d WHERE d.email_id = e.id
                                         AND d.status IN ('pending_review', 'stale')) AS open_draft
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.from_addr = %(addr)s
   AND (%(scope)s IS NULL OR FIND_IN_SET(e.mailbox_id, %(scope)s))
 ORDER BY e.received_at DESC, e.id DESC LIMIT %(limit)s;

-- name: customer_replies
-- Our replies to one sender address (approved or sent; not forwards), newest first.
SELECT d.id AS draft_id, d.email_id, d.subject, d.status, d.approved_by,
       COALESCE(s.sent_at, d.approved_at) AS at, s.status AS send_status,
       LEFT(COALESCE(d.body_final, d.body_draft), 600) AS text
  FROM emails e JOIN drafts d ON d.email_id = e.id
  LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE e.from_addr = %(addr)s
   AND (%(scope)s IS NULL OR FIND_IN_SET(e.mailbox_id, %(scope)s))
   AND d.status IN ('approved', 'sent') AND d.source <> 'forward'
 ORDER BY at DESC, d.id DESC LIMIT %(limit)s;
