"""The interfaces the domain sees for IMAP, SMTP, the LLM and the queue; adapters implement them.

Like ``index_ports.py`` for the stores: Protocols and value types only, no
client library imported (importing this module is cheap). The domain (poller,
pipeline steps, sender, dispatch) is written against these; ``Services``
(email_rag/wiring/services.py) builds the adapters:

| port | adapter | client library |
|---|---|---|
| ``Mailbox`` (read a folder in batches, append, search) | ``adapters.imap.ImapMailbox`` | imaplib |
| ``SentFolder`` (is a Message-ID there? file a copy) | ``adapters.imap.ImapSentFolder`` | imaplib |
| ``MailSender`` (hand one message to the relay) | ``adapters.smtp.SmtpSender`` | smtplib |
| ``ChatModel`` (JSON or text from an OpenAI-compatible endpoint) | ``adapters.llm.LLMClient`` | openai |
| ``WorkQueue`` (put committed job ids on Redis) | ``adapters.queue.JobQueue`` | redis, rq |
| ``StatusRows``, ``ReviewRows`` (the status stores' and review decisions' reads and writes, typed records) | ``db.stores.CursorRows`` | mariadb (via ``db.connection``) |
| ``JobRows`` (queue entries and what their decisions touch) | ``jobs.rows.MariaJobRows`` | mariadb |

In memory, for unit tests: one database implementing all three over the same tables
(tests/doubles/memory_db.py).

Errors cross a port only as email_rag.core.errors classes (adapters translate with
``raise ... from e``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .jsonvalue import JsonObject
from .records import Draft, InboundRef, Job, Mail, RecordedExample, ReplyMail, SendAttempt
from .routing import job_key
from .rows import Row
from .states import JobKind, JobState, MailStatus

if TYPE_CHECKING:  # an annotation only: audit events are written by the implementations
    from .audit_event import AuditEvent


# --- IMAP ---
@dataclass(frozen=True)
class FolderState:
    folder: str
    uidvalidity: int
    uidnext: int
    exists: int


@dataclass
class FetchedMail:
    uid: int
    raw: bytes  # whole mail, or only its header block when headers_only
    size: int  # RFC822.SIZE as the server reports it
    headers_only: bool = False


@dataclass
class FetchBatch:
    mails: list[FetchedMail] = field(default_factory=list)
    last_uid: int = 0  # highest UID this batch covers (also missing ones)
    listed: list[int] = field(default_factory=list)  # the UIDs SEARCH listed for this batch
    missing: list[int] = field(default_factory=list)  # listed, but the FETCH had no body

    @property
    def nbytes(self) -> int:
        return sum(len(m.raw) for m in self.mails)


class Mailbox(Protocol):
    def select(self, folder: str, readonly: bool = True) -> FolderState: ...

    def uids_after(self, folder: str, last_uid: int) -> list[int]: ...

    def find_message_id(self, folder: str, message_id: str) -> list[int]: ...

    def append(self, folder: str, raw: bytes, flags: Iterable[str] = (),
               when: Any = None) -> int | None: ...

    def close(self) -> None: ...


class SentFolder(Protocol):
    def contains(self, message_id: str) -> bool: ...

    def append(self, message: bytes) -> None: ...


# --- SMTP ---
class MailSender(Protocol):
    def send(self, message: bytes, mail_from: str, rcpt_to: list[str]) -> str:
        """The relay's answer; raises SmtpTransientError / SmtpPermanentError /
        SmtpOutcomeUnknownError."""
        ...


# --- LLM ---
@dataclass
class LLMResult:
    text: str
    duration: float  # seconds, request to parsed response
    model: str = ""  # the model the endpoint says answered
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    waited: float = 0.0  # seconds spent waiting for a call slot of the endpoint
    prefill: str | None = None  # the text's first words, written by us (chat_text's prefill)
    # the server's own measure of the call (llama.cpp's ``timings``: prompt_n, prompt_ms,
    # predicted_n, predicted_ms, cache_n, draft_n, draft_n_accepted); empty when the endpoint
    # sends none
    timings: dict[str, float] = field(default_factory=dict)
    runtime: str = ""  # the build that answered, as the server names it (system_fingerprint)


class ChatModel(Protocol):
    def context_size(self, default: int = 4096) -> int: ...

    def chat_json(self, messages: list[dict[str, str]], schema: JsonObject, name: str,
                  **kw: Any) -> LLMResult: ...

    def chat_text(self, messages: list[dict[str, str]], **kw: Any) -> LLMResult: ...


# --- queue ---
class WorkQueue(Protocol):
    def enqueue(self, items: Iterable[tuple[str, int]]) -> int:
        """Put (queue name, job id) pairs on the queue; raises QueueUnavailableError."""
        ...

    def hand_off(self, job_id: int, to_queue: str, from_queue: str) -> None: ...

    def is_pending(self, job_id: int, queue: str | None = None) -> bool: ...


# --- the database, as the status stores and the review decisions see it ---
class StatusRows(Protocol):
    """What a status store (email_rag/db/stores.py) reads and writes, inside the caller's
    transaction. Query names are the store's named queries (email_rag/db/sql/)."""

    def locked(self, query: str, record_id: int) -> Row | None:
        """The row, locked for this transaction (None: no such row)."""
        ...

    def update(self, query: str, params: Mapping[str, Any]) -> int:
        """Run a conditional UPDATE (``... AND status = %(from)s``); rows changed."""
        ...

    def audit(self, events: list[Any]) -> None:
        """Write audit events (email_rag.db.audit.AuditEvent) in this transaction."""
        ...


class ReviewRows(Protocol):
    """Typed reads of the review and send records; ``lock``: FOR UPDATE in the caller's
    transaction."""

    def draft(self, draft_id: int, lock: bool = False) -> Draft | None: ...

    def reply_mail(self, email_id: int, lock: bool = False) -> ReplyMail | None: ...

    def send_of_draft(self, draft_id: int, lock: bool = False) -> SendAttempt | None: ...

    def send(self, attempt_id: int, lock: bool = False) -> SendAttempt | None: ...

    def newer_inbound(self, mail: ReplyMail, since: Any) -> InboundRef | None:
        """An inbound mail of the same thread that arrived after ``since`` (not automatic)."""
        ...

    def open_drafts(self, email_id: int) -> list[int]:
        """Ids of the mail's drafts pending review or stale, locked."""
        ...

    def mailbox(self, mailbox_id: int) -> tuple[str, str | None] | None:
        """The mailbox's name and address."""
        ...

    def labelled(self, email_id: int, source: str) -> RecordedExample | None:
        """The mail's current labels stored as a labelled example of the team
        (``db.examples.record``), whose vector the caller makes after its commit
        (``db.examples.embed_recorded``); None when the mail has no labels to learn from."""
        ...

    def reviewed(self, draft_id: int, outcome: Any, distance: float | None = None,
                 by: str = "") -> None:
        """Count staff's decision on a draft in the review figures (``db.figures``:
        ``outcome`` a ``ReviewOutcome``, ``distance`` the edit distance of an approval,
        ``by`` who decided)."""
        ...


class StoreRows(StatusRows, ReviewRows, Protocol):
    """Both: what ``Stores`` are built on (MariaDB: ``db.stores.CursorRows``)."""

# --- queue entries: what JobStore reads and writes (email_rag/jobs/store.py) ---
@dataclass(frozen=True)
class NewJob:
    """A queue entry to create: its natural key is ``routing.job_key(kind, ref)``."""

    kind: JobKind
    ref: int | str
    queue: str
    email_id: int | None = None
    draft_id: int | None = None
    detail: JsonObject | None = None  # of its audit event

    @property
    def key(self) -> str:
        return job_key(self.kind, self.ref)


class JobRows(Protocol):
    """The rows of queue entries and what an entry's decisions touch, typed records in and
    out. MariaDB: ``jobs.rows.MariaJobRows``; in memory: tests/doubles/memory_db.py.

    Every write is a compare-and-set against the record as read: False (or
    ``TransitionRefused`` for a status move) when the row is no longer in that state,
    nothing written. A status move checks the record's transition table
    (core/states.py) and writes its audit event with it. ``within(cur)``: the same rows
    inside a caller's open transaction; ``transaction()``: a new one (rolled back on error).
    """

    def transaction(self) -> AbstractContextManager[JobRows]: ...

    def within(self, cur: Any) -> JobRows: ...

    # reads
    def get(self, job_id: int, lock: bool = False) -> Job | None: ...

    def by_key(self, job_key: str) -> Job | None: ...  # locked

    def stuck(self, older_than_s: float, limit: int) -> list[Job]: ...

    def open_of_mail(self, email_id: int) -> list[Job]: ...  # locked, not closed by hand

    def mail(self, email_id: int) -> Mail | None: ...  # locked

    def unknown_send(self, email_id: int) -> int | None: ...  # a send of unknown outcome

    def send_of_draft(self, draft_id: int) -> SendAttempt | None: ...  # locked

    def confirmed_steps(self, email_id: int) -> set[str]: ...

    # the worker's compare-and-set moves
    def claim(self, job_id: int, worker: str, queue: str | None) -> Job | None: ...

    def claim_companions(self, job: Job, worker: str, limit: int) -> list[Job]: ...  # batch

    def still_mine(self, job_id: int, worker: str, lock: bool = False) -> bool: ...

    def finish(self, job: Job, worker: str) -> bool: ...

    def handoff(self, job: Job, worker: str, queue: str) -> bool: ...

    def fail(self, job: Job, worker: str, state: JobState, error: str,
             delay: float) -> bool: ...

    def reset_stuck(self, job: Job, state: JobState, error: str, delay: float) -> bool: ...

    def create(self, new: Sequence[NewJob], *, actor: str, event: str) -> list[Job]:
        """Insert the entries whose key is new (queued, each audited ``event``); an entry
        whose key exists is left as it is and not returned."""
        ...

    # moves along the transition tables, audited (``events``: the caller writes them)
    def move_job(self, job: Job, to: JobState, how: str, *, actor: str, event: str,
                 detail: JsonObject | None = None, queue: str | None = None,
                 note: str | None = None) -> Job: ...

    def move_mail(self, mail: Mail, to: MailStatus, *, actor: str, reason: str | None,
                  detail: JsonObject | None = None, attempt: int | None = None) -> None: ...

    def return_draft(self, draft_id: int, *, actor: str, reason: str,
                     detail: JsonObject) -> None: ...  # to pending review

    def record(self, events: Sequence[AuditEvent]) -> None: ...
