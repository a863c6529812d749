"""An audit event as it is written: who did what to which record, from which state to which,
when; its ``event_uid`` makes a repeated write (a spool flushed again) insert nothing twice.
The log that writes them is ``email_rag.db.audit``."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from .jsonvalue import JsonObject
from .redact import redact
from .rows import Params


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def new_event_uid() -> str:
    """A random version-4 UUID as 32 hex digits (``uuid.uuid4().hex``, without building a
    ``UUID`` object: two are made per stored mail)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    return b.hex()


# json.dumps(detail, default=str) builds an encoder per call; this is the same encoder, once
_DETAIL_JSON = json.JSONEncoder(default=str)


@dataclass
class AuditEvent:
    actor: str
    entity_type: str  # email, job, draft, send_attempt, mailbox, system
    entity_id: str
    event: str  # e.g. state_changed, retry_scheduled, fallback_defaults, dead_letter
    from_state: str | None = None
    to_state: str | None = None
    attempt: int | None = None
    detail: JsonObject | None = None
    at: datetime = field(default_factory=utcnow)
    event_uid: str = field(default_factory=new_event_uid)

    def __post_init__(self) -> None:
        self.entity_id = str(self.entity_id)
        self.actor = str(self.actor)
        if self.detail is not None:
            self.detail = redact(self.detail)

    def row(self) -> Params:
        """The parameters of ``audit_insert``."""
        return {
            "event_uid": self.event_uid, "at": self.at, "actor": self.actor,
            "entity_type": self.entity_type, "entity_id": self.entity_id, "event": self.event,
            "from_state": _s(self.from_state), "to_state": _s(self.to_state),
            "attempt": self.attempt,
            "detail": _DETAIL_JSON.encode(self.detail) if self.detail is not None else None,
        }

    def to_json(self) -> str:
        d = asdict(self)
        d["at"] = self.at.isoformat()
        return json.dumps(d, default=str)

    @classmethod
    def from_json(cls, line: str) -> AuditEvent:
        d = json.loads(line)
        d["at"] = datetime.fromisoformat(d["at"])
        return cls(**d)


def _s(v: Any) -> str | None:
    return None if v is None else str(v)
