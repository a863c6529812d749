"""MariaDB access: connection with error translation, named queries, migrations."""

from .connection import Database, DuplicateKeyError
from .queries import sql

__all__ = ["Database", "DuplicateKeyError", "sql"]
