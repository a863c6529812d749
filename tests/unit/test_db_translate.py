"""How MariaDB connector errors become domain errors (email_rag.db.connection.translate)."""

from __future__ import annotations

import mariadb
import pytest

from email_rag.core.errors import (
    DatabaseBusyError,
    DatabaseError,
    DatabaseUnavailableError,
    DuplicateKeyError,
)
from email_rag.db.connection import translate


def error(cls: type, message: str, errno: int | None) -> mariadb.Error:
    e = cls(message)
    e.errno = errno
    return e


@pytest.mark.parametrize("errno, message", [
    (2013, "Lost connection to server during query"),
    (2006, "Server has gone away"),
    (1927, "Connection was killed"),
    # regression (chaos harness): a write on a connection the server closed after a
    # KILL CONNECTION was a permanent DatabaseError -> dead letter, mail failed
    (5014, "Write error: Broken pipe (32)"),
    (5013, "Read error: Connection reset by peer (104)"),
    # regression (CI chaos run): a server killed mid-answer leaves half a packet; the
    # connection is unusable, the statement was not wrong
    (2027, "Received malformed packet"),
])
def test_lost_connections_are_unavailable_not_permanent(errno, message):
    """GIVEN a connector error that means the connection is gone
    THEN it is DatabaseUnavailableError (the worker waits), never a permanent DatabaseError."""
    assert isinstance(translate(error(mariadb.OperationalError, message, errno)),
                      DatabaseUnavailableError)


def test_statement_errors_stay_what_they_are():
    assert isinstance(translate(error(mariadb.IntegrityError, "Duplicate entry", 1062)),
                      DuplicateKeyError)
    assert isinstance(translate(error(mariadb.OperationalError, "Deadlock found", 1213)),
                      DatabaseBusyError)
    wrong = translate(error(mariadb.ProgrammingError, "You have an error in your SQL", 1064))
    assert isinstance(wrong, DatabaseError) and not isinstance(wrong, DatabaseUnavailableError)
