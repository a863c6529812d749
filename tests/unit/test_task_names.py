"""The RQ task names: the ones we enqueue live in the package, and every retired name maps
to one of them (email_rag/runtime/rq_job.py; the real-worker proof is
tests/e2e/test_retired_task_names.py)."""

from __future__ import annotations

import redis
from rq.job import Job
from rq.utils import import_attribute

from email_rag.adapters.queue import POLL_TASK, TASK
from email_rag.runtime import tasks
from email_rag.runtime.rq_job import RENAMED, TaskJob


def test_the_enqueued_names_are_the_package_functions_and_the_old_names_map_to_them():
    assert import_attribute(TASK) is tasks.run_job
    assert import_attribute(POLL_TASK) is tasks.poll_mailboxes
    assert {TASK, POLL_TASK} <= set(RENAMED.values())
    for old, new in RENAMED.items():
        assert old.startswith("workers.tasks.")
        assert import_attribute(new) is getattr(tasks, old.rpartition(".")[2])


def test_a_job_of_an_old_name_resolves_to_the_moved_function_and_others_as_before():
    connection = redis.Redis()  # not contacted: nothing is saved or fetched
    old = TaskJob.create("workers.tasks.run_job", args=(1,), connection=connection)
    assert old.func is tasks.run_job
    assert Job.create("workers.tasks.run_job", args=(1,), connection=connection).func_name \
        == "workers.tasks.run_job"  # what Redis keeps
    new = TaskJob.create("email_rag.runtime.tasks.search", args=("x",), connection=connection)
    assert new.func is tasks.search
