"""The RQ classes of our workers: the job class and the worker classes.

The job class: entries queued under a retired task name still run.

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

The worker classes: a warm shutdown (SIGTERM) ends within about a second of the job in
hand. RQ listens for commands in a pubsub thread that reads for up to 60 s at a time;
stopping, the worker unsubscribes and redis-py then waits for that thread, which, having
just read the confirmation of the unsubscription, first waits a whole read for a new
subscription. Our listener reads for one second at a time.
"""

from __future__ import annotations

from typing import Any

import rq
from rq.job import Job
from rq.utils import import_attribute

TASKS_MODULE = "email_rag.runtime.tasks"
LISTEN_S = 1.0  # one read of the command listener: the longest a stop waits for it
RENAMED = {f"workers.tasks.{name}": f"{TASKS_MODULE}.{name}"
           for name in ("run_job", "poll_mailboxes", "search")}


class TaskJob(Job):
    @property
    def func(self) -> Any:
        name = self.func_name
        if name in RENAMED and self.instance is None:
            return import_attribute(RENAMED[name])
        return super().func


class _PromptStop:
    connection: Any
    pubsub_channel_name: str
    handle_payload: Any
    _pubsub_exception_handler: Any

    def subscribe(self) -> None:
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(
            sleep_time=LISTEN_S, daemon=True, exception_handler=self._pubsub_exception_handler)


class SimpleWorker(_PromptStop, rq.SimpleWorker):
    """Runs each job in the worker process itself."""


class ForkingWorker(_PromptStop, rq.Worker):
    """Runs each job in a forked work horse."""


def worker_class(simple: bool) -> type[rq.SimpleWorker] | type[rq.Worker]:
    return SimpleWorker if simple else ForkingWorker
