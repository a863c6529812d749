-- `email-rag status` and the web status page (email_rag/ops/health.py).

-- name: health_jobs_by_state
SELECT state, COUNT(*) AS n FROM jobs GROUP BY state;

-- name: health_mails_by_status
SELECT status, COUNT(*) AS n FROM emails GROUP BY status;

-- name: health_mails_by_index
SELECT index_status, COUNT(*) AS n FROM emails GROUP BY index_status;

-- name: health_sends_by_status
SELECT status, COUNT(*) AS n FROM send_attempts GROUP BY status;

-- name: health_mailboxes
-- alarm: no successful poll for alarm_after seconds, or the mailbox needs a human;
-- lease_expired: the lease (an `email-rag idle` process or a poll) is no longer held.
SELECT *, (COALESCE(last_success_at, created_at) < NOW(6) - INTERVAL %(alarm_after)s SECOND
           OR needs_attention = 1) AS alarm, (lease_until < NOW(6)) AS lease_expired
  FROM mailboxes ORDER BY name;
