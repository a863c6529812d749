-- The vector owner check (health): entries that wait for the one worker of the vector queue.

-- name: vector_queue_waiting
-- Due for at least %(grace)s seconds and nobody took them: with no owner running they wait.
SELECT COUNT(*) AS n FROM jobs
 WHERE queue = %(queue)s AND state IN ('queued', 'failed')
   AND next_run_at <= NOW(6) - INTERVAL %(grace)s SECOND;
