"""MariaDB access: connection with error translation, named queries, migrations."""

from .builders import update_emails
from .connection import Database, DuplicateKeyError
from .queries import sql

__all__ = ["Database", "DuplicateKeyError", "sql", "update_emails"]
