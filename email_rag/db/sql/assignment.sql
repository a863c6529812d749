-- Who owns a mail on the desk, and who has a draft open (review/assignment.py).

-- name: assign_claim
-- The first agent to open a mail's draft owns it (nothing changes when someone does).
INSERT IGNORE INTO mail_assignments (email_id, user_id, assigned_by)
VALUES (%(email_id)s, %(user_id)s, %(by)s);

-- name: assign_set
INSERT INTO mail_assignments (email_id, user_id, assigned_by)
VALUES (%(email_id)s, %(user_id)s, %(by)s)
ON DUPLICATE KEY UPDATE user_id = VALUES(user_id), assigned_by = VALUES(assigned_by),
                        assigned_at = NOW(6);

-- name: assign_delete
DELETE FROM mail_assignments WHERE email_id = %(email_id)s;

-- name: assign_get
SELECT a.user_id, u.name, a.assigned_by, a.assigned_at
  FROM mail_assignments a JOIN users u ON u.id = a.user_id
 WHERE a.email_id = %(email_id)s;

-- name: assign_get_for_update
SELECT a.user_id, u.name, a.assigned_by, a.assigned_at
  FROM mail_assignments a JOIN users u ON u.id = a.user_id
 WHERE a.email_id = %(email_id)s FOR UPDATE;

-- name: assign_colleagues
-- Who may own a mail of this mailbox: active admins, active staff assigned to it, and
-- staff assigned to no mailbox when they see every mailbox (web_staff_see_unassigned).
SELECT u.id, u.name FROM users u
 WHERE u.disabled = 0
   AND (u.role = 'admin'
        OR EXISTS (SELECT 1 FROM user_mailboxes um
                    WHERE um.user_id = u.id AND um.mailbox_id = %(mailbox_id)s)
        OR (%(see_all)s AND NOT EXISTS (SELECT 1 FROM user_mailboxes um
                                         WHERE um.user_id = u.id)))
 ORDER BY u.name;

-- name: presence_touch
INSERT INTO draft_presence (draft_id, user_id) VALUES (%(draft_id)s, %(user_id)s)
ON DUPLICATE KEY UPDATE seen_at = NOW(6);

-- name: presence_others
-- Who else has had this draft open lately (the collision warning).
SELECT u.name, p.seen_at, TIMESTAMPDIFF(SECOND, p.seen_at, NOW(6)) AS ago_s
  FROM draft_presence p JOIN users u ON u.id = p.user_id
 WHERE p.draft_id = %(draft_id)s AND p.user_id <> %(user_id)s
   AND p.seen_at > NOW(6) - INTERVAL %(window_s)s SECOND
 ORDER BY p.seen_at DESC;

-- name: presence_leave
DELETE FROM draft_presence WHERE draft_id = %(draft_id)s AND user_id = %(user_id)s;

-- name: presence_of_drafts
-- Who else has these drafts open (the queue's marker).
SELECT p.draft_id, u.name
  FROM draft_presence p JOIN users u ON u.id = p.user_id
 WHERE p.draft_id IN ({ids}) AND p.user_id <> %(user_id)s
   AND p.seen_at > NOW(6) - INTERVAL %(window_s)s SECOND
 ORDER BY p.draft_id, u.name;
