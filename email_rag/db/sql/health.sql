-- `email-rag status` and the web status page (email_rag/ops/health.py).

-- Mails, index states and sends are counted by the metrics queries (web_metrics_mails,
-- web_metrics_index, web_metrics_sends): one query per count.
-- name: health_jobs_by_state
SELECT state AS label, COUNT(*) AS n FROM jobs GROUP BY state;

-- name: health_mailboxes
-- alarm: no successful poll for alarm_after seconds, or the mailbox needs a human;
-- lease_expired: the lease (an `email-rag idle` process or a poll) is no longer held.
SELECT name, consecutive_failures, needs_attention, last_success_at, failing_since,
       backoff_until, last_error, lease_owner, lease_until,
       (COALESCE(last_success_at, created_at) < NOW(6) - INTERVAL %(alarm_after)s SECOND
        OR needs_attention = 1) AS alarm, (lease_until < NOW(6)) AS lease_expired
  FROM mailboxes ORDER BY name;
