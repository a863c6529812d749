"""Entries queued under the retired task names (``workers.tasks.*``: the RQ entry points
before they moved into email_rag/runtime/tasks.py) run in the real worker, through real RQ
and Redis, with no ``workers`` package installed (email_rag/runtime/rq_job.py)."""

from __future__ import annotations

import importlib.util

import redis
from rq import Queue
from rq.job import Job

from email_rag.adapters.queue import rq_job_id
from tests.e2e.test_pipeline_processes import NEWSLETTER, SUPPORT, mail_status, stack  # noqa: F401
from tests.helpers import run_cli


def test_entries_queued_under_the_old_names_run_in_the_real_worker(stack, db, settings):
    """GIVEN a stored support mail whose queue entry sits in Redis as an RQ job of the old
    ``workers.tasks.run_job``, and a periodic poll queued as the old
    ``workers.tasks.poll_mailboxes`` with a newsletter waiting in the mailbox
    WHEN the real ``email-rag worker --with-vectors --burst`` runs what is queued
    THEN both RQ jobs finished (still named by the old function): the support mail has its
    draft, its entry is done, and the poll stored the newsletter, which ended as no_reply."""
    assert importlib.util.find_spec("workers") is None  # no shim package is installed
    stack.mailbox.append(SUPPORT)
    polled = run_cli("poll", "--once", env_extra=stack.env)
    assert polled.returncode == 0, polled.stdout + polled.stderr
    r = redis.Redis.from_url(settings.redis_url)
    q = Queue(settings.queue_name, connection=r)
    assert q.count == 1
    q.empty()  # the poll enqueued the entry under the new name: put it back under the old one
    job_id = db.fetchone("SELECT id FROM jobs WHERE kind = 'process_email'")["id"]
    old_run = q.enqueue_call("workers.tasks.run_job", args=(job_id,), result_ttl=600,
                             job_id=rq_job_id(job_id, settings.queue_name))
    stack.mailbox.append(NEWSLETTER)
    old_poll = q.enqueue_call("workers.tasks.poll_mailboxes", result_ttl=600)

    worker = stack.start("worker", "--with-vectors", "--burst")
    assert worker.wait(300) == 0, (stack.log / "worker.log").read_text()[-3000:]

    ran = Job.fetch(old_run.id, connection=r)
    assert ran.func_name == "workers.tasks.run_job" and ran.get_status() == "finished"
    assert ran.return_value() in {"done", "handed_off"}  # the vector steps: a hand-off
    assert mail_status(db, "<order-1@customer.example>") == "draft_ready"
    assert db.fetchone("SELECT state FROM jobs WHERE id = %(id)s", {"id": job_id})["state"] == "done"
    poll = Job.fetch(old_poll.id, connection=r)
    assert poll.func_name == "workers.tasks.poll_mailboxes" and poll.get_status() == "finished"
    assert poll.return_value()["new"] == 1
    assert mail_status(db, "<news-1@shop.example>") == "no_reply"
