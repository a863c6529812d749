-- Queries of the LLM area (classification step, LLM latency for metrics).

-- name: llm_attempt_latency
-- Recent LLM attempts (newest first) with their duration and outcome, for metrics:
-- params: since (DATETIME), limit.
SELECT at, entity_id AS email_id,
       JSON_VALUE(detail, '$.task') AS task,
       JSON_VALUE(detail, '$.outcome') AS outcome,
       JSON_VALUE(detail, '$.fallback') AS fallback,
       CAST(JSON_VALUE(detail, '$.duration_ms') AS DOUBLE) AS duration_ms,
       JSON_VALUE(detail, '$.prompt_version') AS prompt_version
FROM audit_log
WHERE event = 'llm_attempt' AND at >= %(since)s
ORDER BY at DESC, id DESC
LIMIT %(limit)s

-- name: llm_time_per_mail
-- Seconds of LLM calls per mail and task (the demo's per-mail time).
SELECT entity_id AS email_id, JSON_VALUE(detail, '$.task') AS task, COUNT(*) AS calls,
       SUM(CAST(JSON_VALUE(detail, '$.duration_ms') AS DOUBLE)) / 1000 AS seconds
FROM audit_log
WHERE event = 'llm_attempt' AND entity_type = 'email'
GROUP BY entity_id, JSON_VALUE(detail, '$.task')

-- name: classify_raw_head
-- The start of the raw mail, for the header check of a "no reply" classification
-- (List-Id / List-Unsubscribe): read only then, never sent to the LLM.
SELECT LEFT(raw, 65536) AS head FROM emails WHERE id = %(id)s

-- name: llm_recent_calls
-- The last LLM attempts, newest first (ix_audit_event backwards: bounded by limit): which
-- model and build answered, the outcome and error, and the server's own timings (the status
-- page's model speed). params: limit.
SELECT at, JSON_VALUE(detail, '$.task') AS task, JSON_VALUE(detail, '$.outcome') AS outcome,
       JSON_VALUE(detail, '$.model') AS model, JSON_VALUE(detail, '$.answered_by') AS answered_by,
       JSON_VALUE(detail, '$.runtime') AS runtime, JSON_VALUE(detail, '$.error') AS error,
       CAST(JSON_VALUE(detail, '$.timings.prompt_n') AS DOUBLE) AS prompt_n,
       CAST(JSON_VALUE(detail, '$.timings.prompt_ms') AS DOUBLE) AS prompt_ms,
       CAST(JSON_VALUE(detail, '$.timings.predicted_n') AS DOUBLE) AS predicted_n,
       CAST(JSON_VALUE(detail, '$.timings.predicted_ms') AS DOUBLE) AS predicted_ms
FROM audit_log
WHERE event = 'llm_attempt'
ORDER BY at DESC, id DESC
LIMIT %(limit)s
