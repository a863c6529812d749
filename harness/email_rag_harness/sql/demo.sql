-- The demo's closing summary (email_rag_harness/testing/demo.py).

-- name: demo_summary
SELECT e.id, e.status, e.index_status, e.parse_status, e.category, e.language,
       LEFT(e.subject, 40) AS subject, d.status AS draft, d.check_flags AS flags,
       s.status AS send
  FROM emails e LEFT JOIN drafts d ON d.email_id = e.id AND d.status <> 'superseded'
  LEFT JOIN send_attempts s ON s.draft_id = d.id
 WHERE e.status <> 'history'
 ORDER BY e.id;

-- name: demo_mail_draft
SELECT e.status, d.body_draft, d.sources
  FROM emails e LEFT JOIN drafts d ON d.email_id = e.id AND d.status <> 'superseded'
 WHERE e.message_id = %(message_id)s
 ORDER BY d.version DESC
 LIMIT 1;
