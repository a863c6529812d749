"""Typed records made from database rows: Mail, Draft, SendAttempt, Job.

``from_row`` takes a row as the database returns it (a dict) and keeps the fields
the domain decides on; columns it does not name are ignored. Records are frozen:
a change of status is a store's move (email_rag/db/stores.py, email_rag/jobs/store.py),
never an assignment.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
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
    """A mail as the stages read it: every ``emails`` column but the raw source and the
    HTML body (``MAIL_COLUMNS``, the named query ``pipeline_mail``). A step that needs the
    raw mail reads it through its own query (the parse step)."""

    id: int
    status: MailStatus
    status_reason: str | None = None
    mailbox_id: int | None = None
    subject: str | None = None
    parse_status: str | None = None
    message_id: str | None = None
    thread_key: str | None = None
    in_reply_to: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    to_addrs: str | None = None
    cc_addrs: str | None = None
    reply_addr: str | None = None
    reply_rule: str | None = None
    sent_at: datetime | None = None
    received_at: datetime | None = None
    raw_size: int = 0
    parse_error: str | None = None
    auto_reason: str | None = None
    body_text: str | None = None
    attachments: str | None = None  # JSON list, as stored
    attachment_text: str | None = None
    index_status: str | None = None
    index_missing: str | None = None
    category: str | None = None
    priority: str | None = None
    language: str | None = None
    summary: str | None = None
    needs_reply: bool | int | None = None
    draft_instruction: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", MailStatus(self.status))

    def with_columns(self, columns: dict[str, Any]) -> Mail:
        """The mail after an UPDATE of ``columns`` (those it does not hold are ignored)."""
        return replace(self, **{k: v for k, v in columns.items() if k in MAIL_COLUMNS})

    def as_row(self) -> dict[str, Any]:
        """Its columns as a row, for the readers that take one (indexer, retrieval,
        ``addresses.stored_reply``)."""
        return asdict(self)


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


MAIL_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Mail))
