-- Hybrid retrieval (issue 27): the lexical side of retrieval is an InnoDB FULLTEXT index
-- over the mail's subject and text, kept by MariaDB in the same transaction as the mail row
-- (no second copy to rebuild per worker, nothing lost on a restart). Queried in boolean
-- mode (optional words and word* prefixes) by `index_lexical` (db/sql/index.sql) and fused
-- with the vector ranking (indexing/retrieval.py, docs/indexing.md).
CREATE FULLTEXT INDEX IF NOT EXISTS ft_email_text ON emails (subject, body_text);
