-- The poll command's re-count: what MariaDB holds, counted before and after a poll.

-- name: poll_count_stored
-- Mail rows of one mailbox and the entries a poll creates for them: process_email for new
-- work, index_history for imported history.
SELECT COUNT(*) AS mails,
       (SELECT COUNT(*) FROM jobs j JOIN emails e2 ON e2.id = j.email_id
         WHERE e2.mailbox_id = %(mailbox_id)s
           AND j.kind IN ('process_email', 'index_history')) AS jobs
  FROM emails e
 WHERE e.mailbox_id = %(mailbox_id)s;
