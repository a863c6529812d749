-- Benchmarks (email_rag_harness/bench/): the bare baselines' plain tables and the read-outs of a run.
-- Only ever run against a benchmark's own throw-away database.

-- The bare worker baseline: what a mail's processing writes, without its logic.
-- name: bench_create_rows
CREATE TABLE IF NOT EXISTS bench_rows (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  job INT NOT NULL,
  final TINYINT NOT NULL DEFAULT 0,
  at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  payload VARCHAR(1000) NOT NULL,
  KEY ix_bench_rows_job (job)
) ENGINE=InnoDB;

-- name: bench_insert_row
INSERT INTO bench_rows (job, final, payload) VALUES (%(job)s, %(final)s, %(payload)s);

-- name: bench_rows_done
SELECT COUNT(*) AS n, UNIX_TIMESTAMP(MAX(at)) AS last FROM bench_rows WHERE final = 1;

-- name: bench_rows_check
SELECT COUNT(*) AS rows_total, COUNT(DISTINCT job) AS jobs, SUM(final) AS finals,
       (SELECT COUNT(*) FROM (SELECT job FROM bench_rows WHERE final = 1 GROUP BY job
                               HAVING COUNT(*) > 1) d) AS doubled
  FROM bench_rows;

-- name: bench_rows_started
SELECT job, UNIX_TIMESTAMP(MIN(at)) AS started FROM bench_rows GROUP BY job;

-- The bare ingest baseline: the raw mails in a plain table.
-- name: bench_create_raw_mails
CREATE TABLE IF NOT EXISTS bench_raw_mails (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  uid INT NOT NULL,
  sha CHAR(64) NOT NULL,
  size INT NOT NULL,
  raw LONGBLOB NOT NULL
) ENGINE=InnoDB;

-- name: bench_insert_raw_mail
INSERT INTO bench_raw_mails (uid, sha, size, raw) VALUES (%(uid)s, %(sha)s, %(size)s, %(raw)s);

-- name: bench_raw_mails_check
SELECT COUNT(*) AS n, COUNT(DISTINCT uid) AS uids FROM bench_raw_mails;

-- Read-outs of a pipeline run.
-- name: bench_jobs_finished
SELECT COUNT(*) AS n, UNIX_TIMESTAMP(MAX(finished_at)) AS last FROM jobs
 WHERE state IN ('done', 'dead') AND kind = %(kind)s;

-- name: bench_job_state
SELECT state FROM jobs WHERE id = %(id)s;

-- name: bench_jobs_by_state
SELECT kind, state, COUNT(*) AS n FROM jobs GROUP BY kind, state;

-- name: bench_jobs_per_mail
SELECT COUNT(*) AS n FROM (SELECT email_id FROM jobs WHERE kind = %(kind)s GROUP BY email_id
                            HAVING COUNT(*) > 1) d;

-- name: bench_mails_by_status
SELECT status, COUNT(*) AS n FROM emails GROUP BY status;

-- name: bench_drafts_per_mail
SELECT e.status, COUNT(d.id) AS drafts, COUNT(*) AS n
  FROM emails e LEFT JOIN drafts d ON d.email_id = e.id
 GROUP BY e.id, e.status;

-- name: bench_steps_run_twice
SELECT COUNT(*) AS n FROM (
  SELECT entity_id, JSON_VALUE(detail, '$.step') AS step FROM audit_log
   WHERE entity_type = 'email' AND event = 'step_confirmed'
   GROUP BY entity_id, step HAVING COUNT(*) > 1) d;

-- name: bench_rows_written
SELECT (SELECT COUNT(*) FROM audit_log WHERE actor NOT IN ('poller', 'system:poller')) AS audit,
       (SELECT COUNT(*) FROM email_steps) AS steps,
       (SELECT COUNT(*) FROM drafts) AS drafts;

-- name: bench_job_events
SELECT entity_id, event, at FROM audit_log
 WHERE entity_type = 'job' AND event IN ('claimed', 'handed_off') ORDER BY at, id;

-- name: bench_step_events
SELECT entity_id, JSON_VALUE(detail, '$.step') AS step, JSON_VALUE(detail, '$.job_id') AS job,
       at FROM audit_log
 WHERE entity_type = 'email' AND event = 'step_confirmed' ORDER BY at, id;

-- name: bench_jobs_failed
SELECT id, kind, state, attempts, last_error FROM jobs WHERE state IN ('failed', 'dead')
 ORDER BY id LIMIT 5;

-- The send benchmark: a pending draft per mail (what the draft step leaves).
-- name: bench_insert_draft
INSERT INTO drafts (email_id, version, status, subject, body_draft, sources)
VALUES (%(email_id)s, 1, 'pending_review', %(subject)s, %(body)s, '[]');

-- name: bench_mail_draft_ready
UPDATE emails SET status = 'draft_ready' WHERE id = %(id)s;

-- name: bench_send_window
SELECT COUNT(*) AS n, UNIX_TIMESTAMP(MIN(started_at)) AS first,
       UNIX_TIMESTAMP(MAX(finished_at)) AS last
  FROM jobs WHERE kind = 'send_draft' AND state = 'done';

-- name: bench_send_attempts
SELECT s.message_id, s.status AS send_status, d.status AS draft_status, e.status AS mail_status
  FROM send_attempts s JOIN drafts d ON d.id = s.draft_id JOIN emails e ON e.id = d.email_id;

-- name: bench_mailbox_insert
INSERT IGNORE INTO mailboxes (name, address) VALUES (%(name)s, %(address)s);

-- name: bench_mailbox_id
SELECT id FROM mailboxes WHERE name = %(name)s;

-- name: bench_index_insert_email
INSERT INTO emails (mailbox_id, dedup_key, message_id, status, subject, body_text)
VALUES (%(mailbox_id)s, %(dedup_key)s, %(message_id)s, %(status)s, %(subject)s, %(body_text)s);

-- name: bench_index_emails
SELECT * FROM emails ORDER BY id;

-- name: bench_bare_lease
-- The bare script's stand-in for the poller's lease renewal (same write, no logic).
UPDATE mailboxes SET lease_until = NOW(6) WHERE id = 1;

-- name: bench_bare_existing
-- The poller's dedup lookup before its insert (same shape: the batch's keys).
SELECT id, dedup_key, content_hash FROM emails WHERE mailbox_id = 1 AND dedup_key IN ({keys})
 ORDER BY id LOCK IN SHARE MODE;

-- name: bench_bare_cursor
INSERT INTO mailbox_cursors (mailbox_id, folder, uidvalidity, last_uid)
VALUES (1, 'INBOX', 1, %(last_uid)s)
ON DUPLICATE KEY UPDATE last_uid = VALUES(last_uid);

-- name: bench_count_emails
SELECT COUNT(*) AS n FROM emails;

-- name: bench_count_jobs
SELECT COUNT(*) AS n FROM jobs;

-- name: bench_mail_outcome
SELECT status, parse_status, parse_error, subject, body_text FROM emails WHERE id = %(id)s;

-- name: bench_send_skip_process_jobs
-- The send bench runs only send jobs: the mails' process jobs would get in the way.
UPDATE jobs SET state = 'done' WHERE kind = 'process_email';

-- name: bench_send_drafts
SELECT d.id, d.body_draft, e.subject, e.from_addr, e.message_id, e.references_header
  FROM drafts d JOIN emails e ON e.id = d.email_id ORDER BY d.id LIMIT %(limit)s;

-- name: bench_hops_first_job
SELECT id FROM jobs ORDER BY id LIMIT 1;

-- name: bench_hops_pending_draft
SELECT id FROM drafts WHERE status = 'pending_review' ORDER BY id LIMIT 1;

-- name: bench_latency_times
-- bench latency: when each mail was stored and when its first draft was written.
SELECT e.message_id, UNIX_TIMESTAMP(e.received_at) AS stored,
       UNIX_TIMESTAMP(MIN(d.created_at)) AS drafted
  FROM emails e LEFT JOIN drafts d ON d.email_id = e.id
 GROUP BY e.id, e.message_id, e.received_at;

-- name: bench_latency_ready
SELECT lease_owner, last_success_at FROM mailboxes;

-- name: bench_latency_drafts
SELECT COUNT(*) AS n FROM drafts;

-- bench web (bench/web.py): 10,000 pending drafts and their mails in the bench's own database.
-- name: bench_web_mailboxes
INSERT INTO mailboxes (name, address) VALUES ('support', 'support@x'), ('sales', 'sales@x');

-- name: bench_web_mailbox_ids
SELECT id FROM mailboxes ORDER BY id;

-- name: bench_web_insert_email
INSERT INTO emails (mailbox_id, dedup_key, message_id, status, subject, body_text,
                    from_addr, thread_key, category, priority, language, received_at, sent_at)
VALUES (%(mailbox_id)s, %(dedup_key)s, %(message_id)s, %(status)s, %(subject)s, %(body_text)s,
        %(from_addr)s, %(thread_key)s, %(category)s, %(priority)s, %(language)s,
        '2026-11-01' + INTERVAL %(received_minute)s MINUTE,
        '2026-11-01' + INTERVAL %(sent_minute)s MINUTE);

-- name: bench_web_sent_drafts
INSERT INTO drafts (email_id, version, status, subject, body_draft, body_final, approved_by,
                    approved_at)
SELECT id, 1, 'sent', 'Re: x', 'Unsere Antwort', 'Unsere Antwort',
       ELT(1 + MOD(id, 6), 'user:anna', 'user:bob', 'user:carl', 'user:dora', 'user:emil', 'user:fay'),
       UTC_TIMESTAMP(6) - INTERVAL (MOD(id, 56)) DAY - INTERVAL 90 SECOND
  FROM emails WHERE status = 'sent';

-- name: bench_web_sends
-- The relay accepted each sent reply 90 s after its approval, spread over the last 8 weeks
-- (the reports page reads them by sent_at).
INSERT INTO send_attempts (draft_id, message_id, status, tries, recipients, attempted_at,
                           sent_at)
SELECT d.id, CONCAT('<reply-', d.id, '@x>'), 'sent', 1, 'kunde@example.com',
       d.approved_at, d.approved_at + INTERVAL 90 SECOND
  FROM drafts d WHERE d.status = 'sent';

-- name: bench_web_reviews
-- The review figures of those replies (outcomes spread over the kinds) and as many
-- rejected drafts: what the reports page groups.
INSERT INTO draft_reviews (draft_id, email_id, mailbox_id, category, outcome, edit_distance,
                           week, decided_at, agent)
SELECT d.id, e.id, e.mailbox_id, e.category,
       ELT(1 + MOD(d.id, 3), 'unchanged', 'light_edit', 'rewritten'),
       IF(MOD(d.id, 3) = 0, 0, 0.1 * (MOD(d.id, 3))),
       DATE(d.approved_at) - INTERVAL WEEKDAY(d.approved_at) DAY, d.approved_at, d.approved_by
  FROM drafts d JOIN emails e ON e.id = d.email_id WHERE d.status = 'sent'
UNION ALL
SELECT 1000000000 + d.id, e.id, e.mailbox_id, e.category, 'rejected', NULL,
       DATE(d.approved_at) - INTERVAL WEEKDAY(d.approved_at) DAY, d.approved_at, d.approved_by
  FROM drafts d JOIN emails e ON e.id = d.email_id WHERE d.status = 'sent';

-- name: bench_web_pending_drafts
INSERT INTO drafts (email_id, version, status, subject, body_draft, sources)
SELECT id, 1, 'pending_review', 'Re: x', 'Guten Tag,\nwir pruefen das.', %(sources)s
  FROM emails WHERE status = 'draft_ready';

-- name: bench_web_pending_draft_ids
SELECT id FROM drafts WHERE status = 'pending_review' ORDER BY id;

-- bench history (issue 31): what the import stored, and its index jobs.
-- name: bench_history_rows
SELECT COUNT(*) AS n, SUM(status = 'history') AS h, SUM(answered_by IS NOT NULL) AS a
  FROM emails;

-- name: bench_history_other_jobs
SELECT COUNT(*) AS n FROM jobs WHERE kind <> 'index_history';

-- name: bench_history_job_ids
SELECT id FROM jobs ORDER BY id;

-- name: bench_history_open_jobs
SELECT COUNT(*) AS n FROM jobs WHERE state <> 'done';

-- name: bench_history_not_indexed
SELECT COUNT(*) AS n FROM emails WHERE index_status = 'pending';

-- The bare same-I/O worker job (bench/bare.py ``same_io_job``): reads and writes of the mail's row.
-- name: bench_bare_read_mail_raw
SELECT * FROM emails WHERE id = %(id)s;

-- name: bench_bare_read_mail
SELECT id, mailbox_id, status, subject, from_addr, thread_key, body_text FROM emails
 WHERE id = %(id)s;

-- name: bench_bare_touch_mail
UPDATE emails SET status_reason = NULL WHERE id = %(id)s;

-- bench quality --drafts (bench/quality_drafts.py): the mails of the run with the newest draft
-- of each (the columns the judge reads; history mails for the sources' names).
-- name: bench_drafts_mails
SELECT e.id, e.message_id, e.status, d.status AS draft_status, d.body_draft, d.check_flags,
       d.sources
  FROM emails e
  LEFT JOIN drafts d ON d.id = (SELECT MAX(x.id) FROM drafts x WHERE x.email_id = e.id)
 ORDER BY e.id;

-- name: bench_drafts_history_left
SELECT COUNT(*) AS stored, COALESCE(SUM(index_status = 'pending'), 0) AS `left`
  FROM emails WHERE status = 'history';

-- name: bench_drafts_articles
SELECT id, origin, title, source_key FROM knowledge_articles;

-- name: bench_drafts_llm_attempts
SELECT entity_id, detail FROM audit_log
 WHERE event = 'llm_attempt' AND entity_type = 'email'
 ORDER BY id;
