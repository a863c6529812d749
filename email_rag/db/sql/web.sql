-- Web UI: users, failure console, timeline, audit search, metrics.

-- name: web_user_insert
INSERT INTO users (name, role, password_hash) VALUES (%(name)s, %(role)s, %(hash)s);

-- name: web_user_by_name
SELECT * FROM users WHERE name = %(name)s;

-- name: web_user_by_name_for_update
SELECT * FROM users WHERE name = %(name)s FOR UPDATE;

-- name: web_users_list
SELECT u.id, u.name, u.role, u.disabled, u.last_login_at, u.created_at,
       COALESCE((SELECT GROUP_CONCAT(m.name ORDER BY m.name SEPARATOR ', ')
                   FROM user_mailboxes um JOIN mailboxes m ON m.id = um.mailbox_id
                  WHERE um.user_id = u.id), IF(u.role = 'admin', 'all', '')) AS mailboxes
  FROM users u ORDER BY u.name;

-- name: web_user_set_disabled
UPDATE users SET disabled = %(disabled)s, failed_logins = 0, locked_until = NULL
 WHERE name = %(name)s;

-- name: web_user_set_password
UPDATE users SET password_hash = %(hash)s WHERE id = %(id)s;

-- name: web_user_login_ok
UPDATE users SET failed_logins = 0, locked_until = NULL, last_login_at = NOW(6)
 WHERE id = %(id)s;

-- name: web_regenerate_clear_steps
-- Checkpoints of the steps a regenerated draft re-runs (the audit log keeps the history).
DELETE FROM email_steps WHERE email_id = %(email_id)s AND step IN ('retrieve', 'draft');

-- name: web_attention_items
-- Mails that need a human or are degraded: failed/manual mails, dead or retrying queue
-- entries (unless the mail already rests in a terminal state: no_reply, sent, rejected,
-- resolved), partially indexed mails, send attempts with an unknown outcome. Per mail: its
-- worst queue entry (dead, then failed, then the latest) and its latest send attempt.
SELECT e.id AS email_id, e.subject, e.from_addr, e.status, e.status_reason, e.index_status,
       e.index_missing, e.received_at, m.name AS mailbox,
       j.id AS job_id, j.kind AS job_kind, j.state AS job_state, j.attempts,
       j.last_error AS job_error, j.next_run_at, j.updated_at AS job_updated_at,
       s.id AS send_id, s.status AS send_status, s.tries AS send_tries,
       s.last_error AS send_error
  FROM (SELECT id FROM emails WHERE status IN ('failed', 'manual')
        UNION SELECT id FROM emails WHERE index_status = 'partially_indexed'
        UNION SELECT j0.email_id FROM jobs j0 JOIN emails x ON x.id = j0.email_id
               WHERE j0.state IN ('dead', 'failed')
                 AND x.status NOT IN ('no_reply', 'sent', 'rejected', 'resolved')
        UNION SELECT d0.email_id FROM send_attempts s0 JOIN drafts d0 ON d0.id = s0.draft_id
               WHERE s0.status = 'unknown') c
  JOIN emails e ON e.id = c.id
  JOIN mailboxes m ON m.id = e.mailbox_id
  LEFT JOIN jobs j ON j.id = (SELECT j2.id FROM jobs j2 WHERE j2.email_id = e.id
                               ORDER BY FIELD(j2.state, 'failed', 'dead') DESC,
                                        j2.updated_at DESC, j2.id DESC LIMIT 1)
  LEFT JOIN send_attempts s ON s.id = (SELECT s2.id FROM send_attempts s2
                                         JOIN drafts d2 ON d2.id = s2.draft_id
                                        WHERE d2.email_id = e.id ORDER BY s2.id DESC LIMIT 1)
 ORDER BY e.received_at, e.id
 LIMIT %(limit)s;

-- name: web_mail_unknown_sends
SELECT s.id FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE d.email_id = %(email_id)s AND s.status = 'unknown';


-- name: web_mailbox_names
SELECT name FROM mailboxes ORDER BY name;

-- name: web_categories
SELECT DISTINCT category FROM emails WHERE category IS NOT NULL ORDER BY category;

-- name: web_timeline_mail
SELECT e.id, e.subject, e.from_addr, e.from_name, e.to_addrs, e.received_at, e.status,
       e.status_reason, e.index_status, e.index_missing, e.parse_status, e.parse_error,
       e.category, e.priority, e.language, e.classification_defaulted, e.body_text,
       e.message_id, m.name AS mailbox
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id WHERE e.id = %(id)s;

-- name: web_timeline_jobs
SELECT id, kind, state, attempts, queue, last_error, next_run_at, updated_at
  FROM jobs WHERE email_id = %(id)s ORDER BY id;

-- name: web_timeline_drafts
SELECT id, email_id, version, status, approved_by, approved_at, rejected_by, reject_reason,
       stale_reason, created_at
  FROM drafts WHERE email_id = %(id)s ORDER BY version, id;

-- name: web_timeline_sends
SELECT s.id, s.draft_id, s.status, s.tries, s.message_id, s.last_error, s.sent_at, s.updated_at,
       s.verified_by, s.verified_at, s.decided_by, s.accepted_at, s.attempted_at, s.smtp_response
  FROM send_attempts s JOIN drafts d ON d.id = s.draft_id
 WHERE d.email_id = %(id)s ORDER BY s.id;

-- name: web_audit_of_entity
SELECT * FROM audit_log WHERE entity_type = %(type)s AND entity_id = %(id)s ORDER BY at, id;

-- name: web_audit_search
-- Every filter is optional (NULL = any). actor matches as a prefix ("user:" = every user);
-- a bare name also as user:NAME, cli:NAME, worker:NAME and system:NAME (email_rag/core/actors.py).
SELECT * FROM audit_log
 WHERE (%(entity_type)s IS NULL OR entity_type = %(entity_type)s)
   AND (%(entity_id)s IS NULL OR entity_id = %(entity_id)s)
   AND (%(event)s IS NULL OR event = %(event)s)
   AND (%(actor)s IS NULL OR actor LIKE CONCAT(%(actor)s, '%')
        OR actor LIKE CONCAT('user:', %(actor)s, '%') OR actor LIKE CONCAT('cli:', %(actor)s, '%')
        OR actor LIKE CONCAT('worker:', %(actor)s, '%')
        OR actor LIKE CONCAT('system:', %(actor)s, '%'))
   AND (%(since)s IS NULL OR at >= %(since)s)
   AND (%(until)s IS NULL OR at < %(until)s)
 ORDER BY at DESC, id DESC
 LIMIT %(limit)s;

-- name: web_audit_event_names
SELECT DISTINCT event FROM audit_log ORDER BY event;

-- name: web_metrics_mails
SELECT status AS label, COUNT(*) AS n FROM emails GROUP BY status;

-- name: web_metrics_index
SELECT index_status AS label, COUNT(*) AS n FROM emails GROUP BY index_status;

-- name: web_metrics_jobs
SELECT kind, state, COUNT(*) AS n FROM jobs GROUP BY kind, state;

-- name: web_metrics_sends
SELECT status AS label, COUNT(*) AS n FROM send_attempts GROUP BY status;

-- name: web_metrics_drafts
SELECT status AS label, COUNT(*) AS n FROM drafts GROUP BY status;

-- name: web_metrics_oldest_pending_draft
SELECT COALESCE(MAX(TIMESTAMPDIFF(SECOND, e.received_at, NOW(6))), 0) AS age_s
  FROM drafts d JOIN emails e ON e.id = d.email_id
 WHERE d.status IN ('pending_review', 'stale');

-- name: web_metrics_audit_events
-- Audit events counted as Prometheus counters (the audit log is append-only, so they only grow).
SELECT event, COUNT(*) AS n FROM audit_log
 WHERE event IN ('retry_scheduled', 'dead_letter', 'stuck_reset', 'admin_retry',
                 'admin_resolved', 'sent', 'reconciled_sent', 'send_refused', 'send_unknown',
                 'send_deferred', 'send_outcome_unknown', 'sent_copy_failed', 'stale',
                 'fallback_defaults', 'login_failed', 'login_locked', 'database_unavailable')
 GROUP BY event;

-- name: web_metrics_llm_latency
-- LLM attempts (audit event llm_attempt, detail.duration_ms) per task and outcome, with
-- cumulative bucket counts; one scan, summed per task for the histogram in Python.
SELECT task, outcome, COUNT(*) AS n, COUNT(d) AS timed, COALESCE(SUM(d), 0) AS sum_ms,
       SUM(d <= 50) AS le_50, SUM(d <= 100) AS le_100, SUM(d <= 250) AS le_250,
       SUM(d <= 500) AS le_500, SUM(d <= 1000) AS le_1000, SUM(d <= 2500) AS le_2500,
       SUM(d <= 5000) AS le_5000, SUM(d <= 10000) AS le_10000, SUM(d <= 30000) AS le_30000,
       SUM(d <= 60000) AS le_60000
  FROM (SELECT COALESCE(JSON_VALUE(detail, '$.task'), 'unknown') AS task,
               COALESCE(JSON_VALUE(detail, '$.outcome'), 'unknown') AS outcome,
               CAST(JSON_VALUE(detail, '$.duration_ms') AS DOUBLE) AS d
          FROM audit_log WHERE event = 'llm_attempt') x
 GROUP BY task, outcome;

-- name: web_metrics_mailboxes
SELECT name, consecutive_failures, needs_attention,
       UNIX_TIMESTAMP(last_success_at) AS last_success_ts,
       UNIX_TIMESTAMP(failing_since) AS failing_since_ts
  FROM mailboxes ORDER BY name;
