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

-- name: web_throttle_get_for_update
SELECT failures, lockouts,
       IF(locked_until > NOW(6),
          GREATEST(CEIL(TIMESTAMPDIFF(MICROSECOND, NOW(6), locked_until) / 1e6), 1), 0) AS locked_s
  FROM login_throttle WHERE name_key = %(key)s AND client = %(client)s FOR UPDATE;

-- name: web_throttle_failed
-- One more failed login for (name, client); at the limit a lock that doubles with every
-- further lock (capped), and the counter restarts. SET runs left to right with updated
-- values: locked_until and lockouts read the old failures/lockouts, so they come first.
INSERT INTO login_throttle (name_key, client, failures, lockouts, locked_until)
VALUES (%(key)s, %(client)s, IF(1 >= %(max)s, 0, 1), IF(1 >= %(max)s, 1, 0),
        IF(1 >= %(max)s, NOW(6) + INTERVAL %(lock_s)s SECOND, NULL))
ON DUPLICATE KEY UPDATE
  locked_until = IF(failures + 1 >= %(max)s,
                    NOW(6) + INTERVAL LEAST(%(lock_s)s * POW(2, lockouts), %(lock_max)s) SECOND,
                    locked_until),
  lockouts = IF(failures + 1 >= %(max)s, lockouts + 1, lockouts),
  failures = IF(failures + 1 >= %(max)s, 0, failures + 1);

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
