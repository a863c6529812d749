"""One MariaDB connection, one thread at a time (email_rag.db.connection.Database).

Found by a CI chaos run: the harness's staff Regenerate ran in a fault thread on the
connection the harness's main loop polled with. Two threads on one Connector/C connection
interleave their packets ("Received malformed packet", 2027) and then crashed the process
with no traceback. A second thread now gets a clear error instead of a shared socket.
"""

from __future__ import annotations

import threading

from email_rag.core.errors import ConnectionSharedError


def test_a_second_thread_on_a_connection_in_use_gets_a_clear_error(db):
    """GIVEN thread A inside a transaction on a Database
    WHEN thread B runs a statement on the same Database
    THEN B gets ConnectionSharedError (nothing is sent on A's connection) and A commits."""
    inside, b_done = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def thread_a() -> None:
        with db.transaction() as cur:
            cur.execute("CREATE TABLE t_threads (id INT PRIMARY KEY)")
            cur.execute("INSERT INTO t_threads (id) VALUES (1)")
            inside.set()
            b_done.wait(60)

    def thread_b() -> None:
        inside.wait(60)
        try:
            outcome["b"] = db.fetchone("SELECT 1 AS one")
        except Exception as e:  # noqa: BLE001 - the error is what the test checks
            outcome["b"] = e
        b_done.set()

    a, b = threading.Thread(target=thread_a), threading.Thread(target=thread_b)
    a.start(), b.start()
    a.join(120), b.join(120)
    assert isinstance(outcome["b"], ConnectionSharedError), outcome["b"]
    assert "two threads" in str(outcome["b"])
    assert db.fetchone("SELECT COUNT(*) AS n FROM t_threads")["n"] == 1


def test_one_thread_may_nest_and_threads_may_take_turns(db):
    """GIVEN a transaction that runs a statement through the Database inside it (same thread)
    and then another thread using the Database after the first finished
    THEN both work: the rule is 'not at the same time', not 'one thread forever'."""
    with db.transaction() as cur:
        cur.execute("CREATE TABLE t_turns (id INT PRIMARY KEY)")
        assert db.fetchone("SELECT 1 AS one")["one"] == 1
    result: list[object] = []
    th = threading.Thread(target=lambda: result.append(db.fetchone("SELECT 2 AS two")))
    th.start()
    th.join(60)
    assert result == [{"two": 2}]


def test_closing_a_connection_another_thread_uses_is_refused(db):
    """GIVEN thread A inside a transaction WHEN thread B closes the Database
    THEN B is refused with ConnectionSharedError and A's transaction commits."""
    inside, b_done = threading.Event(), threading.Event()
    errors: list[Exception] = []

    def thread_a() -> None:
        with db.transaction() as cur:
            cur.execute("CREATE TABLE t_close (id INT PRIMARY KEY)")
            inside.set()
            b_done.wait(60)
            cur.execute("INSERT INTO t_close (id) VALUES (7)")

    def thread_b() -> None:
        inside.wait(60)
        try:
            db.close()
        except ConnectionSharedError as e:
            errors.append(e)
        b_done.set()

    a, b = threading.Thread(target=thread_a), threading.Thread(target=thread_b)
    a.start(), b.start()
    a.join(120), b.join(120)
    assert len(errors) == 1
    assert db.fetchone("SELECT id FROM t_close")["id"] == 7


def test_a_cursor_kept_alive_by_a_traceback_no_longer_holds_the_drivers_cursor(db):
    """An error inside a transaction: its traceback keeps the caller's frame and the cursor
    wrapper alive past the connection's close; the driver's cursor must already be gone
    (deallocated after its connection, it corrupted memory: a segfault at a later close)."""
    import pytest

    from email_rag.core.errors import DatabaseError

    kept = {}
    with pytest.raises(RuntimeError):
        with db.transaction() as cur:
            kept["cur"] = cur
            assert cur.fetchone("SELECT 1 AS a") == {"a": 1}
            raise RuntimeError("refused")
    with pytest.raises(DatabaseError, match="transaction has ended"):
        kept["cur"].fetchone("SELECT 1 AS a")
