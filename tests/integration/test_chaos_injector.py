"""The chaos injector against a real private Redis: a fault that talks to a server waits
out a planned crash of that server instead of failing (found by a 20-seed run, where a
misroute died on "Connection refused" while a planned Redis crash was under way)."""

from __future__ import annotations

import time

import redis
from email_rag_harness.chaos.faults import Injector, Targets
from email_rag_harness.testing.servers import PrivateRedis


def targets(server: PrivateRedis) -> Targets:
    none = None
    return Targets(fleet=none, imap_proxy=none, db_proxy=none, llm=none, relay=none,
                   redis_url=server.url, db_name="unused", server_db=none, run_db=none,
                   qdrant_storage=none, queue=none, seed=1, mariadb=none,
                   redis_server=server, plain_queue="q", vector_queue="v")


def test_a_redis_flush_during_a_planned_redis_crash_waits_for_the_restart(tmp_path):
    """GIVEN a planned Redis crash (down 1.5 s) under way
    WHEN a redis_flush fault fires while Redis is down
    THEN the flush happens after the restart (recorded done), not an error."""
    with PrivateRedis(root=tmp_path) as server:
        injector = Injector(targets(server))
        injector.fire({"fault": "redis_crash", "seconds": 1.5, "at": 0})
        deadline = time.monotonic() + 60  # the injector's thread kills it: on a busy machine
        while not server.crashes and time.monotonic() < deadline:  # that may take a while
            time.sleep(0.01)
        assert server.crashes == 1, "the planned crash did not happen"
        assert not server.running, "restarted already: the flush would not meet the outage"
        injector.fire({"fault": "redis_flush", "at": 0})
        injector.join(30)
        results = {e["fault"]: e["result"] for e in injector.log}
        assert results == {"redis_crash": "done", "redis_flush": "done"}, injector.log
        assert redis.Redis.from_url(server.url).ping()
