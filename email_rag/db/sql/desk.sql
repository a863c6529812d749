-- Review desk (web UI): sessions, login throttle, mailbox permissions, queue paging and
-- search, autosaved edits.

-- name: web_user_session
SELECT id, name, role, disabled, session_version, time_zone, ui_language
  FROM users WHERE id = %(id)s;

-- name: web_user_end_sessions
-- Logout / disable: every session issued so far stops working at its next request.
UPDATE users SET session_version = session_version + 1 WHERE id = %(id)s;

-- name: web_user_set_prefs
UPDATE users SET time_zone = %(time_zone)s, ui_language = %(ui_language)s WHERE id = %(id)s;

-- name: web_throttle_failed
-- One more failed login for (name, client); at the limit a lock that doubles with every
-- further lock (capped), and the counter restarts. SET runs left to right with updated
-- values: locked_until and lockouts read the old failures/lockouts, so they come first.
-- stale (the caller read it): the failures counted so far are forgotten first.
INSERT INTO login_throttle (name_key, client, failures, lockouts, locked_until)
VALUES (%(key)s, %(client)s, IF(1 >= %(max)s, 0, 1), IF(1 >= %(max)s, 1, 0),
        IF(1 >= %(max)s, NOW(6) + INTERVAL %(lock_s)s SECOND, NULL))
ON DUPLICATE KEY UPDATE
  locked_until = IF(IF(%(stale)s, 0, failures) + 1 >= %(max)s,
                    NOW(6) + INTERVAL LEAST(%(lock_s)s * POW(2, lockouts), %(lock_max)s) SECOND,
                    locked_until),
  lockouts = IF(IF(%(stale)s, 0, failures) + 1 >= %(max)s, lockouts + 1, lockouts),
  failures = IF(IF(%(stale)s, 0, failures) + 1 >= %(max)s, 0, IF(%(stale)s, 0, failures) + 1);

-- name: web_throttle_get
-- Both buckets of a login, read without locks (the password check runs outside any
-- transaction). stale: not locked and untouched for longer than the window.
SELECT name_key, failures, lockouts,
       IF(locked_until > NOW(6),
          GREATEST(CEIL(TIMESTAMPDIFF(MICROSECOND, NOW(6), locked_until) / 1e6), 1), 0) AS locked_s,
       (updated_at < NOW(6) - INTERVAL %(window_s)s SECOND
        AND (locked_until IS NULL OR locked_until <= NOW(6))) AS stale
  FROM login_throttle WHERE client = %(client)s AND name_key IN (%(key)s, %(address)s);

-- name: web_throttle_prune
-- Rows of names and addresses not seen for longer than the longest lock and not locked:
-- the throttle's state stays as small as the recent failures.
DELETE FROM login_throttle
 WHERE updated_at < NOW(6) - INTERVAL %(keep_s)s SECOND
   AND (locked_until IS NULL OR locked_until < NOW(6));

-- name: web_throttle_clear
DELETE FROM login_throttle WHERE name_key = %(key)s AND client = %(client)s;

-- name: web_user_mailbox_ids
SELECT mailbox_id FROM user_mailboxes WHERE user_id = %(id)s ORDER BY mailbox_id;

-- name: web_user_assign_mailbox
INSERT IGNORE INTO user_mailboxes (user_id, mailbox_id)
SELECT u.id, m.id FROM users u JOIN mailboxes m ON m.name = %(mailbox)s WHERE u.name = %(name)s;

-- name: web_user_unassign_mailbox
DELETE um FROM user_mailboxes um JOIN users u ON u.id = um.user_id
  JOIN mailboxes m ON m.id = um.mailbox_id WHERE u.name = %(name)s AND m.name = %(mailbox)s;

-- The review queue: rows from the view review_queue, order and paging from its sort index
-- review_queue_keys (one row per waiting draft and sort; migration 0185). Every query
-- takes the same filters: sort (waiting | priority | mailbox | due), mailbox name,
-- category, scope (comma-separated mailbox ids the user may see; NULL = all), view, state,
-- owner and days. Paging is keyset on (sort_key, draft_id): index range reads, however
-- long the queue.
--
-- A search (search: a boolean-mode full-text query over subject, sender and text;
-- pattern: the same words as a regular expression, review/fulltext.py) has its own
-- variants of the page and count queries, as two plans over the same rows (the mails the
-- index finds and the pattern accepts):
-- - desk_queue_search_*: driven by the FULLTEXT index's result, each found mail's
--   waiting drafts by ix_rqk_email (a customer, an order number: a few matches), each
--   mail also tested by the pattern;
-- - desk_queue_broad_*: the sort index walked in order, each row's mail tested by the
--   pattern only (a word in most mails: a page is its first matches, no sort of them all,
--   and the index is not asked: it evaluates such a word in 70-120 ms at 100,000 mails
--   however a statement uses it). The count stops at %(cap)s rows either way
--   (review/desk.py picks the plan by desk_queue_search_probe, then by the count).

-- fragment: desk_queue_filters
-- The filters every review-queue query takes (after its WHERE q.sort = %(sort)s).
   AND (%(mailbox)s IS NULL OR q.mailbox = %(mailbox)s)
   AND (%(category)s IS NULL OR q.category = %(category)s)
   AND (%(scope)s IS NULL OR FIND_IN_SET(q.mailbox_id, %(scope)s))
   AND (%(view)s IN ('all', 'snoozed')
        OR (%(view)s = 'mine' AND q.email_id IN (
            SELECT email_id FROM mail_assignments WHERE user_id = %(me)s))
        OR (%(view)s = 'unassigned' AND q.email_id NOT IN (
            SELECT email_id FROM mail_assignments)))
   AND (%(view)s = 'snoozed') = (q.email_id IN (
        SELECT s.email_id FROM mail_snoozes s WHERE s.until_at > UTC_TIMESTAMP(6)))
   AND (%(state)s IS NULL OR EXISTS (
        SELECT 1 FROM drafts fd WHERE fd.id = q.draft_id
           AND IF(%(state)s = 'flagged', COALESCE(fd.check_flags, '') NOT IN ('', '[]'),
                  fd.status = %(state)s)))
   AND (%(owner)s IS NULL OR EXISTS (
        SELECT 1 FROM mail_assignments fa JOIN users fu ON fu.id = fa.user_id
         WHERE fa.email_id = q.email_id AND fu.name = %(owner)s))
   AND (%(since)s IS NULL AND %(until)s IS NULL OR EXISTS (
        SELECT 1 FROM emails fe WHERE fe.id = q.email_id
           AND (%(since)s IS NULL
                OR LEAST(COALESCE(fe.sent_at, fe.received_at), fe.received_at) >= %(since)s)
           AND (%(until)s IS NULL
                OR LEAST(COALESCE(fe.sent_at, fe.received_at), fe.received_at) < %(until)s)))

-- fragment: desk_queue_found
-- The waiting drafts of the mails the FULLTEXT index finds, in this sort.
  FROM emails f STRAIGHT_JOIN review_queue_keys q FORCE INDEX (ix_rqk_email)
       ON q.email_id = f.id AND q.sort = %(sort)s
 WHERE MATCH(f.subject, f.from_addr, f.from_name, f.body_text)
       AGAINST (%(search)s IN BOOLEAN MODE)
   AND CONCAT_WS(' ', f.subject, f.from_addr, f.from_name, f.body_text) REGEXP %(pattern)s

-- fragment: desk_queue_walked
-- The sort index in order, each row's mail tested by the search's pattern.
  FROM review_queue_keys q STRAIGHT_JOIN emails f ON f.id = q.email_id
 WHERE q.sort = %(sort)s
   AND CONCAT_WS(' ', f.subject, f.from_addr, f.from_name, f.body_text) REGEXP %(pattern)s

-- fragment: desk_queue_after
           AND (%(after_key)s IS NULL OR q.sort_key > %(after_key)s
                OR (q.sort_key = %(after_key)s AND q.draft_id > %(after_id)s))
         ORDER BY q.sort_key, q.draft_id LIMIT %(limit)s) k

-- fragment: desk_queue_before
           AND (q.sort_key < %(before_key)s
                OR (q.sort_key = %(before_key)s AND q.draft_id < %(before_id)s))
         ORDER BY q.sort_key DESC, q.draft_id DESC LIMIT %(limit)s) k

-- fragment: desk_queue_rows
-- A page's drafts as the queue lists them (k: draft_id, sort_key).
  JOIN review_queue v ON v.id = k.draft_id
  LEFT JOIN mail_assignments ma ON ma.email_id = v.email_id
  LEFT JOIN users ou ON ou.id = ma.user_id
  LEFT JOIN mail_snoozes sn ON sn.email_id = v.email_id AND sn.until_at > UTC_TIMESTAMP(6)

-- fragment: desk_queue_columns
SELECT v.*, k.sort_key, TIMESTAMPDIFF(SECOND, v.waiting_since, NOW(6)) AS age_s,
       ou.name AS owner, sn.until_at AS snoozed_until

-- fragment: desk_queue_counted
-- desk_queue_count's figures over the rows of c (draft_id, sort_key).
SELECT COUNT(*) AS total, COALESCE(SUM(c.draft_id = %(at_id)s), 0) AS here,
       COALESCE(SUM(%(at_key)s IS NOT NULL
                    AND (c.sort_key < %(at_key)s
                         OR (c.sort_key = %(at_key)s AND c.draft_id < %(at_id)s))), 0) AS before_n

-- name: desk_queue_page
@desk_queue_columns
  FROM (SELECT q.draft_id, q.sort_key FROM review_queue_keys q
         WHERE q.sort = %(sort)s
   @desk_queue_filters
   @desk_queue_after
   @desk_queue_rows
 ORDER BY k.sort_key, k.draft_id;

-- name: desk_queue_page_before
-- The rows just before a position, nearest first (previous page, previous draft).
@desk_queue_columns
  FROM (SELECT q.draft_id, q.sort_key FROM review_queue_keys q
         WHERE q.sort = %(sort)s
   @desk_queue_filters
   @desk_queue_before
   @desk_queue_rows
 ORDER BY k.sort_key DESC, k.draft_id DESC;

-- name: desk_queue_count
-- How many drafts match, how many sort before (at_key, at_id) - the "x of N" - and
-- whether draft at_id itself matches.
SELECT COUNT(*) AS total, COALESCE(SUM(q.draft_id = %(at_id)s), 0) AS here,
       COALESCE(SUM(%(at_key)s IS NOT NULL
                    AND (q.sort_key < %(at_key)s
                         OR (q.sort_key = %(at_key)s AND q.draft_id < %(at_id)s))), 0) AS before_n
  FROM review_queue_keys q
 WHERE q.sort = %(sort)s
   @desk_queue_filters;

-- name: desk_queue_search_page
@desk_queue_columns
  FROM (SELECT q.draft_id, q.sort_key
   @desk_queue_found
   @desk_queue_filters
   @desk_queue_after
   @desk_queue_rows
 ORDER BY k.sort_key, k.draft_id;

-- name: desk_queue_search_page_before
@desk_queue_columns
  FROM (SELECT q.draft_id, q.sort_key
   @desk_queue_found
   @desk_queue_filters
   @desk_queue_before
   @desk_queue_rows
 ORDER BY k.sort_key DESC, k.draft_id DESC;

-- name: desk_queue_search_sample
-- The first %(probe)s listed drafts in the sort order (filters, no search): how many, and
-- how many of them the search's pattern accepts (is the word in most mails?).
SELECT COUNT(*) AS listed,
       COALESCE(SUM(CONCAT_WS(' ', f.subject, f.from_addr, f.from_name, f.body_text)
                    REGEXP %(pattern)s), 0) AS found
  FROM (SELECT q.email_id FROM review_queue_keys q
         WHERE q.sort = %(sort)s
   @desk_queue_filters
         ORDER BY q.sort_key, q.draft_id LIMIT %(probe)s) p
  STRAIGHT_JOIN emails f ON f.id = p.email_id;

-- name: desk_queue_search_probe
-- How many of the first %(probe)s listed drafts in the sort order (filters, no search) the
-- search's pattern accepts, up to %(cap)s: more than the count's cap here is a broad
-- search without asking the FULLTEXT index (a few ms for a word in most mails).
SELECT COUNT(*) AS found
  FROM (SELECT 1
          FROM (SELECT q.email_id FROM review_queue_keys q
                 WHERE q.sort = %(sort)s
   @desk_queue_filters
                 ORDER BY q.sort_key, q.draft_id LIMIT %(probe)s) p
          STRAIGHT_JOIN emails f ON f.id = p.email_id
         WHERE CONCAT_WS(' ', f.subject, f.from_addr, f.from_name, f.body_text) REGEXP %(pattern)s
         LIMIT %(cap)s) c;

-- name: desk_queue_search_count
-- At most %(cap)s of the matches (any of them: the index's order): all of them, exact,
-- when fewer.
@desk_queue_counted
  FROM (SELECT q.draft_id, q.sort_key
   @desk_queue_found
   @desk_queue_filters
         LIMIT %(cap)s) c;

-- name: desk_queue_broad_page
@desk_queue_columns
  FROM (SELECT q.draft_id, q.sort_key
   @desk_queue_walked
   @desk_queue_filters
   @desk_queue_after
   @desk_queue_rows
 ORDER BY k.sort_key, k.draft_id;

-- name: desk_queue_broad_page_before
@desk_queue_columns
  FROM (SELECT q.draft_id, q.sort_key
   @desk_queue_walked
   @desk_queue_filters
   @desk_queue_before
   @desk_queue_rows
 ORDER BY k.sort_key DESC, k.draft_id DESC;

-- name: desk_queue_broad_count
-- The first %(cap)s matches in the sort order, up to and including (at_key, at_id): the
-- "x of N" of a draft among them.
@desk_queue_counted
  FROM (SELECT q.draft_id, q.sort_key
   @desk_queue_walked
   @desk_queue_filters
           AND (q.sort_key < %(at_key)s OR (q.sort_key = %(at_key)s AND q.draft_id <= %(at_id)s))
         ORDER BY q.sort_key, q.draft_id LIMIT %(cap)s) c;

-- name: desk_queue_key
SELECT sort_key FROM review_queue_keys WHERE sort = %(sort)s AND draft_id = %(id)s;

-- name: desk_queue_row
-- One draft as the queue shows it (NULL when it is not waiting any more).
SELECT v.*, TIMESTAMPDIFF(SECOND, v.waiting_since, NOW(6)) AS age_s
  FROM review_queue v WHERE v.id = %(id)s;

-- name: desk_draft_mailbox
SELECT e.mailbox_id FROM drafts d JOIN emails e ON e.id = d.email_id WHERE d.id = %(id)s;

-- name: desk_mail_mailbox
SELECT mailbox_id FROM emails WHERE id = %(id)s;

-- name: desk_mailboxes
SELECT id, name FROM mailboxes ORDER BY name;

-- Autosaved reply text (draft_edits): a work buffer per draft and agent, not a state.

-- name: desk_edit_save
INSERT INTO draft_edits (draft_id, user_id, body) VALUES (%(draft_id)s, %(user_id)s, %(body)s)
ON DUPLICATE KEY UPDATE body = VALUES(body), saved_at = NOW(6);

-- name: desk_edit_get
SELECT body, saved_at FROM draft_edits WHERE draft_id = %(draft_id)s AND user_id = %(user_id)s;

-- name: desk_edit_others
-- Who else saved an edit of this draft recently ("being edited by X").
SELECT u.name, de.saved_at, TIMESTAMPDIFF(SECOND, de.saved_at, NOW(6)) AS ago_s
  FROM draft_edits de JOIN users u ON u.id = de.user_id
 WHERE de.draft_id = %(draft_id)s AND de.user_id <> %(user_id)s
   AND de.saved_at > NOW(6) - INTERVAL %(window_s)s SECOND
 ORDER BY de.saved_at DESC;

-- name: desk_edit_discard
DELETE FROM draft_edits WHERE draft_id = %(draft_id)s AND user_id = %(user_id)s;

-- name: desk_draft_state
SELECT id, email_id, status, updated_at, approved_by, approved_at, rejected_by, reject_reason,
       stale_reason FROM drafts WHERE id = %(id)s;

-- name: desk_classification_for_update
SELECT e.id, e.category, e.language, e.priority, e.classification_defaulted
  FROM drafts d JOIN emails e ON e.id = d.email_id WHERE d.id = %(draft_id)s FOR UPDATE;

-- name: desk_classification_set
-- A human's correction of the classification (never a status change). The draft step
-- reads language from the mail row, so the next Regenerate writes in it.
UPDATE emails SET category = %(category)s, language = %(language)s, priority = %(priority)s,
       classification_defaulted = 0
 WHERE id = %(id)s;

-- name: desk_thread_mails
-- Every mail of a thread, oldest first, with the latest draft of each (a link for staff).
SELECT e.id, e.subject, e.from_addr, e.from_name, e.status, LEFT(e.body_text, 6000) AS body_text,
       LEAST(COALESCE(e.sent_at, e.received_at), e.received_at) AS at,
       (SELECT MAX(d.id) FROM drafts d WHERE d.email_id = e.id) AS draft_id
  FROM emails e
 WHERE e.mailbox_id = %(mailbox_id)s AND e.thread_key = %(thread_key)s
 ORDER BY at, e.id
 LIMIT 100;

-- name: desk_thread_replies
-- Our replies in a thread (approved or sent drafts; not forwards: they went elsewhere),
-- with when they went out.
SELECT d.id AS draft_id, d.email_id, d.status, COALESCE(d.body_final, d.body_draft) AS body_text,
       d.approved_by, COALESCE(s.sent_at, d.approved_at) AS at, s.status AS send_status
  FROM drafts d JOIN emails e ON e.id = d.email_id
  LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE e.mailbox_id = %(mailbox_id)s AND e.thread_key = %(thread_key)s
   AND d.status IN ('approved', 'sent') AND d.source <> 'forward'
 ORDER BY at, d.id
 LIMIT 100;

-- name: desk_sender_history
-- The sender's other mails in this mailbox (outside this thread), newest first.
SELECT e.id, e.subject, e.status, e.category,
       LEAST(COALESCE(e.sent_at, e.received_at), e.received_at) AS at,
       (SELECT MAX(d.id) FROM drafts d WHERE d.email_id = e.id) AS draft_id
  FROM emails e
 WHERE e.mailbox_id = %(mailbox_id)s AND e.from_addr = %(from_addr)s AND e.id <> %(id)s
   AND (%(thread_key)s IS NULL OR e.thread_key IS NULL OR e.thread_key <> %(thread_key)s)
 ORDER BY e.received_at DESC, e.id DESC
 LIMIT 10;

-- name: desk_mail_read
-- One mail as staff read it (the no-reply list's "open"): explicit columns, never the raw
-- source.
SELECT e.id, e.subject, e.from_addr, e.from_name, e.to_addrs, e.cc_addrs, e.received_at,
       e.status, e.status_reason, e.category, e.priority, e.language, e.summary,
       e.body_text, e.body_html, e.attachments, m.name AS mailbox
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.id = %(id)s;

-- name: desk_mail_raw
-- The stored raw source of one mail (the source view: plain text, audited).
SELECT raw FROM emails WHERE id = %(id)s;
