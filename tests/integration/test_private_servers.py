"""The private MariaDB and Redis servers the chaos harness crashes for real."""

from __future__ import annotations

import mariadb
import pytest
import redis
from email_rag_harness.testing.servers import PrivateMariaDB, PrivateRedis


def _connect(port: int, read_timeout: int = 30):
    """Generous timeouts for a server that should answer (a busy machine); the test of a
    halted server passes a short read_timeout, the time it waits for no answer."""
    return mariadb.connect(host="127.0.0.1", port=port, user="root", password="",
                           connect_timeout=30, read_timeout=read_timeout)


def test_a_committed_row_survives_kill_9_of_mariadbd_and_a_restart():
    """GIVEN a private mariadbd with one committed row and one uncommitted
    WHEN it is SIGKILLed and restarted on the same datadir
    THEN the connection of before is lost, connecting is refused while it is down, and
    after crash recovery the committed row is there and the uncommitted one is not."""
    with PrivateMariaDB() as server:
        conn = _connect(server.port)
        cur = conn.cursor()
        cur.execute("CREATE DATABASE t")
        cur.execute("CREATE TABLE t.r (id INT PRIMARY KEY) ENGINE=InnoDB")
        cur.execute("INSERT INTO t.r VALUES (1)")
        conn.commit()
        other = _connect(server.port)
        oc = other.cursor()
        oc.execute("START TRANSACTION")
        oc.execute("INSERT INTO t.r VALUES (2)")
        server.crash()
        assert not server.running and server.crashes == 1
        with pytest.raises(mariadb.Error):
            cur.execute("SELECT 1")
        with pytest.raises(mariadb.Error):
            _connect(server.port)
        server.restart()
        conn2 = _connect(server.port)
        c2 = conn2.cursor()
        c2.execute("SELECT id FROM t.r ORDER BY id")
        assert c2.fetchall() == [(1,)]
        conn2.close()


def test_a_halted_mariadbd_answers_nothing_until_it_is_resumed():
    with PrivateMariaDB() as server:
        conn = _connect(server.port, read_timeout=3)
        server.halt()
        cur = conn.cursor()
        with pytest.raises(mariadb.Error):
            cur.execute("SELECT 1")  # read_timeout 3 s: no answer from a stopped server
        server.resume()
        conn2 = _connect(server.port)
        c2 = conn2.cursor()
        c2.execute("SELECT 1")
        assert c2.fetchall() == [(1,)]


def test_redis_restarts_empty_after_kill_9():
    with PrivateRedis() as server:
        r = redis.Redis.from_url(server.url, socket_timeout=2)
        r.set("k", "v")
        server.crash()
        with pytest.raises(redis.ConnectionError):
            r.get("k")
        server.restart()
        assert r.get("k") is None  # the client reconnects by itself; the server kept nothing
        r.close()


def test_a_server_restarted_from_a_short_lived_thread_outlives_that_thread():
    """PR_SET_PDEATHSIG is per thread: a restart from an injector thread must not die when
    the thread ends (seen in a chaos run: Redis refused connections for good)."""
    import threading
    import time

    with PrivateRedis() as server:
        server.crash()
        t = threading.Thread(target=server.restart)
        t.start()
        t.join()
        time.sleep(0.5)
        assert server.running
        r = redis.Redis.from_url(server.url, socket_timeout=2)
        assert r.ping()
        r.close()
