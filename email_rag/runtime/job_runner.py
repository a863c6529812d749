"""The job runner behind every RQ job, and the RQ worker it runs in.

Three things are called "worker"; each has its own name: ``runtime/tasks.py`` is
the RQ entry point (thin: one call into this module), this module is the job
runner (claim, run the kind's handler, record the outcome), and
``email_rag/cli/worker.py`` is the ``email-rag worker`` command that starts an
RQ worker process (``build_rq_worker`` below).

``JobRunner.run(job_id)`` claims the entry in MariaDB, runs the handler of its
kind and records the outcome (done, handed off, failed with a retry time, or
dead). MariaDB outages are handled here: reconnect at once, clear every
service cache, rebuild, wait with backoff while it stays down, then continue
the same job — not counted as a failed attempt, nothing lost.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from rq.timeouts import BaseTimeoutException

from ..core.errors import (
    ClaimLostError,
    DatabaseUnavailableError,
    JobTimedOutError,
    PermanentError,
)
from ..core.records import Job
from ..core.retry import UNEXPECTED, retry_policy
from ..core.settings import Settings
from ..core.states import Actor, JobKind
from ..core.timing import JobHeartbeat
from ..db.audit import AuditEvent
from ..indexing import sync_run as index_sync
from ..ingest import history
from ..jobs.handoff import FINISHED, Finished, Handoff
from ..jobs.store import JobStore
from ..pipeline.contract import StepSpec
from ..pipeline.registry import default_pipeline
from ..privacy import erasure_requests, retention
from ..wiring.services import Services
from .burst import BurstRun
from .rq_job import TaskJob, worker_class

log = logging.getLogger(__name__)

# None: the job runner finishes the entry; FINISHED: the handler did, in its own last
# transaction; a Handoff: the entry moves to another queue
Handler = Callable[[Job, str], Handoff | Finished | None]


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


LOCK_WAIT_S = 50  # InnoDB's default innodb_lock_wait_timeout: the longest a healthy statement waits
READ_TIMEOUT_MARGIN_S = 10


def worker_settings(settings: Settings) -> Settings:
    """The settings of a worker process: its MariaDB connections get a read/write timeout
    (``db_read_timeout`` if set, else ``worker_db_timeout_seconds``, else derived: the
    longest statement a healthy worker runs, a lock wait, plus a margin), so a server or
    link that stops answering fails the statement (reconnect and wait) instead of holding
    the mail until the RQ job timeout."""
    if settings.db_read_timeout:
        return settings
    timeout = settings.worker_db_timeout_seconds or LOCK_WAIT_S + READ_TIMEOUT_MARGIN_S
    return settings.model_copy(update={"db_read_timeout": timeout})


class JobRunner:
    def __init__(self, services: Services, name: str | None = None,
                 pipeline: list[StepSpec] | None = None, vector_owner: bool = False) -> None:
        """``vector_owner``: this process holds the (local) vector store and listens on the
        vector queue, so it runs vector steps of the jobs it holds without a hand-off."""
        self.services = services
        self.name = name or worker_name()
        self.pipeline = pipeline if pipeline is not None else default_pipeline()
        self.vector_owner = vector_owner
        self.policy = retry_policy(services.settings)
        self.outages = 0
        self.results: Counter[str] = Counter()  # what run() returned, for the worker's summary
        self.burst: BurstRun | None = None  # the checkpoint of `worker --burst` (burst.py)
        self._handlers: dict[str, Handler] | None = None

    @property
    def jobs(self) -> JobStore:  # rebuilt from the current connection after a reset
        return self.services.jobs

    def warm_up(self) -> None:
        """Build what the first job would build (handlers, the LLM client, the embedder of
        the vector owner), so that the first job is not seconds slower than the others
        (imports, a local embedding model). Nothing is contacted; a failure here is only
        logged - the job that needs the client reports it."""
        try:
            self.handlers()
            _ = self.services.llm
            if self.vector_owner:
                _ = self.services.embedder
        except Exception as e:  # noqa: BLE001 - the first job will say what is wrong
            log.warning("warm-up of worker %s incomplete: %s", self.name, e)

    def handlers(self) -> dict[str, Handler]:
        if self._handlers is None:
            self._handlers = self._build_handlers()
        return self._handlers

    def _build_handlers(self) -> dict[str, Handler]:
        from ..pipeline.runner import queues

        also = frozenset({queues(self.services.settings)[1]}) if self.vector_owner else frozenset()
        pipeline = self.services.pipeline_runner(self.pipeline, also)

        return {
            JobKind.PROCESS_EMAIL: pipeline.run,
            JobKind.SEND_DRAFT: self.services.send_service().run,
            JobKind.INDEX_SYNC: lambda job, worker: index_sync.run_job(self.services, job, worker),
            JobKind.INDEX_HISTORY: lambda job, worker: history.run_index_job(self.services, job,
                                                                             worker),
            JobKind.RETENTION: lambda job, worker: retention.run_job(self.services, job, worker),
            JobKind.PRIVACY_FORGET: lambda job, worker: erasure_requests.run_job(
                self.services, job, worker),
        }

    def run(self, job_id: int, queue: str | None = None) -> str:
        """Returns what happened: done, handed_off, failed, dead, skipped, lost.

        ``queue``: the queue the delivery came on (None: run in-process, any queue); an
        entry of another queue is not run here (a misrouted delivery is a no-op, which
        re-dispatch repairs: it enqueues the entry on its own queue)."""
        if self.burst is not None:
            self.burst.taking(job_id)
        result = self._run(job_id, queue)
        self.results[result] += 1
        if self.burst is not None:
            self.burst.took(self.results)
        return result

    def _run(self, job_id: int, queue: str | None = None) -> str:
        job: Job | None = None
        while True:
            try:
                if job is None:
                    job = self.jobs.claim(job_id, self.name, queue)
                    if job is None:
                        log.info("job %s not claimable here (done, taken, not due, or not an "
                                 "entry of queue %s): no-op", job_id, queue or "any")
                        return "skipped"
                elif not self.jobs.still_mine(job_id, self.name):
                    return "lost"
                return self._execute(job)
            except DatabaseUnavailableError as e:
                self._wait_for_database(e, job_id)
                if job is None and self.jobs.still_mine(job_id, self.name):
                    # the claim committed but its answer was lost with the connection
                    job = self.jobs.get(job_id)

    def _execute(self, job: Job) -> str:
        handler = self.handlers().get(job.kind)
        try:
            if handler is None:
                raise PermanentError(f"no handler for job kind {job.kind!r}")
            with JobHeartbeat(self.services.coordination, job.id,
                              self.services.settings.stuck_after_seconds, self.name):
                result = handler(job, self.name)
        except DatabaseUnavailableError:
            raise
        except ClaimLostError as e:
            log.warning("%s", e)
            return "lost"
        except Exception as e:  # noqa: BLE001 - every failure is classified by the policy
            if isinstance(e, BaseTimeoutException):  # RQ's job timeout, raised inside the job
                e = JobTimedOutError(f"job timeout: {e}")
            decision = self.jobs.fail(job, self.name, e)
            if decision.reason.startswith(UNEXPECTED):
                log.error("ALARM job %s (%s) stopped on an unexpected %s: %s - not retried; "
                          "fix the cause, then `email-rag failed retry %s`", job.id,
                          job.kind, type(e).__name__, e, job.id, exc_info=e)
            return "failed" if decision.retry else "dead"
        if result is FINISHED:
            return "done"
        if isinstance(result, Handoff):
            if result.recorded or self.jobs.handoff(job, self.name, result.queue,
                                                    result.reason):
                from ..jobs.dispatch import hand_off

                hand_off(self.services, job, result.queue, Actor.WORKER)
            return "handed_off"
        return "done" if self.jobs.finish(job, self.name) else "lost"

    def _wait_for_database(self, error: Exception, job_id: int) -> None:
        """MariaDB was lost during a job: wait a random 0..``db_reconnect_spread`` s (full
        jitter: workers that lost it in the same second - a restart, a KILL - do not come
        back in the same second), then reconnect with backoff; nothing touches MariaDB
        before that wait. Audited: ``database_unavailable`` goes to the spool at once
        (flushed once back), ``database_recovered`` (the wait, its random part
        ``jitter_s``) once back."""
        self.outages += 1
        started = time.monotonic()
        lost = AuditEvent(Actor.WORKER, "job", job_id, "database_unavailable",
                          detail={"error": str(error), "worker": self.name})
        log.error("MariaDB unavailable during job %s (%s): reconnecting, clearing service "
                  "caches; the job waits and is not counted as failed", job_id, error)
        self.services.audit.spool([lost], reason="MariaDB lost")  # kept if we die waiting
        self.services.reset()
        self._handlers = None  # handlers hold clients: rebuild them too
        settings = self.services.settings
        spread = self.services.db.wait_until_available(settings.db_outage_backoff_max,
                                                       spread=settings.db_reconnect_spread)
        waited = round(time.monotonic() - started, 3)
        self.services.audit.record(AuditEvent(
            Actor.WORKER, "job", job_id, "database_recovered",
            detail={"waited_s": waited, "jitter_s": round(spread, 3), "worker": self.name}))
        try:
            self.services.audit.flush_spool()
        except DatabaseUnavailableError:
            pass  # flushed by the next recovery or by the scheduler


def listen_queues(settings: Any, with_vectors: bool) -> list[str]:
    from ..pipeline.runner import queues

    default_q, vector_q = queues(settings)
    history_q = settings.history_queue_name  # index-only history jobs: listened to last
    if vector_q == default_q:
        return [default_q, history_q]
    return [vector_q, default_q, history_q] if with_vectors else [default_q]


def build_rq_worker(services: Services, with_vectors: bool, name: str | None = None) -> Any:
    """An RQ worker on our queues: jobs in its own process or in forked work horses."""
    # the worker owning a local Qdrant folder runs jobs in its own process (a forked
    # work-horse could not open the folder its parent holds)
    owns_local_store = with_vectors and not services.settings.qdrant_url
    simple = services.settings.worker_class == "simple" or owns_local_store
    cls = worker_class(simple)
    queues = [services.queue.queue(n) for n in listen_queues(services.settings, with_vectors)]
    return cls(queues, connection=services.queue.redis, name=name, job_class=TaskJob)
