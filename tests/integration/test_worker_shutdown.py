"""A worker's warm shutdown ends in seconds, whatever its command listener was doing.

RQ listens for commands (stop a job, shut down) in a pubsub thread and, when the worker
stops, unsubscribes and then stops that thread; redis-py joins it. A listener that has
just read the confirmation of its unsubscription waits for a new subscription for as
long as it listens per read before it looks at its stop flag again, so SIGTERM could
take a minute to end the worker (seen in CI: the bench's worker killed after 60 s). The
test puts the listener into exactly that wait, then stops the worker.
"""

from __future__ import annotations

import sys
import time

import pytest

from email_rag.runtime.job_runner import build_rq_worker
from email_rag.wiring.services import Services

STOP_WITHIN_S = 15  # RQ's listener waits 60 s per read; ours must not


def _waiting_for_a_subscription(thread) -> bool:
    frame = sys._current_frames().get(thread.ident)
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return "get_message" in names and "wait" in names


def _until(predicate, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.mark.parametrize("worker_class", ["simple", "fork"])
def test_stopping_a_worker_whose_listener_lost_its_subscription_takes_seconds(
        settings, worker_class):
    svc = Services(settings.model_copy(update={"worker_class": worker_class}))
    worker = build_rq_worker(svc, with_vectors=False, name=f"shutdown-{worker_class}")
    worker.subscribe()
    try:
        _until(lambda: worker.pubsub.subscribed, "the listener to subscribe")
        worker.pubsub.unsubscribe()
        _until(lambda: not worker.pubsub.subscribed, "the unsubscription to be read")
        _until(lambda: _waiting_for_a_subscription(worker.pubsub_thread),
               "the listener to wait for a subscription")

        started = time.monotonic()
        worker.unsubscribe()
        took = time.monotonic() - started
    finally:
        svc.close()
    assert took < STOP_WITHIN_S, f"stopping the command listener took {took:.1f} s"
    assert not worker.pubsub_thread.is_alive()
