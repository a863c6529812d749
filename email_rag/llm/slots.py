"""A limit on concurrent calls per LLM endpoint, shared by every worker (Redis).

A local model on 2 cores answers one request at a time; three workers calling it
at once made the queued calls time out (and a timed-out call twice sends the
mail to manual). With ``llm_max_concurrent`` slots per endpoint, a call first
takes a slot: queueing behind a busy model is waiting, and the call's timeout
starts only when it is sent.

The slots are one sorted set per endpoint (``erag:llm-slots:<sha of the URL>``):
member = a random token, score = the lease's end. Taking a slot is one Lua
script (drop expired leases, count, add); releasing removes the token.

| situation | what happens |
|---|---|
| a slot is free | taken at once (one round trip) |
| all slots taken | wait (polling, 0.05 s doubling to 1 s) up to ``wait`` seconds |
| still none after ``wait`` | ``LLMBusyError`` (transient): the job retry cycle takes over |
| holder crashed (SIGKILL) before releasing | its lease ends after ``lease`` seconds (the call timeout + min(30 s, the timeout): no call outlives its timeout): the slot is free again |
| Redis unreachable | the call goes ahead without a slot (logged): the limit protects the model, it must not stop the pipeline |
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core.errors import LLMBusyError
from ..core.retry import ExponentialBackoff

log = logging.getLogger(__name__)

_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


def slots_key(base_url: str) -> str:
    return "erag:llm-slots:" + hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()[:16]


SLOT_POLL = ExponentialBackoff(base=0.05, cap=1.0, jitter=0.0)  # how often a waiting call looks


class EndpointSlots:
    def __init__(self, redis: Any, base_url: str, limit: int, lease: float, wait: float,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.redis, self.key = redis, slots_key(base_url)
        self.limit, self.lease, self.wait = limit, lease, wait
        self.clock, self.sleep = clock, sleep
        self._take = redis.register_script(_TAKE)

    def try_take(self, token: str) -> bool:
        now = self.clock()
        return bool(self._take(keys=[self.key], args=[
            now, self.limit, now + self.lease, token, int((self.lease + 60) * 1000)]))

    def release(self, token: str) -> None:
        self.redis.zrem(self.key, token)

    def holders(self) -> int:
        self.redis.zremrangebyscore(self.key, "-inf", self.clock())
        return int(self.redis.zcard(self.key))

    @contextmanager
    def slot(self) -> Iterator[float]:
        """Hold one slot for the block; yields the seconds waited for it."""
        if self.limit <= 0:
            yield 0.0
            return
        import redis as redis_lib

        token = secrets.token_hex(8)
        started = time.monotonic()
        failures = 0
        try:
            while not self.try_take(token):
                waited = time.monotonic() - started
                if waited >= self.wait:
                    raise LLMBusyError(
                        f"all {self.limit} call slot(s) of the LLM endpoint stayed taken for "
                        f"{waited:.0f} s (llm_slot_wait_seconds); the job retry cycle tries "
                        "again later", waited=round(waited, 1))
                failures += 1
                self.sleep(min(SLOT_POLL.delay(failures), max(0.0, self.wait - waited)))
        except redis_lib.RedisError as e:
            log.warning("LLM call slots unavailable (%s): calling without a slot", e)
            yield time.monotonic() - started
            return
        waited = time.monotonic() - started
        try:
            yield waited
        finally:
            try:
                self.release(token)
            except redis_lib.RedisError as e:  # the lease ends by itself
                log.warning("LLM call slot not released (%s): its lease ends it", e)
