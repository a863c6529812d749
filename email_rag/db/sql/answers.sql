-- Saved replies, mailbox signatures, internal notes and their @mentions
-- (review/answers.py, review/notes.py).

-- name: answers_mailboxes
SELECT id, name FROM mailboxes ORDER BY name;

-- name: answers_mailbox_name
SELECT name FROM mailboxes WHERE id = %(mailbox_id)s;

-- name: saved_replies_of_mailbox
SELECT id, mailbox_id, title, body, version, created_by, updated_by, created_at, updated_at
  FROM saved_replies WHERE mailbox_id = %(mailbox_id)s
 ORDER BY title, id;

-- name: saved_reply_get
SELECT id, mailbox_id, title, body, version, created_by, updated_by, created_at, updated_at
  FROM saved_replies WHERE id = %(id)s;

-- name: saved_reply_insert
INSERT INTO saved_replies (mailbox_id, title, body, created_by, updated_by)
VALUES (%(mailbox_id)s, %(title)s, %(body)s, %(by)s, %(by)s);

-- name: saved_reply_update
-- Only the version the admin edited: a reply changed meanwhile is not overwritten.
UPDATE saved_replies
   SET title = %(title)s, body = %(body)s, version = version + 1, updated_by = %(by)s,
       updated_at = NOW(6)
 WHERE id = %(id)s AND version = %(version)s;

-- name: saved_reply_delete
DELETE FROM saved_replies WHERE id = %(id)s;

-- name: signature_get
SELECT mailbox_id, body, updated_by, updated_at FROM mailbox_signatures
 WHERE mailbox_id = %(mailbox_id)s;

-- name: signature_set
INSERT INTO mailbox_signatures (mailbox_id, body, updated_by)
VALUES (%(mailbox_id)s, %(body)s, %(by)s)
ON DUPLICATE KEY UPDATE body = VALUES(body), updated_by = VALUES(updated_by),
                        updated_at = NOW(6);

-- name: signature_delete
DELETE FROM mailbox_signatures WHERE mailbox_id = %(mailbox_id)s;

-- name: answers_mail_facts
-- What a saved reply's placeholders may be filled from: the mail's sender and text.
SELECT id, mailbox_id, from_name, from_addr, subject, body_text
  FROM emails WHERE id = %(id)s;

-- name: note_insert
INSERT INTO mail_notes (email_id, user_id, author, body)
VALUES (%(email_id)s, %(user_id)s, %(author)s, %(body)s);

-- name: mention_insert
INSERT IGNORE INTO note_mentions (note_id, user_id, email_id)
VALUES (%(note_id)s, %(user_id)s, %(email_id)s);

-- name: notes_of_mail
-- A mail's notes in time order, with whom each one mentions.
SELECT n.id, n.author, n.body, n.created_at,
       (SELECT GROUP_CONCAT(u.name ORDER BY u.name SEPARATOR ' ')
          FROM note_mentions nm JOIN users u ON u.id = nm.user_id
         WHERE nm.note_id = n.id) AS mentioned
  FROM mail_notes n
 WHERE n.email_id = %(email_id)s
 ORDER BY n.created_at, n.id;

-- name: mentions_mark_read
-- The user opened the mail: its mentions of them are read.
UPDATE note_mentions SET read_at = NOW(6)
 WHERE user_id = %(user_id)s AND email_id = %(email_id)s AND read_at IS NULL;

-- name: mentions_unread_count
-- Unread mentions of a user, per mailbox (the caller keeps the mailboxes the user sees).
SELECT e.mailbox_id, COUNT(*) AS n
  FROM note_mentions nm JOIN emails e ON e.id = nm.email_id
 WHERE nm.user_id = %(user_id)s AND nm.read_at IS NULL
 GROUP BY e.mailbox_id;

-- name: mentions_of_user
-- A user's mentions, unread first, then the latest read ones.
SELECT nm.note_id, nm.email_id, nm.read_at, n.author, n.created_at, e.mailbox_id,
       e.subject, m.name AS mailbox
  FROM note_mentions nm
  JOIN mail_notes n ON n.id = nm.note_id
  JOIN emails e ON e.id = nm.email_id
  JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE nm.user_id = %(user_id)s
 ORDER BY nm.read_at IS NOT NULL, COALESCE(nm.read_at, n.created_at) DESC, nm.note_id DESC
 LIMIT %(limit)s;
