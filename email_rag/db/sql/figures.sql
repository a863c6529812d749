-- The review figures (email_rag.db.figures): written in the transaction of the staff action
-- or the classify checkpoint they count; read by the status page and /metrics.

-- name: figures_draft_decided
-- A draft's decision (one row per draft; a draft approved again after the relay refused it
-- or it bounced keeps the latest decision). Mailbox and category: the mail's, now.
INSERT INTO draft_reviews (draft_id, email_id, mailbox_id, category, outcome, edit_distance,
                           week, decided_at, agent)
SELECT d.id, e.id, e.mailbox_id, COALESCE(e.category, ''), %(outcome)s, %(edit_distance)s,
       DATE(UTC_TIMESTAMP()) - INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY, UTC_TIMESTAMP(6),
       %(agent)s
  FROM drafts d JOIN emails e ON e.id = d.email_id
 WHERE d.id = %(draft_id)s
ON DUPLICATE KEY UPDATE category = VALUES(category), outcome = VALUES(outcome),
       edit_distance = VALUES(edit_distance), week = VALUES(week),
       decided_at = VALUES(decided_at), agent = VALUES(agent);

-- name: figures_classified
-- The classify step's checkpoint: the category it gave. Classified again (an admin retry)
-- -> the new category and week; a correction made before stays counted.
INSERT INTO classified_mails (email_id, mailbox_id, category, week, classified_at)
SELECT e.id, e.mailbox_id, %(category)s,
       DATE(UTC_TIMESTAMP()) - INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY, UTC_TIMESTAMP(6)
  FROM emails e WHERE e.id = %(email_id)s
ON DUPLICATE KEY UPDATE category = VALUES(category), week = VALUES(week),
       classified_at = VALUES(classified_at);

-- name: figures_corrected
-- Staff corrected the mail's classification: counted once per mail, in the week and under
-- the category of its classification.
UPDATE classified_mails SET corrected = 1, corrected_at = UTC_TIMESTAMP(6)
 WHERE email_id = %(email_id)s AND corrected = 0;

-- name: figures_drafts_by_week
-- Draft decisions per mailbox, category, week and outcome, the newest weeks first.
SELECT m.name AS mailbox, r.category, r.week, r.outcome, COUNT(*) AS n,
       COALESCE(SUM(r.edit_distance), 0) AS distance_sum
  FROM draft_reviews r JOIN mailboxes m ON m.id = r.mailbox_id
 WHERE r.week >= DATE(UTC_TIMESTAMP()) - INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY
                 - INTERVAL %(weeks)s WEEK
 GROUP BY m.name, r.category, r.week, r.outcome;

-- name: figures_classified_by_week
SELECT m.name AS mailbox, c.category, c.week, COUNT(*) AS classified,
       COALESCE(SUM(c.corrected), 0) AS corrected
  FROM classified_mails c JOIN mailboxes m ON m.id = c.mailbox_id
 WHERE c.week >= DATE(UTC_TIMESTAMP()) - INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY
                 - INTERVAL %(weeks)s WEEK
 GROUP BY m.name, c.category, c.week;

-- name: figures_drafts_total
-- Since the beginning (the counters of /metrics).
SELECT m.name AS mailbox, r.category, r.outcome, COUNT(*) AS n,
       COALESCE(SUM(r.edit_distance), 0) AS distance_sum
  FROM draft_reviews r JOIN mailboxes m ON m.id = r.mailbox_id
 GROUP BY m.name, r.category, r.outcome;

-- name: figures_classified_total
SELECT m.name AS mailbox, c.category, COUNT(*) AS classified,
       COALESCE(SUM(c.corrected), 0) AS corrected
  FROM classified_mails c JOIN mailboxes m ON m.id = c.mailbox_id
 GROUP BY m.name, c.category;

-- The reports page (figures.report): decisions and sends per week and, as asked, per mailbox
-- and/or agent, over this week and the %(weeks)s before it (index range reads on the week
-- and on send_attempts.sent_at).

-- name: figures_drafts_report
SELECT r.week, IF(%(by_mailbox)s, m.name, '') AS mailbox, IF(%(by_agent)s, r.agent, '') AS agent,
       r.outcome, COUNT(*) AS n, COALESCE(SUM(r.edit_distance), 0) AS distance_sum
  FROM draft_reviews r JOIN mailboxes m ON m.id = r.mailbox_id
 WHERE r.week >= DATE(UTC_TIMESTAMP()) - INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY
                 - INTERVAL %(weeks)s WEEK
 GROUP BY 1, 2, 3, 4;

-- name: figures_replies_report
-- Each reply the relay accepted: first response = from when the customer sent the mail
-- (the queue's waiting time) to the relay's acceptance; time to send = from the approval to
-- it; due met = accepted by the mail's due time (service levels). Medians per group: the
-- middle row (or the mean of the two middle rows) of each group's order, by ROW_NUMBER.
-- Driven by the sends of the weeks asked for (STRAIGHT_JOIN: left to itself the optimizer
-- may start from the mailboxes and read every mail).
SELECT week, mailbox, agent, MAX(n) AS sent,
       AVG(IF(r1 IN (FLOOR((n + 1) / 2), CEIL((n + 1) / 2)), first_s, NULL)) AS first_p50,
       AVG(first_s) AS first_mean,
       AVG(IF(r2 IN (FLOOR((n + 1) / 2), CEIL((n + 1) / 2)), send_s, NULL)) AS send_p50,
       SUM(with_due) AS with_due, SUM(due_met) AS due_met
  FROM (SELECT x.*,
               ROW_NUMBER() OVER (PARTITION BY week, mailbox, agent ORDER BY first_s) AS r1,
               ROW_NUMBER() OVER (PARTITION BY week, mailbox, agent ORDER BY send_s) AS r2,
               COUNT(*) OVER (PARTITION BY week, mailbox, agent) AS n
          FROM (SELECT DATE(s.sent_at) - INTERVAL WEEKDAY(s.sent_at) DAY AS week,
                       IF(%(by_mailbox)s, m.name, '') AS mailbox,
                       IF(%(by_agent)s, COALESCE(d.approved_by, ''), '') AS agent,
                       GREATEST(TIMESTAMPDIFF(SECOND, LEAST(COALESCE(e.sent_at, e.received_at),
                                                            e.received_at), s.sent_at), 0) AS first_s,
                       GREATEST(TIMESTAMPDIFF(SECOND, d.approved_at, s.sent_at), 0) AS send_s,
                       e.due_at IS NOT NULL AS with_due,
                       e.due_at IS NOT NULL AND s.sent_at <= e.due_at AS due_met
                  FROM send_attempts s STRAIGHT_JOIN drafts d ON d.id = s.draft_id
                  STRAIGHT_JOIN emails e ON e.id = d.email_id
                  STRAIGHT_JOIN mailboxes m ON m.id = e.mailbox_id
                 WHERE s.sent_at >= DATE(UTC_TIMESTAMP()) - INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY
                                    - INTERVAL %(weeks)s WEEK
                   AND s.status = 'sent') x) y
 GROUP BY week, mailbox, agent;
