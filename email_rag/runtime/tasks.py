"""RQ task entry points: thin. They load state by id and call the domain.

A queued RQ entry names its function by import path (``email_rag.runtime.tasks.run_job``);
entries enqueued under the earlier top-level module (``workers.tasks.*``) run the same
functions through ``rq_job.TaskJob``."""

from __future__ import annotations

from ..wiring.services import Services
from .job_runner import JobRunner, worker_settings

_runner: JobRunner | None = None


def runner() -> JobRunner:
    """One runner (and one set of services) per worker process, rebuilt after a fork from
    the same kind of services and settings the process was started with."""
    global _runner
    import os

    if _runner is None:
        from ..core.settings import get_settings

        _runner = JobRunner(Services(worker_settings(get_settings())))
    elif _runner.name.rsplit(":", 1)[-1] != str(os.getpid()):
        services = _runner.services
        _runner = JobRunner(type(services)(services.settings))
    return _runner


def run_job(job_id: int) -> str:
    from rq import get_current_job

    current = get_current_job()
    # the queue this delivery came on: the claim runs only entries of that queue
    return runner().run(int(job_id), current.origin if current is not None else None)


def use_services(services: Services, vector_owner: bool = False) -> JobRunner:
    """The ``email-rag worker`` process hands over its services (and the store it opened;
    ``vector_owner``: it runs vector steps without handing the job to itself)."""
    global _runner
    _runner = JobRunner(services, vector_owner=vector_owner)
    return _runner


def search(text: str, mailbox_id: int | None = None, limit: int = 10) -> list[dict]:
    """``email-rag search`` routed to the worker that owns the local vector store."""
    from ..indexing.retrieval import Retriever

    return Retriever(runner().services).search(text, mailbox_id, limit)


def poll_mailboxes() -> dict:
    """The scheduler's periodic poll, run by a worker (never in the scheduler process)."""
    return runner().services.poller().poll().totals
