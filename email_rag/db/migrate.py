"""Ordered SQL migrations, package data in ``email_rag/db/migrations/``.

Files are named ``NNNN_description.sql``. Each is applied once and recorded in
``schema_migrations`` with its checksum. A named MariaDB lock (GET_LOCK)
serialises concurrent runs, so two processes migrating at once apply each
migration exactly once. Statements use IF NOT EXISTS where MariaDB allows it,
because DDL commits implicitly: a migration interrupted half-way can be re-run.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable

from ..core.errors import ConfigError, DatabaseError
from .connection import Database

MIGRATIONS_DIR: Traversable = resources.files(__package__) / "migrations"
_FILE = re.compile(r"^(\d{4})_([\w-]+)\.sql$")
LOCK_NAME = "email_rag_migrate"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Traversable

    @property
    def text(self) -> str:
        return self.path.read_text()

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


@dataclass
class MigrateResult:
    applied: list[int] = field(default_factory=list)
    already: list[int] = field(default_factory=list)

    @property
    def current(self) -> int:
        return max(self.applied + self.already, default=0)


def discover(directory: Traversable = MIGRATIONS_DIR) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted((p for p in directory.iterdir() if p.name.endswith(".sql")),
                       key=lambda p: p.name):
        m = _FILE.match(path.name)
        if not m:
            raise ConfigError(f"migration file {path.name} is not named NNNN_name.sql")
        found.append(Migration(int(m.group(1)), m.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ConfigError(f"duplicate migration versions in {directory}")
    return found


def split_statements(text: str) -> list[str]:
    """Split on ';' at line ends, outside of ``DELIMITER``-free trigger bodies.

    Our migrations keep to one-statement triggers, so a plain split suffices;
    comment lines are dropped.
    """
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("--")]
    statements, current = [], []
    for line in lines:
        current.append(line)
        if line.rstrip().endswith(";"):
            stmt = "\n".join(current).strip().rstrip(";").strip()
            if stmt:
                statements.append(stmt)
            current = []
    tail = "\n".join(current).strip()
    if tail:
        statements.append(tail)
    return statements


def ensure_database(db: Database, name: str) -> None:
    """CREATE DATABASE IF NOT EXISTS through a connection without a default schema."""
    if not re.fullmatch(r"\w+", name):
        raise ConfigError(f"database name {name!r} must be letters, digits and underscores")
    server = Database(**{**db._params, "database": None})  # noqa: SLF001 (same module family)
    try:
        server.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 "
                       "COLLATE utf8mb4_unicode_ci")
    finally:
        server.close()


def applied_versions(db: Database) -> dict[int, str]:
    rows = db.fetchall(
        "SELECT version, checksum FROM schema_migrations ORDER BY version"
    )
    return {int(r["version"]): r["checksum"] for r in rows}


def migrate(db: Database, directory: Traversable = MIGRATIONS_DIR, lock_timeout: int = 120) -> MigrateResult:
    migrations = discover(directory)
    result = MigrateResult()
    got = db.fetchone("SELECT GET_LOCK(%s, %s) AS got", (LOCK_NAME, lock_timeout))
    if not got or got["got"] != 1:
        raise DatabaseError(f"could not take the migration lock within {lock_timeout} s")
    try:
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INT PRIMARY KEY, name VARCHAR(200) NOT NULL, checksum CHAR(64) NOT NULL,"
            " applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"
            " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        )
        done = applied_versions(db)
        for mig in migrations:
            if mig.version in done:
                if done[mig.version] != mig.checksum:
                    raise ConfigError(
                        f"migration {mig.path.name} changed after it was applied "
                        "(checksum differs); add a new migration instead"
                    )
                result.already.append(mig.version)
                continue
            for statement in split_statements(mig.text):
                db.execute(statement)
            db.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (mig.version, mig.name, mig.checksum),
            )
            result.applied.append(mig.version)
    finally:
        try:
            db.fetchone("SELECT RELEASE_LOCK(%s) AS r", (LOCK_NAME,))
        except Exception:  # noqa: BLE001 - the lock dies with the connection anyway
            db.close()
    return result


def pending(db: Database, directory: Traversable = MIGRATIONS_DIR) -> list[int]:
    try:
        done = applied_versions(db)
    except DatabaseError:
        done = {}
    return [m.version for m in discover(directory) if m.version not in done]
