"""Mailboxes an admin added in the web admin or with ``email-rag mailboxes add``, and the
directory every process reads its mailboxes from.

``MailboxConfigStore``: one row per mailbox (``mailbox_configs``): the settings as entered
(JSON, without secrets), the secrets encrypted with the token key (``TokenCipher``, as the
OAuth2 tokens), ``enabled``, ``removed_at`` and a ``version`` that every saved change raises.
Each change is one conditional statement with its audit event (the admin's name; the keys
that changed, never a value of a secret) in one transaction:

| action | row | audit |
|---|---|---|
| add (new name, or a removed one's name) | enabled or disabled, version 1 / + 1 | ``mailbox_added`` |
| edit (compare-and-set on the version the admin saw) | version + 1 | ``mailbox_changed`` (keys) |
| disable / enable | enabled 0 / 1, version + 1 | ``mailbox_disabled`` / ``mailbox_enabled`` |
| remove | enabled 0, removed_at, version + 1 (a tombstone: mail and jobs stay) | ``mailbox_removed`` |

Failure table (situation | retry? | state known? | resume?):
  two admins save the same mailbox | no: the second is refused (version moved) | the
      first's settings | reload and save again
  the token key is not set, a secret is given | no: refused before anything is written |
      nothing stored | set EMAIL_RAG_OAUTH_TOKEN_KEY(_FILE)
  a row cannot be decrypted (key changed) | - | the entry carries the problem, is not
      polled | enter the secrets again (edit)
  MariaDB down | the caller's | nothing half-written (one transaction) | the next try

``MailboxDirectory``: the mailboxes of this process: those of ``EMAIL_RAG_MAILBOXES``
(read-only, source ``environment``) and those of the database. One rule of precedence, no
merge: a name is defined in one place; a database mailbox whose name the environment also
defines is not used and says so (``problem``), and adding one is refused. It re-reads the
database when its copy is older than ``max_age`` seconds (pollers read it fresh every
cycle), so an added, changed, disabled or removed mailbox reaches every process without a
restart.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..core import mailbox_fields as mf
from ..core.errors import ConfigError, EmailRagError, PermanentError
from ..core.redact import redact_text
from ..core.rows import FromRow, set_field
from ..core.settings import MailboxConfig
from .audit import AuditEvent, write_events
from .connection import Database
from .oauth_tokens import TokenCipher
from .queries import sql

MISS_REREAD_S = 1.0  # an unknown name re-reads the database at most this often
ENVIRONMENT = "environment"
DATABASE = "database"


class MailboxExistsError(PermanentError):
    """A mailbox of that name exists."""


class MailboxNotFoundError(PermanentError):
    """No mailbox of that name."""


class MailboxChangedError(PermanentError):
    """The mailbox was changed by someone else since it was read: reload and save again."""


@dataclass(frozen=True)
class StoredMailbox(FromRow):
    """A ``mailbox_configs`` row as stored: the secrets still encrypted."""

    name: str
    settings: str = "{}"
    secrets: bytes | None = field(default=None, repr=False)
    enabled: bool = True
    removed_at: datetime | None = None
    version: int = 1
    check_ok: bool | None = None
    check_summary: str | None = None
    check_report: str | None = None  # the last check's steps (JSON of MailboxReport)
    checked_at: datetime | None = None
    created_by: str = ""
    updated_by: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def __post_init__(self) -> None:
        set_field(self, "enabled", bool(self.enabled))
        set_field(self, "version", int(self.version))
        if self.check_ok is not None:
            set_field(self, "check_ok", bool(self.check_ok))

    @property
    def raw(self) -> dict[str, Any]:
        return json.loads(self.settings or "{}")

    @property
    def last_report(self) -> dict[str, Any] | None:
        return json.loads(self.check_report) if self.check_report else None


@dataclass(frozen=True)
class MailboxEntry:
    """One mailbox as the directory knows it: where it is defined, whether it is polled,
    its settings (None when they cannot be used: ``problem`` says why)."""

    name: str
    source: str  # environment | database
    config: MailboxConfig | None
    raw: dict[str, Any]  # as entered, without secrets
    secrets_set: tuple[str, ...] = ()
    enabled: bool = True
    removed: bool = False
    version: int = 0
    problem: str | None = None
    stored: StoredMailbox | None = None

    @property
    def polled(self) -> bool:
        return (self.enabled and not self.removed and self.config is not None
                and self.problem is None)

    @property
    def editable(self) -> bool:
        return self.source == DATABASE

    def as_dict(self) -> dict[str, Any]:
        """``mailboxes list --json``: settings as entered, secrets only as set / not set."""
        s = self.stored
        return {"name": self.name, "source": self.source, "enabled": self.enabled,
                "removed": self.removed, "polled": self.polled, "version": self.version,
                "problem": self.problem, "settings": mf.public(self.raw, set(self.secrets_set)),
                "last_check": None if s is None or s.checked_at is None else {
                    "ok": s.check_ok, "summary": s.check_summary,
                    "at": s.checked_at.isoformat()},
                "updated_by": s.updated_by if s else None,
                "updated_at": s.updated_at.isoformat() if s and s.updated_at else None}


class MailboxConfigStore:
    def __init__(self, db: Database, cipher: Callable[[], TokenCipher]) -> None:
        self.db = db
        self._cipher = cipher

    def rows(self) -> list[StoredMailbox]:
        return StoredMailbox.from_rows(self.db.fetchall(sql("mailbox_configs_all")))

    def secrets(self, stored: StoredMailbox) -> dict[str, str]:
        if not stored.secrets:
            return {}
        return json.loads(self._cipher().decrypt(stored.secrets))

    def _seal(self, secrets: dict[str, str]) -> bytes | None:
        if not secrets:
            return None
        try:
            cipher = self._cipher()
        except ConfigError as e:
            raise ConfigError(f"passwords and client secrets are stored encrypted with the "
                              f"token key: {e}") from None
        return cipher.encrypt(json.dumps(secrets, sort_keys=True))

    def add(self, name: str, raw: dict[str, Any], enabled: bool, actor: str,
            reserved: set[str] = frozenset()) -> MailboxConfig:
        """A new mailbox (``raw``: the settings with their secrets). ``reserved``: names
        defined elsewhere (the environment's)."""
        if name in reserved:
            raise MailboxExistsError(f"mailbox {name} is defined in EMAIL_RAG_MAILBOXES: "
                                     "choose another name (the environment's definitions are "
                                     "read-only here)")
        raw = mf.clean(raw)
        config = mf.build(mf.check_name(name), raw)
        public, secrets = mf.split_secrets(raw)
        values = {"name": name, "settings": json.dumps(public, sort_keys=True),
                  "secrets": self._seal(secrets), "enabled": int(enabled), "actor": actor}
        with self.db.transaction() as cur:
            before = cur.fetchone(sql("mailbox_configs_get_for_update"), {"name": name})
            if before is not None and before["removed_at"] is None:
                raise MailboxExistsError(f"mailbox {name} exists: change it with `email-rag "
                                         f"mailboxes edit {name}` or on its page")
            cur.execute(sql("mailbox_configs_revive" if before else "mailbox_configs_insert"),
                        values)
            write_events(cur, [AuditEvent(actor, "mailbox", name, "mailbox_added",
                                          to_state="enabled" if enabled else "disabled",
                                          detail={"keys": sorted(_keys(raw)),
                                                  "again": before is not None or None})])
        return config

    def edit(self, name: str, changes: dict[str, Any], actor: str,
             version: int | None = None) -> tuple[MailboxConfig, list[str]]:
        """Apply ``changes`` (dotted key -> value, None: back to the default) over the stored
        settings; ``version``: the one the admin saw (a newer one refuses the save).
        Returns the new settings and the keys that changed."""
        with self.db.transaction() as cur:
            stored = self._current(cur, name)
            if version is not None and stored.version != version:
                raise MailboxChangedError(f"mailbox {name} was changed by {stored.updated_by} "
                                          "since you opened it: reload it and save again")
            before = mf.join_secrets(stored.raw, self.secrets(stored))
            after = mf.apply(before, changes)
            config = mf.build(name, after)
            changed = mf.changed_keys(before, after)
            if not changed:
                return config, []
            public, secrets = mf.split_secrets(after)
            cur.execute(sql("mailbox_configs_update"), {
                "name": name, "settings": json.dumps(public, sort_keys=True),
                "secrets": self._seal(secrets), "version": stored.version, "actor": actor})
            write_events(cur, [AuditEvent(actor, "mailbox", name, "mailbox_changed",
                                          detail={"keys": changed,
                                                  "version": stored.version + 1})])
        return config, changed

    def set_enabled(self, name: str, enabled: bool, actor: str, reason: str = "") -> bool:
        """False when it already was so."""
        with self.db.transaction() as cur:
            self._current(cur, name)
            done = cur.execute(sql("mailbox_configs_set_enabled"),
                               {"name": name, "enabled": int(enabled), "actor": actor}) == 1
            if done:
                write_events(cur, [AuditEvent(
                    actor, "mailbox", name, "mailbox_enabled" if enabled else "mailbox_disabled",
                    "disabled" if enabled else "enabled", "enabled" if enabled else "disabled",
                    detail={"reason": redact_text(reason)[:300] or None})])
        return done

    def remove(self, name: str, actor: str) -> None:
        with self.db.transaction() as cur:
            stored = self._current(cur, name)
            cur.execute(sql("mailbox_configs_remove"), {"name": name, "actor": actor})
            write_events(cur, [AuditEvent(
                actor, "mailbox", name, "mailbox_removed",
                "enabled" if stored.enabled else "disabled", "removed",
                detail={"mail_kept": True})])

    def record_check(self, name: str, ok: bool | None, summary: str,
                     report: dict[str, Any] | None = None) -> None:
        """The last check of its settings (None: saved without one): its one-line summary
        and its steps (already redacted by the check)."""
        self.db.execute(sql("mailbox_configs_checked"), {
            "name": name, "ok": None if ok is None else int(ok),
            "summary": redact_text(summary)[:2000],
            "report": json.dumps(report, default=str) if report else None})

    def _current(self, cur: Any, name: str) -> StoredMailbox:
        row = cur.fetchone(sql("mailbox_configs_get_for_update"), {"name": name})
        if row is None or row["removed_at"] is not None:
            raise MailboxNotFoundError(f"no mailbox named {name} was added here (mailboxes "
                                       "of EMAIL_RAG_MAILBOXES are changed in the environment)")
        return StoredMailbox.from_row(row)


def _keys(raw: dict[str, Any]) -> list[str]:
    return [f.key for f in mf.FIELDS if mf.get(raw, f.key) is not None]


class MailboxDirectory:
    """The mailboxes of this process (environment + database), re-read when older than
    ``max_age`` seconds or when asked ``fresh``."""

    def __init__(self, environment: list[MailboxConfig], store: MailboxConfigStore,
                 max_age: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.environment = list(environment)
        self.store = store
        self.max_age = max_age
        self.clock = clock
        self._entries: list[MailboxEntry] | None = None
        self._read_at = 0.0

    def entries(self, fresh: bool = False) -> list[MailboxEntry]:
        if fresh or self._entries is None or self.clock() - self._read_at > self.max_age:
            self._entries = self._read(self._entries or [])
            self._read_at = self.clock()
        return self._entries

    def active(self, fresh: bool = False) -> list[MailboxConfig]:
        """The mailboxes polled now (enabled, not removed, usable)."""
        return [e.config for e in self.entries(fresh) if e.polled and e.config is not None]

    def configs(self, fresh: bool = False) -> list[MailboxConfig]:
        """Every usable mailbox's settings, polled or not (retention, service levels)."""
        seen: set[str] = set()
        out = []
        for e in self.entries(fresh):
            if e.config is not None and e.name not in seen:
                seen.add(e.name)
                out.append(e.config)
        return out

    def entry(self, name: str, fresh: bool = False) -> MailboxEntry:
        """The entry of ``name`` (the environment's first: it wins a clash)."""
        for e in self.entries(fresh):
            if e.name == name:
                return e
        raise KeyError(name)

    def get(self, name: str) -> MailboxConfig:
        """A mailbox's settings, polled or not (a disabled or removed mailbox's jobs still
        run with them); KeyError when unknown or unusable."""
        try:
            found = self.entry(name)
        except KeyError:  # added since the last read? (at most one read a second for misses)
            if self.clock() - self._read_at < MISS_REREAD_S:
                raise
            found = self.entry(name, fresh=True)
        if found.config is None:
            raise KeyError(name)
        return found.config

    def _read(self, previous: list[MailboxEntry]) -> list[MailboxEntry]:
        known = {(e.source, e.name): e for e in previous}
        out = [known.get((ENVIRONMENT, c.name)) or MailboxEntry(
            c.name, ENVIRONMENT, c, c.model_dump(mode="json", exclude_defaults=True,
                                                 exclude={"name"}))
            for c in self.environment]
        env_names = {c.name for c in self.environment}
        for stored in self.store.rows():
            before = known.get((DATABASE, stored.name))
            if before is not None and before.version == stored.version and (
                    before.config is not None):  # the same settings object: caches keep
                entry = replace(before, stored=stored, problem=None)
            else:
                entry = self._entry(stored)
            if stored.name in env_names:
                entry = replace(entry, problem=(
                    "also defined in EMAIL_RAG_MAILBOXES: that definition is used and this "
                    "one is ignored; remove one of them"))
            out.append(entry)
        return out

    def _entry(self, stored: StoredMailbox) -> MailboxEntry:
        raw, problem, config, secrets = stored.raw, None, None, {}
        try:
            secrets = self.store.secrets(stored)
            config = mf.build(stored.name, mf.join_secrets(raw, secrets))
        except EmailRagError as e:
            problem = redact_text(str(e))
        return MailboxEntry(stored.name, DATABASE, config, raw, tuple(sorted(secrets)),
                            stored.enabled, stored.removed_at is not None, stored.version,
                            problem, stored)
