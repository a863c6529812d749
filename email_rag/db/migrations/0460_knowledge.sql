-- The team's knowledge as a source of drafts (issue 41; email_rag/knowledge/, docs/knowledge.md).
-- An article: a file imported by `email-rag knowledge import`, a page written in the web, a
-- saved reply kept in sync, or an approved case. mailbox_id NULL: every mailbox's; else that
-- mailbox's only. version counts content changes (content_hash); file_hash is the hash of the
-- source file as last imported (a file unchanged since then leaves a web edit alone).
-- mailbox_key and source_key make the natural key of an imported file / synced saved reply.
CREATE TABLE IF NOT EXISTS knowledge_articles (
  id INT AUTO_INCREMENT PRIMARY KEY,
  mailbox_id INT NULL,
  mailbox_key INT AS (COALESCE(mailbox_id, 0)) PERSISTENT,
  origin VARCHAR(20) NOT NULL,
  status VARCHAR(20) NOT NULL DEFAULT 'active',
  title VARCHAR(300) NOT NULL,
  language VARCHAR(8) NULL,
  body MEDIUMTEXT NOT NULL,
  version INT NOT NULL DEFAULT 1,
  content_hash CHAR(64) NOT NULL,
  file_hash CHAR(64) NULL,
  source_key VARCHAR(700) NULL,
  source_root VARCHAR(700) NULL,
  created_by VARCHAR(190) NOT NULL,
  updated_by VARCHAR(190) NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY ux_knowledge_source (mailbox_key, source_key),
  KEY ix_knowledge_scope (status, mailbox_id),
  CONSTRAINT fk_ka_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- An article's passages per version: a search joins on the article's current version, so the
-- passages of a new version are invisible until the same transaction switches the version.
-- vector: float32 little-endian, embedder: what produced it (NULL: no vector).
CREATE TABLE IF NOT EXISTS knowledge_passages (
  article_id INT NOT NULL,
  version INT NOT NULL,
  passage_no INT NOT NULL,
  heading VARCHAR(600) NOT NULL,
  body TEXT NOT NULL,
  vector BLOB NULL,
  embedder VARCHAR(100) NULL,
  PRIMARY KEY (article_id, version, passage_no),
  FULLTEXT KEY ft_knowledge_passage (heading, body),
  CONSTRAINT fk_kp_article FOREIGN KEY (article_id) REFERENCES knowledge_articles (id)
    ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- An import run of a folder or file (the checkpoint): its files and their outcome.
-- status: running, completed, failed, interrupted (knowledge/importer.py ImportStatus).
CREATE TABLE IF NOT EXISTS knowledge_imports (
  id INT AUTO_INCREMENT PRIMARY KEY,
  root VARCHAR(700) NOT NULL,
  mailbox_key INT NOT NULL DEFAULT 0,
  status VARCHAR(20) NOT NULL,
  processed INT NOT NULL DEFAULT 0,
  failed INT NOT NULL DEFAULT 0,
  remaining INT NOT NULL DEFAULT 0,
  removed INT NOT NULL DEFAULT 0,
  started_by VARCHAR(190) NOT NULL,
  started_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  finished_at DATETIME(6) NULL,
  KEY ix_knowledge_import_root (root(190), mailbox_key, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- status: pending, done (imported, unchanged or skipped), failed (error: why, never the text).
CREATE TABLE IF NOT EXISTS knowledge_import_files (
  import_id INT NOT NULL,
  path VARCHAR(700) NOT NULL,
  status VARCHAR(20) NOT NULL DEFAULT 'pending',
  outcome VARCHAR(20) NULL,
  article_id INT NULL,
  error VARCHAR(1000) NULL,
  PRIMARY KEY (import_id, path),
  CONSTRAINT fk_kif_import FOREIGN KEY (import_id) REFERENCES knowledge_imports (id)
    ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- A sent reply proposed as knowledge (knowledge/candidates.py): question and answer with
-- personal data removed; status pending, approved (article_id), dropped. email_id: the mail
-- answered (erasure deletes its candidates with it).
CREATE TABLE IF NOT EXISTS knowledge_candidates (
  id INT AUTO_INCREMENT PRIMARY KEY,
  mailbox_id INT NOT NULL,
  email_id BIGINT NULL,
  draft_id BIGINT NULL,
  status VARCHAR(20) NOT NULL DEFAULT 'pending',
  title VARCHAR(300) NOT NULL,
  question TEXT NOT NULL,
  answer TEXT NOT NULL,
  language VARCHAR(8) NULL,
  article_id INT NULL,
  decided_by VARCHAR(190) NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  decided_at DATETIME(6) NULL,
  UNIQUE KEY ux_candidate_draft (draft_id),
  KEY ix_candidate_status (status, mailbox_id),
  KEY ix_candidate_email (email_id),
  CONSTRAINT fk_kc_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
