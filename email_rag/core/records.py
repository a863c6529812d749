"""Typed records made from database rows: Mail, Draft, SendAttempt, Job.

``from_row`` takes a row as the database returns it (a dict) and keeps the fields
the domain decides on; columns it does not name are ignored. Records are frozen:
a change of status is a store's move (email_rag/db/stores.py, email_rag/jobs/store.py),
never an assignment.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Self

from .states import DraftStatus, JobKind, JobState, MailStatus, SendStatus


class _FromRow:
    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in row.items() if k in names})


@dataclass(frozen=True)
class Mail(_FromRow):
    id: int
    status: MailStatus
    status_reason: str | None = None
    mailbox_id: int | None = None
    subject: str | None = None
    parse_status: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", MailStatus(self.status))


@dataclass(frozen=True)
class Draft(_FromRow):
    id: int
    email_id: int
    status: DraftStatus
    version: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", DraftStatus(self.status))


@dataclass(frozen=True)
class SendAttempt(_FromRow):
    id: int
    draft_id: int
    status: SendStatus
    message_id: str = ""
    tries: int = 0
    last_error: str | None = None
    smtp_response: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", SendStatus(self.status))


@dataclass(frozen=True)
class Job(_FromRow):
    id: int
    kind: JobKind
    state: JobState
    queue: str
    attempts: int = 0
    email_id: int | None = None
    draft_id: int | None = None
    job_key: str = ""
    last_error: str | None = None
    worker: str | None = None
    started_at: datetime | None = None
    next_run_at: datetime | None = None
    finished_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", int(self.id))
        object.__setattr__(self, "attempts", int(self.attempts or 0))
        if self.kind in JobKind._value2member_map_:  # an unknown kind stays a str: the job
            object.__setattr__(self, "kind", JobKind(self.kind))  # runner refuses it (dead)
        object.__setattr__(self, "state", JobState(self.state))
