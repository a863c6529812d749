"""Typed records made from database rows: Mail, Draft, SendAttempt, Job.

``from_row`` takes a row as the database returns it (a dict) and keeps the fields
the domain decides on; columns it does not name are ignored. Records are frozen:
a change of status is a store's move (email_rag/db/stores.py, email_rag/jobs/store.py),
never an assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime

from .rows import FromRow, Row, SqlValue
from .states import DraftStatus, JobKind, JobState, MailStatus, SendStatus, SendVerifiedBy


@dataclass(frozen=True)
class Mail(FromRow):
    """A mail as the stages read it: every ``emails`` column but the raw source and the
    HTML body (``MAIL_COLUMNS``, the named query ``pipeline_mail``). The raw mail is never
    part of it: the runner reads it beside the record for a step that needs it
    (``StepSpec.needs_raw``: the parse step), which gets it as ``StepContext.raw``."""

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

    def with_columns(self, columns: Mapping[str, SqlValue]) -> Mail:
        """The mail after an UPDATE of ``columns`` (those it does not hold are ignored)."""
        return replace(self, **{k: v for k, v in columns.items() if k in MAIL_COLUMNS})

    def as_row(self) -> Row:
        """Its columns as a row, for the readers that take one (indexer, retrieval,
        ``addresses.stored_reply``). Its fields are plain values: a shallow copy (``asdict``
        deep-copies every value)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Draft(FromRow):
    id: int
    email_id: int
    status: DraftStatus
    version: int = 1
    subject: str | None = None
    body_draft: str = ""
    body_final: str | None = None  # the text staff approved (edited or not)
    sources: str | None = None  # JSON as stored: the retrieved cases the draft used
    language: str | None = None
    check_flags: str | None = None  # the automatic checks' findings: approve edited only
    approved_by: str | None = None
    approved_at: datetime | None = None
    rejected_by: str | None = None
    reject_reason: str | None = None
    stale_reason: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None  # any write changes it: the version an agent saw
    source: str = "model"  # model: the draft step wrote it; manual: staff, by hand

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", DraftStatus(self.status))

    @property
    def body(self) -> str:
        """The text that is (or would be) sent."""
        return self.body_final or self.body_draft

    @property
    def seen(self) -> str:
        """The version of the draft an agent saw (optimistic concurrency token)."""
        at = self.updated_at
        return at.isoformat() if isinstance(at, datetime) else str(at)


@dataclass(frozen=True)
class SendAttempt(FromRow):
    id: int
    draft_id: int
    status: SendStatus
    message_id: str = ""
    tries: int = 0
    recipients: str | None = None
    last_error: str | None = None
    smtp_response: str | None = None
    verified_by: SendVerifiedBy | None = None
    verified_at: datetime | None = None
    decided_by: str | None = None
    attempted_at: datetime | None = None
    accepted_at: datetime | None = None
    sent_at: datetime | None = None
    updated_at: datetime | None = None
    email_id: int | None = None  # the draft's mail, when the query joins it

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", SendStatus(self.status))
        if self.verified_by is not None:
            object.__setattr__(self, "verified_by", SendVerifiedBy(self.verified_by))


@dataclass(frozen=True)
class Job(FromRow):
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


@dataclass(frozen=True)
class ReplyMail(FromRow):
    """The inbound mail a reply answers: status, threading headers and the stored reply
    decision - never its raw bytes or body (explicit column list: ``drafts_reply_mail``)."""

    id: int
    status: MailStatus
    mailbox_id: int
    subject: str | None = None
    message_id: str | None = None
    references_header: str | None = None
    thread_key: str | None = None
    from_addr: str | None = None
    reply_addr: str | None = None
    reply_rule: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", MailStatus(self.status))


@dataclass(frozen=True)
class RecordedExample:
    """A labelled example a person's action stored (``db.examples.record``): the text its
    vector is made from once the action committed, and the embedder of the vector it has
    (None: none yet)."""

    email_id: int
    subject: str | None
    body_text: str | None
    vector_of: str | None = None


@dataclass(frozen=True)
class SendContext:
    """What the sender needs to send one reply: the approved draft, the mail it answers,
    the mailbox it leaves from, the addresses and the one send attempt."""

    draft: Draft
    mail: ReplyMail
    mailbox: str  # the mailbox's name (its Sent folder, the From display name)
    attempt: SendAttempt
    from_addr: str
    to_addr: str


@dataclass(frozen=True)
class InboundRef(FromRow):
    """A newer inbound mail of the same thread (it makes an approved draft stale)."""

    id: int
    subject: str | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class Account(FromRow):
    """A row of ``users`` as the login and session checks read it."""

    id: int
    name: str
    role: str
    disabled: bool = False
    session_version: int = 0
    password_hash: str = ""
    time_zone: str | None = None
    ui_language: str | None = None


@dataclass(frozen=True)
class Listed(FromRow):
    """A user as ``users list`` and the admin page show it."""

    id: int
    name: str
    role: str
    disabled: bool = False
    last_login_at: datetime | None = None
    created_at: datetime | None = None
    mailboxes: str = ""  # names, or "all" for an admin


@dataclass(frozen=True)
class Bucket(FromRow):
    """One login-throttle bucket: (account, client) or the client's address."""

    name_key: str
    failures: int = 0
    lockouts: int = 0
    locked_s: int = 0  # seconds the bucket stays locked (0: not locked)
    stale: bool = False  # untouched for longer than the window: its failures are forgotten


MAIL_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Mail))
