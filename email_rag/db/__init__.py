"""MariaDB access: connection with error translation, named queries, migrations."""

from .builders import drop_database, update_emails
from .connection import Database, DuplicateKeyError
from .queries import sql

__all__ = ["Database", "DuplicateKeyError", "drop_database", "sql", "update_emails"]
