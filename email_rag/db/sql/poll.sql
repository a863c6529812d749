-- The poll command's re-count: what MariaDB holds, counted before and after a poll.

-- name: poll_count_stored
-- Mail rows of the named mailboxes (a comma-separated list) and the entries a poll creates
-- for them: process_email for new work, index_history for imported history.
SELECT COUNT(*) AS mails,
       (SELECT COUNT(*) FROM jobs j JOIN emails e2 ON e2.id = j.email_id
          JOIN mailboxes m2 ON m2.id = e2.mailbox_id
         WHERE FIND_IN_SET(m2.name, %(names)s) AND j.kind IN ('process_email', 'index_history')) AS jobs
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE FIND_IN_SET(m.name, %(names)s);
