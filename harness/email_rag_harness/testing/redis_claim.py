"""Claim a Redis database (1..15) for one run of tests, the demo, the chaos harness or a
benchmark, so that runs sharing one Redis server never see each other's queues.

A claim is a key ``email-rag-test-claim:<n>`` in db 0 with an expiry; the claimed db is
flushed on claim and on release.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

CLAIM_KEY = "email-rag-test-claim:{n}"


def base_url(url: str) -> str:
    """``redis://host:port`` of a Redis URL (without the db number)."""
    head, _, tail = url.rpartition("/")
    return head if tail.isdigit() and head.count("/") >= 2 else url.rstrip("/")


@contextmanager
def claimed_db(server_url: str = "redis://127.0.0.1:6379", ttl: int = 3600,
               wait: float = 20.0) -> Iterator[str]:
    """Yield the URL of a Redis db claimed for this run; flushed before and after."""
    server_url = base_url(server_url)
    admin = redis.Redis.from_url(f"{server_url}/0")
    owner = uuid.uuid4().hex
    deadline = time.monotonic() + wait
    n = None
    while n is None:
        for candidate in range(1, 16):
            if admin.set(CLAIM_KEY.format(n=candidate), owner, nx=True, ex=ttl):
                n = candidate
                break
        else:
            if time.monotonic() > deadline:
                admin.close()
                raise RuntimeError("no free Redis db (1..15): all are claimed by other runs")
            time.sleep(0.1)
    url = f"{server_url}/{n}"
    db = redis.Redis.from_url(url)
    db.flushdb()
    try:
        yield url
    finally:
        db.flushdb()
        db.close()
        if admin.get(CLAIM_KEY.format(n=n)) == owner.encode():
            admin.delete(CLAIM_KEY.format(n=n))
        admin.close()
