"""The MariaDB adapter: the only module that imports the ``mariadb`` connector.

Connector errors become domain errors: a lost or refused connection is
``DatabaseUnavailableError`` (transient: reconnect and wait), a duplicate key
is ``DuplicateKeyError``, anything else ``DatabaseError``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import mariadb

from ..core.errors import (
    ConnectionSharedError,
    DatabaseBusyError,
    DatabaseError,
    DatabaseUnavailableError,
    DuplicateKeyError,
)
from ..core.retry import ExponentialBackoff
from ..core.rows import Row

log = logging.getLogger(__name__)
T = TypeVar("T")

# Errors that mean "the server or the connection is gone", not "the statement is wrong".
_CONNECTION_ERRNOS = {
    1040,  # too many connections
    1053,  # server shutdown in progress
    1927,  # connection was killed
    2002,  # can't connect (socket)
    2003,  # can't connect (tcp)
    2006,  # server has gone away
    2013,  # lost connection during query
    2026,  # SSL connection error
    2027,  # malformed packet: the server died mid-answer (found by a CI chaos run)
    2055,  # lost connection at handshake
    4031,  # disconnected by server because of inactivity
    # Connector/C network errors (CR_ERR_NET_READ / CR_ERR_NET_WRITE): a read or write on a
    # connection the server already closed, e.g. "Write error: Broken pipe (32)" after a
    # KILL CONNECTION. Found by the chaos harness: as a DatabaseError (permanent) it made
    # the job dead and its mail failed, instead of the worker waiting for MariaDB.
    5013,
    5014,
}
_BUSY_ERRNOS = {1205, 1213}  # lock wait timeout, deadlock


BUSY_TRIES = 3  # a transaction rolled back for a deadlock / lock wait timeout runs this often
BUSY_PAUSE = ExponentialBackoff(base=0.02, cap=0.2, jitter=0.5)


def repeat_when_busy(run: Callable[[], T], what: str,
                     on_repeat: Callable[[int, DatabaseBusyError], None] | None = None,
                     tries: int = BUSY_TRIES, sleep: Callable[[float], None] = time.sleep,
                     logger: logging.Logger = log) -> T:
    """``run()`` (one transaction), repeated at once when MariaDB rolled it back for a
    deadlock or lock wait timeout (so a repeat is safe), up to ``tries`` times; then the
    error goes to the caller. ``on_repeat(try, error)`` before each repeat (to audit it);
    the repeat is logged on the caller's ``logger``."""
    for attempt in range(1, tries + 1):
        try:
            return run()
        except DatabaseBusyError as e:
            if attempt == tries:
                raise
            logger.warning("%s hit %s; repeating it (try %d of %d)", what, e, attempt + 1, tries)
            if on_repeat is not None:
                on_repeat(attempt + 1, e)
            sleep(BUSY_PAUSE.delay(attempt))
    raise AssertionError("unreachable")


def translate(exc: mariadb.Error) -> Exception:
    errno = getattr(exc, "errno", None)
    text = f"MariaDB error {errno}: {exc}"
    if errno in _CONNECTION_ERRNOS or isinstance(exc, mariadb.InterfaceError) and errno is None:
        return DatabaseUnavailableError(text, errno=errno)
    if isinstance(exc, mariadb.OperationalError) and errno is None:
        return DatabaseUnavailableError(text, errno=errno)
    if errno == 1062:
        return DuplicateKeyError(text, errno=errno)
    if errno in _BUSY_ERRNOS:
        return DatabaseBusyError(text, errno=errno)
    return DatabaseError(text, errno=errno)


class Database:
    """One MariaDB connection with explicit transactions.

    ``with db.transaction() as cur:`` commits on success and rolls back on any
    error. Outside a transaction, ``fetchall``/``fetchone``/``execute`` run as
    their own short transaction.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 3306,
        user: str = "root",
        password: str = "",
        database: str | None = None,
        connect_timeout: int = 5,
        read_timeout: int = 0,
    ) -> None:
        self._params = dict(
            host=host, port=port, user=user, password=password, connect_timeout=connect_timeout
        )
        # a hung server (connection open, no answer) then raises 2013 instead of hanging
        self._timeouts = (dict(read_timeout=read_timeout, write_timeout=read_timeout)
                          if read_timeout > 0 else {})
        if database:
            self._params["database"] = database
        self.database = database
        self._conn: mariadb.Connection | None = None
        self._user: int | None = None  # the thread inside a transaction (see _exclusive)
        self._depth = 0
        self._user_lock = threading.Lock()
        self.commits = 0  # counted for benchmarks (every transaction, reads included)
        self.statements = 0  # statements sent (execute/executemany), counted for benchmarks
        self.write_commits = 0  # commits of transactions that wrote (the ones that flush the
        # redo log to disk); counted for benchmarks
        self._wrote = False  # the open transaction sent a statement other than a SELECT
        # called with each statement's text and with None at each commit (a benchmark's
        # listing of the statements, ``bench hops --statements``); None: nothing is called
        self.trace: Callable[[str | None], None] | None = None

    @classmethod
    def from_settings(cls, settings: Any, database: str | None = None) -> Database:
        return cls(
            host=settings.db_host,
            port=settings.db_port,
            user=settings.db_user,
            password=settings.db_password.get_secret_value(),
            database=database if database is not None else settings.db_name,
            connect_timeout=settings.db_connect_timeout,
            read_timeout=settings.db_read_timeout,
        )

    def __repr__(self) -> str:  # never shows the password
        return f"Database({self._params['host']}:{self._params['port']}/{self.database})"

    # --- connection ---
    def connect(self) -> mariadb.Connection:
        if self._conn is None:
            try:
                self._conn = mariadb.connect(autocommit=False, **self._params, **self._timeouts)
            except mariadb.Error as e:
                raise translate(e) from e
        return self._conn

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One thread at a time (nested use by the same thread is fine); see
        ConnectionSharedError."""
        me = threading.get_ident()
        with self._user_lock:
            if self._user not in (None, me):
                raise ConnectionSharedError(
                    f"{self!r} is in use by another thread; two threads must not share one "
                    "MariaDB connection (give each its own Services)")
            self._user, self._depth = me, self._depth + 1
        try:
            yield
        finally:
            with self._user_lock:
                self._depth -= 1
                if self._depth == 0:
                    self._user = None

    def close(self) -> None:
        with self._exclusive():
            self._close()

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except mariadb.Error:
                pass
            self._conn = None

    def reconnect(self) -> None:
        self.close()
        self.connect()

    def ping(self) -> str:
        """The server version; raises DatabaseUnavailableError when unreachable."""
        row = self.fetchone("SELECT VERSION() AS v")
        return str(row["v"]) if row else ""

    def wait_until_available(self, backoff_max: float = 30.0, give_up_after: float | None = None,
                             on_wait: Any = None, spread: float = 0.0) -> float:
        """Reconnect with capped, fully jittered backoff until MariaDB answers (or
        ``give_up_after`` s). ``spread``: first wait a random 0..``spread`` s, so workers that
        lost their connections in the same second (a restart, a KILL) do not all reconnect
        in the same second; the waits after a failed reconnect double from it. Returns that
        first wait (for the caller's audit event)."""
        base = max(spread, 0.2)
        backoff = ExponentialBackoff(base=base, cap=max(backoff_max, base), full=True)
        first = ExponentialBackoff(base=spread, cap=spread, full=True).delay(1) if spread else 0.0
        if first:
            time.sleep(first)
        failures, started = 0, time.monotonic()
        while True:
            try:
                self.reconnect()
                self.ping()
                return first
            except DatabaseUnavailableError as e:
                if give_up_after is not None and time.monotonic() - started > give_up_after:
                    raise
                failures += 1
                delay = backoff.delay(failures)
                if on_wait:
                    on_wait(e, delay)
                log.warning("MariaDB unavailable (%s); waiting %.1f s", e, delay)
                time.sleep(delay)

    # --- statements ---
    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with self._exclusive(), self._transaction() as cur:
            yield cur

    @contextmanager
    def _transaction(self) -> Iterator[Cursor]:
        conn = self.connect()
        try:
            cur = conn.cursor(dictionary=True)
        except mariadb.Error as e:
            self.close()
            raise translate(e) from e
        self._wrote = False
        wrapper = Cursor(cur, self)
        try:
            yield wrapper
            conn.commit()
            self.commits += 1
            self.write_commits += self._wrote
            if self.trace is not None:
                self.trace(None)
        except mariadb.Error as e:
            self._rollback_quietly()
            err = translate(e)
            if isinstance(err, DatabaseUnavailableError):
                self.close()
            raise err from e
        except BaseException:
            self._rollback_quietly()
            raise
        finally:
            try:
                cur.close()
            except mariadb.Error:
                pass
            # the driver's cursor must not outlive its connection: an exception's traceback
            # keeps the caller's frame, and with it this wrapper, alive past ``close()``
            wrapper.detach()
            del cur

    def _rollback_quietly(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.rollback()
        except mariadb.Error:
            self.close()

    def fetchall(self, query: str, params: Any = None) -> list[Row]:
        with self.transaction() as cur:
            return cur.fetchall(query, params)

    def fetchone(self, query: str, params: Any = None) -> Row | None:
        with self.transaction() as cur:
            return cur.fetchone(query, params)

    def execute(self, query: str, params: Any = None) -> int:
        with self.transaction() as cur:
            return cur.execute(query, params)


def _reads(query: str) -> bool:
    """A statement that writes nothing (a locking read writes nothing either)."""
    return query.lstrip()[:6].upper() in ("SELECT", "(SELEC", "WITH ", "SHOW ")


class _ClosedCursor:
    def __getattr__(self, name: str) -> Any:
        raise DatabaseError("this cursor's transaction has ended")


class Cursor:
    """A thin cursor inside a transaction; returns rows as dicts."""

    def __init__(self, cur: Any, counts: Database | None = None) -> None:
        self._cur = cur
        self._counts = counts

    def detach(self) -> None:
        """Drop the driver's cursor at the end of the transaction (used after: an error)."""
        self._cur = _ClosedCursor()

    def _count(self, query: str) -> None:
        if self._counts is not None:
            self._counts.statements += 1
            if not self._counts._wrote and not _reads(query):
                self._counts._wrote = True
            if self._counts.trace is not None:
                self._counts.trace(query)

    def execute(self, query: str, params: Any = None) -> int:
        self._count(query)
        try:
            self._cur.execute(query, params or ())
        except mariadb.Error as e:
            raise translate(e) from e
        return self._cur.rowcount

    def executemany(self, query: str, rows: Sequence[Any]) -> int:
        if not rows:
            return 0
        self._count(query)
        try:
            self._cur.executemany(query, rows)
        except mariadb.Error as e:
            raise translate(e) from e
        return self._cur.rowcount

    def fetchall_many(self, query: str, rows: Sequence[Any]) -> list[Row]:
        """A statement with RETURNING run for each of ``rows`` in one bulk round trip
        (``executemany``); the rows all of them returned (an INSERT IGNORE returns only the
        rows it inserted). Several times cheaper than one multi-row statement with a
        placeholder per value."""
        if not rows:
            return []
        self.executemany(query, rows)
        try:
            return list(self._cur.fetchall())
        except mariadb.Error as e:
            raise translate(e) from e

    def fetchall(self, query: str, params: Any = None) -> list[Row]:
        self.execute(query, params)
        try:
            return list(self._cur.fetchall())
        except mariadb.Error as e:
            raise translate(e) from e

    def fetchone(self, query: str, params: Any = None) -> Row | None:
        rows = self.fetchall(query, params)
        return rows[0] if rows else None

    @property
    def lastrowid(self) -> int:
        return int(self._cur.lastrowid)
