"""MariaDB access: connection with error translation, named queries, migrations."""

from ..core.errors import DuplicateKeyError
from .builders import drop_database, update_emails
from .connection import Database
from .queries import slot_params, sql

__all__ = ["Database", "DuplicateKeyError", "drop_database", "slot_params", "sql",
           "update_emails"]
