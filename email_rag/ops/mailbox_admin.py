"""Adding and changing a mailbox (web admin and ``email-rag mailboxes add|edit``): the
settings are checked against the real servers before they are saved.

``save`` builds the new settings (``core.mailbox_fields``), runs ``mailboxes check`` on them
(``ops.mailbox_check.check_config``: DNS, TCP, TLS, login, folders, IDLE, SMTP) and saves
them through the store (``db.mailbox_configs``) with the admin's name:

| check | ``disabled`` not asked | ``disabled`` asked |
|---|---|---|
| passed | saved, polled from the next poll | saved disabled |
| failed | nothing saved (the report says why) | saved disabled, the report kept with it |
| not run (``check=False``) | saved as asked, "not checked" kept with it | saved disabled |

Failure table (situation | retry? | state known? | resume?):
  invalid settings (a missing username, plain text to a remote host) | no | nothing saved |
      the message names the setting
  a server refuses or does not answer | no: the admin decides (fix, or save disabled) |
      nothing saved, or saved disabled | save again after the fix
  saved by someone else meanwhile | no | the other's settings | reload, save again
  MariaDB down | - | nothing half-saved (one transaction per change) | save again
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core import mailbox_fields as mf
from ..core.jsonvalue import JsonObject
from ..core.settings import MailboxConfig
from ..db.mailbox_configs import DATABASE, MailboxConfigStore, MailboxNotFoundError
from ..review import service_levels
from .mailbox_check import MailboxReport, check_config

if TYPE_CHECKING:
    from ..wiring.services import Services


@dataclass(frozen=True)
class SaveResult:
    name: str
    saved: bool
    enabled: bool
    report: MailboxReport | None
    changed: list[str] = field(default_factory=list)

    @property
    def check_failed(self) -> bool:
        return self.report is not None and not self.report.ok

    def as_dict(self) -> JsonObject:
        return {"mailbox": self.name, "saved": self.saved, "enabled": self.enabled,
                "changed": list(self.changed),
                "check": self.report.as_dict() if self.report else None}


def summary(report: MailboxReport | None) -> str:
    """One line kept with the mailbox: what its last check found."""
    if report is None:
        return "not checked"
    failed = [f"{s.name}: {s.detail}" for s in report.steps if s.ok is False]
    return "all steps ok" if not failed else "; ".join(failed)


def store_of(svc: Services) -> MailboxConfigStore:
    return svc.mailboxes.store


def preview(svc: Services, name: str, changes: dict[str, Any], new: bool) -> MailboxConfig:
    """The settings a save would store (checked, not saved)."""
    if new:
        return mf.build(name, mf.apply({}, changes))
    entry = svc.mailboxes.entry(name, fresh=True)
    if entry.source != DATABASE or entry.removed or entry.stored is None:
        raise MailboxNotFoundError(f"no mailbox named {name} was added here (mailboxes of "
                                   "EMAIL_RAG_MAILBOXES are changed in the environment)")
    current = mf.join_secrets(entry.raw, store_of(svc).secrets(entry.stored))
    return mf.build(name, mf.apply(current, changes))


def save(svc: Services, name: str, changes: dict[str, Any], actor: str, *, new: bool,
         version: int | None = None, disabled: bool = False, check: bool = True) -> SaveResult:
    """Check, then save (see the table above). ``changes``: dotted key -> value (None: back
    to the default); a secret not in ``changes`` stays as it is."""
    candidate = preview(svc, name, changes, new)
    report = check_config(svc, candidate) if check else None
    if report is not None and not report.ok and not disabled:
        return SaveResult(name, False, False, report)
    store = store_of(svc)
    env_names = {c.name for c in svc.mailboxes.environment}
    if new:
        store.add(name, mf.apply({}, changes), not disabled, actor, reserved=env_names)
        changed = sorted(k for k in changes if changes[k] is not None)
    else:
        changed = store.edit(name, changes, actor, version)[1]
        if disabled:
            store.set_enabled(name, False, actor, "saved disabled: " + summary(report))
    store.record_check(name, report.ok if report else None, summary(report),
                       report.as_dict() if report else None)
    if any(k.startswith("service_level") for k in changed):
        service_levels.forget_changed(svc.db, svc.mailboxes.configs(fresh=True))
    entry = svc.mailboxes.entry(name, fresh=True)
    return SaveResult(name, True, entry.enabled, report, changed)
