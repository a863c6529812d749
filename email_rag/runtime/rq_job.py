"""The RQ job class of our workers: entries queued under a retired task name still run.

An RQ entry names its function by import path and keeps that name in Redis until a
worker runs it. The task entry points were a top-level module ``workers.tasks`` before
they moved into the package (``email_rag.runtime.tasks``); an entry enqueued under the
old name by a process of the earlier version (or by re-dispatch just before an upgrade)
runs the same function under its new name. No ``workers`` package is installed.

| situation | what runs |
|---|---|
| entry names ``email_rag.runtime.tasks.X`` | that function |
| entry names a retired ``workers.tasks.X`` of ``RENAMED`` | ``email_rag.runtime.tasks.X`` |
| entry names anything else | RQ's own lookup (an unknown name fails the entry as before) |
"""

from __future__ import annotations

from typing import Any

from rq.job import Job
from rq.utils import import_attribute

TASKS_MODULE = "email_rag.runtime.tasks"
RENAMED = {f"workers.tasks.{name}": f"{TASKS_MODULE}.{name}"
           for name in ("run_job", "poll_mailboxes", "search")}


class TaskJob(Job):
    @property
    def func(self) -> Any:
        name = self.func_name
        if name in RENAMED and self.instance is None:
            return import_attribute(RENAMED[name])
        return super().func
