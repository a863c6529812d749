-- The team's knowledge: articles, their passages, imports and candidates (email_rag/knowledge/).

-- fragment: article_columns
SELECT id, mailbox_id, origin, status, title, language, body, version, content_hash, file_hash,
       source_key, source_root, created_by, updated_by, created_at, updated_at
  FROM knowledge_articles

-- name: knowledge_article_get
@article_columns
 WHERE id = %(id)s;

-- name: knowledge_article_lock
@article_columns
 WHERE id = %(id)s FOR UPDATE;

-- name: knowledge_article_by_source
-- An imported file's or a synced saved reply's article (the natural key), locked.
@article_columns
 WHERE mailbox_key = %(mailbox_key)s AND source_key = %(source_key)s FOR UPDATE;

-- name: knowledge_articles_list
-- Articles of a scope: all (mailbox_key -1), the global ones (0) or a mailbox's own.
SELECT a.id, a.mailbox_id, a.origin, a.status, a.title, a.language, a.version,
       a.content_hash, a.file_hash, a.source_key, a.source_root, a.created_by, a.updated_by,
       a.created_at, a.updated_at,
       (SELECT COUNT(*) FROM knowledge_passages p
         WHERE p.article_id = a.id AND p.version = a.version) AS passages
  FROM knowledge_articles a
 WHERE (%(mailbox_key)s = -1 OR a.mailbox_key = %(mailbox_key)s)
 ORDER BY a.mailbox_key, a.title, a.id
 LIMIT %(limit)s;

-- name: knowledge_articles_of_files
-- The articles imported from files in a scope (a re-import removes those under its root whose
-- file is gone).
SELECT id, source_key FROM knowledge_articles
 WHERE origin = 'file' AND mailbox_key = %(mailbox_key)s;

-- name: knowledge_article_insert
INSERT INTO knowledge_articles (mailbox_id, origin, status, title, language, body, version,
                                content_hash, file_hash, source_key, source_root, created_by,
                                updated_by)
VALUES (%(mailbox_id)s, %(origin)s, 'active', %(title)s, %(language)s, %(body)s, 1,
        %(content_hash)s, %(file_hash)s, %(source_key)s, %(source_root)s, %(by)s, %(by)s);

-- name: knowledge_article_new_version
-- Switches the article to the version whose passages were just written (same transaction).
UPDATE knowledge_articles
   SET title = %(title)s, language = %(language)s, body = %(body)s, version = %(version)s,
       content_hash = %(content_hash)s, file_hash = %(file_hash)s, source_root = %(source_root)s,
       updated_by = %(by)s, updated_at = NOW(6)
 WHERE id = %(id)s AND version = %(version)s - 1;

-- name: knowledge_article_file_hash
-- The file changed but its text did not: only the file's hash is new.
UPDATE knowledge_articles SET file_hash = %(file_hash)s, source_root = %(source_root)s
 WHERE id = %(id)s;

-- name: knowledge_article_set_status
UPDATE knowledge_articles SET status = %(to)s, updated_by = %(by)s, updated_at = NOW(6)
 WHERE id = %(id)s AND status = %(from)s;

-- name: knowledge_article_delete
DELETE FROM knowledge_articles WHERE id = %(id)s;

-- name: knowledge_passages_insert
INSERT INTO knowledge_passages (article_id, version, passage_no, heading, body, vector, embedder)
VALUES (%(article_id)s, %(version)s, %(passage_no)s, %(heading)s, %(body)s, %(vector)s,
        %(embedder)s);

-- name: knowledge_passages_drop_others
-- Passages of any version but the current one (the previous, or a run that died before commit).
DELETE FROM knowledge_passages WHERE article_id = %(article_id)s AND version <> %(version)s;

-- name: knowledge_passages_of_article
SELECT article_id, version, passage_no, heading, body AS text, embedder
  FROM knowledge_passages
 WHERE article_id = %(article_id)s AND version = %(version)s
 ORDER BY passage_no;

-- name: knowledge_search_vectors
-- Every searchable passage's vector in a scope: active articles, current version, global or
-- the mailbox's own (mailbox_key 0: global only).
SELECT p.article_id, p.passage_no, p.vector
  FROM knowledge_passages p
  JOIN knowledge_articles a ON a.id = p.article_id AND a.version = p.version
 WHERE a.status = 'active' AND a.mailbox_key IN (0, %(mailbox_key)s)
   AND p.embedder = %(embedder)s AND p.vector IS NOT NULL;

-- name: knowledge_search_lexical
-- The lexical ranking (FULLTEXT ft_knowledge_passage, boolean mode; the query is built by
-- indexing.retrieval.lexical_query: optional words and prefixes only), best first.
SELECT p.article_id, p.passage_no,
       MATCH(p.heading, p.body) AGAINST (%(q)s IN BOOLEAN MODE) AS score
  FROM knowledge_passages p
  JOIN knowledge_articles a ON a.id = p.article_id AND a.version = p.version
 WHERE MATCH(p.heading, p.body) AGAINST (%(q)s IN BOOLEAN MODE)
   AND a.status = 'active' AND a.mailbox_key IN (0, %(mailbox_key)s)
 ORDER BY score DESC, p.article_id, p.passage_no
 LIMIT %(limit)s;

-- name: knowledge_search_passages
-- The text of the found passages (current version of active articles only).
SELECT p.article_id, p.version, p.passage_no, p.heading, p.body AS text, a.title, a.origin,
       a.language
  FROM knowledge_passages p
  JOIN knowledge_articles a ON a.id = p.article_id AND a.version = p.version
 WHERE a.status = 'active' AND a.id IN ({ids});

-- name: knowledge_import_open
-- The last import of this root and scope that did not complete (resumed by the next run).
SELECT id, root, mailbox_key, status, processed, failed, remaining, removed
  FROM knowledge_imports
 WHERE root = %(root)s AND mailbox_key = %(mailbox_key)s AND status <> 'completed'
 ORDER BY id DESC LIMIT 1 FOR UPDATE;

-- name: knowledge_import_insert
INSERT INTO knowledge_imports (root, mailbox_key, status, started_by)
VALUES (%(root)s, %(mailbox_key)s, 'running', %(by)s);

-- name: knowledge_import_get
SELECT id, root, mailbox_key, status, processed, failed, remaining, removed
  FROM knowledge_imports WHERE id = %(id)s;

-- name: knowledge_import_set_status
-- The counts and status of an import (completed is terminal).
UPDATE knowledge_imports
   SET status = %(status)s, processed = %(processed)s, failed = %(failed)s,
       remaining = %(remaining)s, removed = %(removed)s,
       finished_at = IF(%(status)s = 'running', NULL, NOW(6))
 WHERE id = %(id)s AND status <> 'completed';

-- name: knowledge_import_file_add
INSERT IGNORE INTO knowledge_import_files (import_id, path) VALUES (%(import_id)s, %(path)s);

-- name: knowledge_import_files_retry
-- A resumed import tries its failed files again.
UPDATE knowledge_import_files SET status = 'pending', error = NULL
 WHERE import_id = %(import_id)s AND status = 'failed';

-- name: knowledge_import_files_gone
-- Files planned by an earlier run that are no longer there: nothing to import.
DELETE FROM knowledge_import_files
 WHERE import_id = %(import_id)s AND status = 'pending' AND path NOT IN ({paths});

-- name: knowledge_import_files_clear_pending
-- The folder is empty now: nothing planned is left to import.
DELETE FROM knowledge_import_files WHERE import_id = %(import_id)s AND status = 'pending';

-- name: knowledge_import_files_pending
SELECT path FROM knowledge_import_files
 WHERE import_id = %(import_id)s AND status = 'pending' ORDER BY path;

-- name: knowledge_import_file_done
-- A file's outcome; only a pending file (a file is counted once).
UPDATE knowledge_import_files
   SET status = %(status)s, outcome = %(outcome)s, article_id = %(article_id)s,
       error = %(error)s
 WHERE import_id = %(import_id)s AND path = %(path)s AND status = 'pending';

-- name: knowledge_import_counts
SELECT SUM(status = 'done') AS processed, SUM(status = 'failed') AS failed,
       SUM(status = 'pending') AS remaining
  FROM knowledge_import_files WHERE import_id = %(import_id)s;

-- name: knowledge_import_failures
SELECT path, error FROM knowledge_import_files
 WHERE import_id = %(import_id)s AND status = 'failed' ORDER BY path;

-- name: knowledge_import_lock
-- One import of a root and scope at a time; the lock goes with the connection (a killed
-- import's lock is free again).
SELECT GET_LOCK(%(name)s, 0) AS got;

-- name: knowledge_import_unlock
SELECT RELEASE_LOCK(%(name)s) AS released;

-- name: knowledge_mailbox_id
SELECT id FROM mailboxes WHERE name = %(name)s OR address = %(name)s ORDER BY name = %(name)s DESC LIMIT 1;

-- name: knowledge_saved_replies_all
SELECT id, mailbox_id, title, body FROM saved_replies ORDER BY id;

-- name: knowledge_saved_reply_articles
SELECT id, mailbox_id, source_key FROM knowledge_articles WHERE origin = 'saved_reply';

-- name: knowledge_candidate_source
-- A sent reply and the mail it answered: what a candidate is made of.
SELECT d.id AS draft_id, d.email_id, COALESCE(d.body_final, d.body_draft) AS answer,
       d.language AS draft_language, e.mailbox_id, e.subject, e.body_text, e.from_name,
       e.from_addr, e.language
  FROM drafts d JOIN emails e ON e.id = d.email_id
 WHERE d.id = %(draft_id)s AND d.status = 'sent';

-- name: knowledge_candidates_missing
-- Sent replies without a candidate yet (a proposal missed: caught up, at most limit).
SELECT d.id FROM drafts d
  LEFT JOIN knowledge_candidates c ON c.draft_id = d.id
 WHERE d.status = 'sent' AND c.id IS NULL
 ORDER BY d.id LIMIT %(limit)s;

-- name: knowledge_candidate_insert
INSERT IGNORE INTO knowledge_candidates (mailbox_id, email_id, draft_id, title, question, answer,
                                         language)
VALUES (%(mailbox_id)s, %(email_id)s, %(draft_id)s, %(title)s, %(question)s, %(answer)s,
        %(language)s);

-- name: knowledge_candidates_list
SELECT id, mailbox_id, email_id, draft_id, status, title, question, answer, language, article_id,
       decided_by, created_at, decided_at
  FROM knowledge_candidates
 WHERE status = %(status)s
 ORDER BY id LIMIT %(limit)s;

-- name: knowledge_candidate_lock
SELECT id, mailbox_id, email_id, draft_id, status, title, question, answer, language, article_id,
       decided_by, created_at, decided_at
  FROM knowledge_candidates WHERE id = %(id)s FOR UPDATE;

-- name: knowledge_candidate_edit
UPDATE knowledge_candidates SET title = %(title)s, question = %(question)s, answer = %(answer)s
 WHERE id = %(id)s AND status = 'pending';

-- name: knowledge_candidate_decide
UPDATE knowledge_candidates
   SET status = %(to)s, article_id = %(article_id)s, decided_by = %(by)s, decided_at = NOW(6)
 WHERE id = %(id)s AND status = 'pending';
