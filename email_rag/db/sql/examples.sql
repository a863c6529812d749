-- The team's labelled examples (email_rag.db.examples).

-- name: examples_mail_labels
-- A mail's labels and text, and the embedder of its example's vector (NULL: no example yet,
-- or one without vector).
SELECT e.id, e.mailbox_id, e.subject, e.body_text, e.category, e.priority, e.needs_reply,
       IF(x.vector IS NULL, NULL, x.embedder) AS vector_of
  FROM emails e LEFT JOIN labelled_examples x ON x.email_id = e.id
 WHERE e.id = %(id)s;

-- name: examples_upsert
-- One example per mail: a later confirmation (a correction after an approval) replaces the
-- labels; a vector is kept unless a new one was made.
INSERT INTO labelled_examples (mailbox_id, email_id, source, category, priority, needs_reply,
                               embedder, vector)
VALUES (%(mailbox_id)s, %(email_id)s, %(source)s, %(category)s, %(priority)s, %(needs_reply)s,
        %(embedder)s, %(vector)s)
ON DUPLICATE KEY UPDATE source = VALUES(source), category = VALUES(category),
       priority = VALUES(priority), needs_reply = VALUES(needs_reply),
       embedder = COALESCE(VALUES(embedder), embedder), vector = COALESCE(VALUES(vector), vector),
       updated_at = CURRENT_TIMESTAMP(6);

-- name: examples_version
SELECT COUNT(*) AS n, MAX(id) AS max_id, MAX(updated_at) AS changed
  FROM labelled_examples WHERE mailbox_id = %(mailbox_id)s;

-- name: examples_state
-- examples_version and whether examples_unembedded would find any, in one statement (the
-- classify step asks both for every mail; the examples are embedded only when it says so).
SELECT COUNT(*) AS n, MAX(x.id) AS max_id, MAX(x.updated_at) AS changed,
       EXISTS (SELECT 1 FROM labelled_examples u JOIN emails e ON e.id = u.email_id
                WHERE u.mailbox_id = %(mailbox_id)s
                  AND (u.vector IS NULL OR u.embedder <> %(embedder)s)
                  AND e.parse_status <> 'pending') AS unembedded
  FROM labelled_examples x WHERE x.mailbox_id = %(mailbox_id)s;

-- name: examples_of_mailbox
SELECT id, mailbox_id, email_id, source, category, priority, needs_reply, embedder, vector
  FROM labelled_examples WHERE mailbox_id = %(mailbox_id)s ORDER BY id;

-- name: examples_unembedded
-- Examples without a vector of the current embedder, with the text to embed (a history
-- mail only once its index job parsed it: before, it has no text).
SELECT x.id, e.subject, e.body_text
  FROM labelled_examples x JOIN emails e ON e.id = x.email_id
 WHERE x.mailbox_id = %(mailbox_id)s AND (x.vector IS NULL OR x.embedder <> %(embedder)s)
   AND e.parse_status <> 'pending'
 ORDER BY x.id LIMIT %(limit)s;

-- name: examples_unembedded_of_mails
-- examples_unembedded_of_mail for a batch of indexed mails: their own examples, and those
-- of the mails they reply to (by Message-ID in the same mailboxes).
SELECT x.id, e.subject, e.body_text
  FROM labelled_examples x JOIN emails e ON e.id = x.email_id
 WHERE x.email_id IN ({ids}) AND (x.vector IS NULL OR x.embedder <> %(embedder)s)
   AND e.parse_status <> 'pending'
UNION
SELECT x.id, e.subject, e.body_text
  FROM emails e JOIN labelled_examples x ON x.email_id = e.id
 WHERE e.mailbox_id IN ({boxes}) AND e.message_id IN ({mids})
   AND (x.vector IS NULL OR x.embedder <> %(embedder)s) AND e.parse_status <> 'pending';

-- name: examples_unembedded_of_mail
-- The same for one indexed mail: its own example, and the example of the mail it replies
-- to (our reply from Sent indexed after the question it answers).
SELECT x.id, e.subject, e.body_text
  FROM labelled_examples x JOIN emails e ON e.id = x.email_id
 WHERE x.email_id = %(id)s AND (x.vector IS NULL OR x.embedder <> %(embedder)s)
   AND e.parse_status <> 'pending'
UNION
SELECT x.id, e.subject, e.body_text
  FROM emails e JOIN labelled_examples x ON x.email_id = e.id
 WHERE e.mailbox_id = %(mailbox_id)s AND e.message_id = %(in_reply_to)s
   AND (x.vector IS NULL OR x.embedder <> %(embedder)s) AND e.parse_status <> 'pending';

-- name: examples_set_vector_of_mail
-- The vector of the example a person's action stored, made after the action's commit
-- (examples.embed_recorded).
UPDATE labelled_examples SET embedder = %(embedder)s, vector = %(vector)s
 WHERE email_id = %(email_id)s;

-- name: examples_record_history
-- The solved cases of the imported history ({ids}) as examples: an answered inbound
-- history mail, needs_reply = 1 (our reply proves it), category and priority unknown.
-- A person's example of the same mail is never replaced (the key exists: nothing changes).
INSERT INTO labelled_examples (mailbox_id, email_id, source, category, priority, needs_reply)
SELECT mailbox_id, id, 'history', NULL, NULL, 1 FROM emails
 WHERE id IN ({ids}) AND status = 'history' AND direction = 'in' AND answered_via IS NOT NULL
ON DUPLICATE KEY UPDATE labelled_examples.id = labelled_examples.id;

-- name: examples_set_vector
UPDATE labelled_examples SET embedder = %(embedder)s, vector = %(vector)s WHERE id = %(id)s;

-- name: examples_texts
SELECT id, subject, LEFT(body_text, %(chars)s) AS body FROM emails
 WHERE FIND_IN_SET(id, %(ids)s);

-- name: examples_mail_sources
SELECT category, priority, needs_reply, language, classification_sources FROM emails
 WHERE id = %(id)s;
