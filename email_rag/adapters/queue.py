"""Redis/RQ adapter: carries work, decides nothing.

MariaDB's jobs table is the truth; an RQ job only carries a jobs.id. Its RQ id
is deterministic (``erag-<jobs.id>-<queue>``), so a re-dispatch can ask whether Redis
still knows it, and a duplicate delivery is harmless (the claim in MariaDB
decides).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis
from rq import Queue
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job

from ..core.errors import QueueCallFailedError, QueueCallTimeoutError, QueueUnavailableError

TASK = "email_rag.runtime.tasks.run_job"


def rq_job_id(job_id: int, queue: str, via: str | None = None) -> str:
    """One RQ id per (entry, queue), and per hand-off source.

    A hand-off enqueues the entry on the vector queue while its RQ job on the first
    queue is still running; with one shared id, RQ deleting the finished job
    (result_ttl=0) deleted the hand-off with it and the entry sat in MariaDB until a
    re-dispatch (found by the real two-worker test in tests/e2e). The same holds for
    the hand-BACK to the first queue: the vector worker can finish its steps and hand
    the entry back while the first queue's RQ job (same queue, so same base id) is
    still being cleaned up - seen as lost hand-backs in the two-process worker
    benchmark. So a hand-off carries the queue it came from (``via``)."""
    base = f"erag-{job_id}-{queue}"
    return f"{base}-via-{via}" if via else base


class _RoundTrips:
    n = 0


def _counting(base: type, counter: _RoundTrips) -> type:
    """A connection class that counts what it sends: one send = one round trip (a
    pipeline is one; connecting is a few: HELLO, CLIENT SETINFO, SELECT)."""

    class CountingConnection(base):  # type: ignore[misc, valid-type]
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            counter.n += 1
            super().send_packed_command(command, check_health)

    return CountingConnection


class JobQueue:
    def __init__(self, redis_url: str, job_timeout: int = 900) -> None:
        self.redis_url = redis_url
        self.job_timeout = job_timeout
        self._redis: redis.Redis | None = None
        self._trips = _RoundTrips()

    @property
    def round_trips(self) -> int:
        """Redis round trips of this client so far, RQ's own included (a worker dequeues
        through ``redis``); counted at the socket for the benchmarks, never guessed."""
        return self._trips.n

    @property
    def redis(self) -> redis.Redis:
        if self._redis is None:
            pool = redis.ConnectionPool.from_url(
                self.redis_url, socket_connect_timeout=3, socket_timeout=10
            )
            pool.connection_class = _counting(pool.connection_class, self._trips)
            self._redis = redis.Redis.from_pool(pool)
        return self._redis

    def queue(self, name: str) -> Queue:
        return Queue(name, connection=self.redis, default_timeout=self.job_timeout)

    def ping(self) -> str:
        try:
            info = self.redis.info("server")
        except redis.RedisError as e:
            raise QueueUnavailableError(f"Redis unreachable: {e}") from e
        return str(info.get("redis_version", ""))

    def enqueue(self, items: Iterable[tuple[str, int]]) -> int:
        """Enqueue (queue_name, jobs.id) pairs in one pipeline; returns how many."""
        items = list(items)
        if not items:
            return 0
        try:
            with self.redis.pipeline() as pipe:
                for queue_name, job_id in items:
                    q = self.queue(queue_name)
                    q.enqueue_call(
                        TASK, args=(job_id,), job_id=rq_job_id(job_id, queue_name), pipeline=pipe,
                        result_ttl=0, failure_ttl=3600,
                    )
                pipe.execute()
        except redis.RedisError as e:
            raise QueueUnavailableError(f"enqueue failed, job rows stay queued: {e}") from e
        return len(items)

    def hand_off(self, job_id: int, to_queue: str, from_queue: str) -> None:
        """Enqueue a hand-off of a claimed entry to another queue (its own RQ id, see
        ``rq_job_id``)."""
        try:
            self.queue(to_queue).enqueue_call(
                TASK, args=(job_id,), job_id=rq_job_id(job_id, to_queue, via=from_queue),
                result_ttl=0, failure_ttl=3600)
        except redis.RedisError as e:
            raise QueueUnavailableError(f"hand-off failed, the job row stays queued: {e}") from e

    def is_pending(self, job_id: int, queue: str | None = None) -> bool:
        """True if Redis still holds this job WAITING to be picked up.

        Only called for rows MariaDB says nobody holds (queued, or failed and due).
        An RQ job still marked "started" for such a row belongs to a worker that died
        (RQ notices only minutes later): it counts as missing, so it is enqueued again.
        In the short window between a live worker's dequeue and its claim this sends a
        duplicate delivery, which the claim in MariaDB turns into a no-op.

        ``queue``: the jobs row's queue; without it every queue RQ knows is checked.
        Hand-offs to that queue (from any other queue) count too.
        """
        try:
            known = [q.name for q in Queue.all(connection=self.redis)]
            names = [queue] if queue else known
            for name in names:
                ids = [rq_job_id(job_id, name)]
                ids += [rq_job_id(job_id, name, via=other) for other in known if other != name]
                for rq_id in ids:
                    try:
                        job = Job.fetch(rq_id, connection=self.redis)
                    except NoSuchJobError:
                        continue
                    status = job.get_status(refresh=False)
                    if status in ("queued", "scheduled", "deferred"):
                        return True
        except redis.RedisError as e:
            raise QueueUnavailableError(str(e)) from e
        return False

    def call(self, queue_name: str, func: str, args: tuple[Any, ...], timeout: float,
             poll: float = 0.05) -> Any:
        """Run ``func(*args)`` in a worker of ``queue_name`` and wait for its return value.

        For read-only requests that need a particular worker (``email-rag search`` in
        the process owning the local vector store); no MariaDB row, nothing to lose.
        If no worker starts it within ``timeout`` it expires in Redis and never runs
        later (``QueueCallTimeoutError``); a failure in the worker is
        ``QueueCallFailedError`` with the worker's error.
        """
        import time

        from rq.results import Result

        ttl = max(1, int(timeout + 0.999))
        try:
            job = self.queue(queue_name).enqueue_call(
                func, args=args, ttl=ttl, result_ttl=max(60, ttl), failure_ttl=max(60, ttl),
                timeout=max(ttl, 30))
            deadline = time.monotonic() + timeout
            while True:
                result = job.latest_result()
                if result is not None:
                    if result.type == Result.Type.SUCCESSFUL:
                        return result.return_value
                    raise QueueCallFailedError(
                        f"{func} failed in the worker: {(result.exc_string or '').strip()[-800:]}")
                if time.monotonic() >= deadline:
                    try:
                        got = job.get_status(refresh=True)
                        status = str(getattr(got, "value", got))
                        if status in ("queued", "scheduled", "deferred"):
                            job.cancel()
                    except (NoSuchJobError, InvalidJobOperation):
                        status = "expired unstarted"
                    raise QueueCallTimeoutError(
                        f"no worker on queue {queue_name!r} answered {func} within {timeout:g} s "
                        f"(job status: {status})")
                time.sleep(poll)
        except redis.RedisError as e:
            raise QueueUnavailableError(f"Redis unreachable: {e}") from e

    def depths(self, names: Iterable[str]) -> dict[str, int]:
        try:
            return {n: self.queue(n).count for n in names}
        except redis.RedisError as e:
            raise QueueUnavailableError(str(e)) from e

    def close(self) -> None:
        if self._redis is not None:
            self._redis.close()
            self._redis = None


POLL_TASK = "email_rag.runtime.tasks.poll_mailboxes"
POLL_JOB_ID = "erag-poll"


def enqueue_poll(queue: JobQueue, queue_name: str) -> bool:
    """Ask a worker to poll every mailbox; at most one poll request waits in Redis.

    The mailbox lease in MariaDB is what keeps polls from overlapping; this only
    keeps the scheduler from piling up requests while the workers are busy.
    """
    try:
        try:
            job = Job.fetch(POLL_JOB_ID, connection=queue.redis)
            if job.get_status(refresh=False) in ("queued", "started", "scheduled", "deferred"):
                return False
        except NoSuchJobError:
            pass
        queue.queue(queue_name).enqueue_call(POLL_TASK, job_id=POLL_JOB_ID, result_ttl=0,
                                             failure_ttl=3600, timeout=3600)
    except redis.RedisError as e:
        raise QueueUnavailableError(f"poll request not enqueued: {e}") from e
    return True
