"""Claim a Redis db (1..15) of the shared local Redis for a test or a chaos run.

Several test runs and chaos runs share one Redis server. Each takes a db of
its own by setting ``email-rag-test-claim:<n>`` in db 0 (SET NX with a TTL, so
a crashed claimer frees it after ``ttl`` seconds). The claimed db is flushed
when it is taken and when it is released; the claim is deleted only by its
owner.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from ..errors import ConfigError

CLAIM_KEY = "email-rag-test-claim:{n}"
DBS = range(1, 16)


@dataclass
class RedisClaim:
    base_url: str  # e.g. redis://127.0.0.1:6379 (no db)
    db: int
    owner: str

    @property
    def url(self) -> str:
        return f"{self.base_url}/{self.db}"

    def refresh(self, ttl: int = 900) -> bool:
        """Extend the claim (long runs). False if it is no longer ours."""
        r = redis.Redis.from_url(f"{self.base_url}/0")
        try:
            key = CLAIM_KEY.format(n=self.db)
            if r.get(key) != self.owner.encode():
                return False
            return bool(r.expire(key, ttl))
        finally:
            r.close()

    def release(self) -> None:
        """Flush the db and delete the claim (only if it is still ours)."""
        data = redis.Redis.from_url(self.url)
        try:
            data.flushdb()
        finally:
            data.close()
        r = redis.Redis.from_url(f"{self.base_url}/0")
        try:
            key = CLAIM_KEY.format(n=self.db)
            if r.get(key) == self.owner.encode():
                r.delete(key)
        finally:
            r.close()


def base_of(url: str) -> str:
    """``redis://host:port`` of a Redis URL (the db part dropped)."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0]
    return f"{scheme}://{host}"


def claim(base_url: str = "redis://127.0.0.1:6379", ttl: int = 900, rounds: int = 600,
          pause: float = 0.05) -> RedisClaim:
    """Take a free db (1..15), flushed. Raises ConfigError when none frees up in time."""
    base_url = base_of(base_url) if "://" in base_url else base_url
    r = redis.Redis.from_url(f"{base_url}/0")
    owner = uuid.uuid4().hex
    try:
        for _ in range(rounds):
            for n in DBS:
                if r.set(CLAIM_KEY.format(n=n), owner, nx=True, ex=ttl):
                    got = RedisClaim(base_url, n, owner)
                    data = redis.Redis.from_url(got.url)
                    try:
                        data.flushdb()
                    finally:
                        data.close()
                    return got
            time.sleep(pause)
    finally:
        r.close()
    raise ConfigError(f"no free Redis db (1..15) on {base_url}: every db is claimed "
                      "by another test or chaos run")


@contextmanager
def claimed(base_url: str = "redis://127.0.0.1:6379", ttl: int = 900) -> Iterator[RedisClaim]:
    got = claim(base_url, ttl)
    try:
        yield got
    finally:
        got.release()
