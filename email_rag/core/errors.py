"""One exception tree for email-rag.

Adapters translate client-library errors into these with ``raise ... from e``.
The retry policy decides on the class alone: ``TransientError`` may be retried,
``PermanentError`` may not, ``OutcomeUnknownError`` must be reconciled first.
A message defaults to the class docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .catalog import N_

if TYPE_CHECKING:
    from .records import Draft


class EmailRagError(Exception):
    """email-rag failed."""

    def __init__(self, message: str | None = None, **context: object) -> None:
        self.message = message or (self.__doc__ or self.__class__.__name__).strip()
        self.context = context
        super().__init__(self.message)


class TransientError(EmailRagError):
    """A temporary failure; the operation may be retried."""

    retry_after: float | None = None


class PermanentError(EmailRagError):
    """A failure that retrying will not fix; a human must act."""


class OutcomeUnknownError(EmailRagError):
    """The other side may or may not have acted; reconcile before any repeat."""


class StateRefused(PermanentError):
    """Not allowed in the record's current state; nothing was changed (the one type for
    it: a transition a table refuses, a draft or mail no longer waiting for this action)."""


class TransitionRefused(StateRefused):
    """A status change that its record's transition table does not allow."""

    def __init__(self, record: str, record_id: object, current: object, wanted: object,
                 why: str) -> None:
        self.record, self.record_id = record, record_id
        self.current, self.wanted, self.why = current, wanted, why
        super().__init__(f"{record} {record_id} is {current}; {wanted} refused: {why}",
                         record=record, record_id=record_id, current=str(current),
                         wanted=str(wanted))


class ConfigError(PermanentError):
    """The configuration is invalid."""


# --- MariaDB ---
class DatabaseUnavailableError(TransientError):
    """MariaDB is unreachable; reconnect and wait, the job is not counted as failed."""


class DatabaseError(PermanentError):
    """MariaDB refused a statement."""


# --- Queue ---
class QueueUnavailableError(TransientError):
    """Redis is unreachable; the job row stays queued and is dispatched later."""


class QueueCallTimeoutError(TransientError):
    """No worker answered a routed request in time (is the worker of that queue running?)."""


class QueueCallFailedError(EmailRagError):
    """A routed request failed in the worker that ran it."""


# --- IMAP ---
class ImapError(TransientError):
    """The IMAP server failed or dropped the connection."""


class ImapAuthError(ImapError):
    """IMAP login was refused; check the mailbox credentials (retried on the slow schedule)."""


# --- LLM ---
class LLMError(TransientError):
    """The LLM endpoint failed."""


class LLMTimeoutError(LLMError):
    """The LLM did not answer in time."""


class LLMRateLimitedError(LLMError):
    """The LLM endpoint answered 429 Too Many Requests."""

    def __init__(self, message: str | None = None, retry_after: float | None = None, **ctx: object):
        super().__init__(message, **ctx)
        self.retry_after = retry_after


class LLMInvalidOutputError(EmailRagError):
    """The LLM answered, but not with valid JSON of the expected shape."""


class LLMRequestRejectedError(PermanentError):
    """The LLM endpoint rejected the request (400/401/403/404): check key, model and URL."""


# --- Stores ---
class LLMContextOverflowError(LLMRequestRejectedError):
    """The prompt does not fit the model's context window (HTTP 400 from the endpoint)."""


class LLMBusyError(LLMError):
    """No call slot of the LLM endpoint became free in time (all taken by other workers)."""


class StoreUnavailableError(TransientError):
    """A vector or graph store is unreachable."""


class StoreLockedError(StoreUnavailableError):
    """The local Qdrant folder is held by another process (only one may open it)."""


class StoreNotOwnedError(StoreLockedError):
    """This process is not the owner of the local Qdrant folder and must not open it (a
    vector step reached a process that is not the vector owner: a routing bug)."""


class StoreRejectedError(PermanentError):
    """A vector or graph store refused the request (configuration: auth, dimension, database)."""


class EmbeddingUnavailableError(StoreUnavailableError):
    """The embeddings backend is unreachable or timed out; vectors cannot be written now."""


class EmbeddingRejectedError(PermanentError):
    """The embeddings backend refused the request (check model, key, URL or installed extras)."""


# --- SMTP ---
class SmtpTransientError(TransientError):
    """The SMTP relay answered 4xx or the connection broke before DATA was accepted."""


class SmtpPermanentError(PermanentError):
    """The SMTP relay refused the message permanently (5xx)."""


class SmtpOutcomeUnknownError(OutcomeUnknownError):
    """The connection broke after DATA was sent; the relay may have accepted the message."""


class HeaderInjectionError(PermanentError):
    """A header value contains CR or LF; refused to prevent header injection."""


# --- Input ---
class BadInputError(PermanentError):
    """The input is malformed."""


# --- Records, jobs, mailboxes and the local runtime ---
class DraftNotFoundError(PermanentError):
    """No draft with this id."""


# What a missing thing is called where staff read it (the web UI translates the message by
# reading it back with ``core.catalog.read_back``)
DRAFT_MISSING = N_("draft %(id)s does not exist")
MAIL_MISSING = N_("mail %(id)s does not exist")
MAIL_OF_DRAFT_MISSING = N_("mail %(mail)s of draft %(id)s does not exist")
NO_ATTACHMENT = N_("mail %(mail)s has no attachment %(n)s")
ATTACHMENT_NOT_STORED = N_("attachment %(n)s of mail %(mail)s is not in the stored mail "
                           "(headers only?)")
ATTACHMENT_CHANGED = N_("attachment %(n)s of mail %(mail)s does not match the recorded "
                        "checksum; not served")
NO_SOURCE = N_("mail %(id)s has no stored source")
NO_SEND_ATTEMPT = N_("draft %(id)s has no send attempt")
MISSING = (DRAFT_MISSING, MAIL_MISSING, MAIL_OF_DRAFT_MISSING, NO_ATTACHMENT,
           ATTACHMENT_NOT_STORED, ATTACHMENT_CHANGED, NO_SOURCE, NO_SEND_ATTEMPT)


class DraftConflictError(StateRefused):
    """The draft changed after the agent loaded it (another agent approved or rejected it,
    or it was regenerated or marked stale); nothing was changed."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        super().__init__(f"draft {draft.id} changed since you opened it (now "
                         f"{draft.status}); nothing changed")


class AttachmentNotFoundError(PermanentError):
    """No such attachment (or its bytes no longer match what the parse step recorded)."""


class DeliveryEvidenceError(PermanentError):
    """There is evidence that the reply may have arrived; it was not resent."""


class StuckJobError(TransientError):
    """The entry was processing longer than the stuck limit; its worker is presumed dead."""


class JobTimedOutError(TransientError):
    """The queue stopped the entry at its job timeout: the time went to a slow or
    unavailable dependency (e.g. waiting through MariaDB outages); it resumes from its
    last confirmed step."""


class LocalLLMMissingError(ConfigError):
    """The local model or its runtime is not installed."""


class LocalLLMStartError(ConfigError):
    """The local LLM server did not start."""

    def __init__(self, message: str, died: bool = False) -> None:
        super().__init__(message)
        self.died = died  # the process exited (a crash), not merely slow


class ClaimLostError(EmailRagError):
    """The entry is no longer ours (reset by cleanup); stop without writing anything."""


class LeaseLostError(TransientError):
    """Another poller took over this mailbox's lease; the batch was rolled back."""


class DuplicateKeyError(DatabaseError):
    """A row with this unique key already exists."""


class ConnectionSharedError(DatabaseError):
    """A second thread wanted a connection another thread is using (a programming error).

    Connector/C connections are not thread-safe: two threads on one socket interleave their
    packets ("Received malformed packet") and can crash the process. Each thread that works
    at the same time as another needs its own ``Database`` (its own ``Services``).
    """


class DatabaseBusyError(TransientError):
    """MariaDB reported a deadlock or lock wait timeout; retry the transaction."""


class PromptNotFoundError(ConfigError):
    """A prompt file the LLM calls need is missing from the package."""


# --- TLS and OAuth2 of the mail servers (adapters/tls.py, adapters/oauth2.py) ---
class ImapTlsError(ImapAuthError):
    """The IMAP server's TLS certificate was refused (untrusted, expired, or for another
    host): a configuration error; the mailbox needs an admin (retried on the slow schedule)."""


class SmtpTlsError(SmtpPermanentError):
    """The SMTP server's TLS certificate was refused (untrusted, expired, or for another
    host): a configuration error; nothing was sent."""


class OAuthUnavailableError(TransientError):
    """The OAuth2 token endpoint is unreachable or failed (5xx, timeout): try again later."""


class OAuthGrantError(PermanentError):
    """The OAuth2 token endpoint refused the grant (invalid_grant, invalid_client, revoked
    consent, expired secret): an admin must re-authorize the mailbox."""


class ImapOAuthError(ImapAuthError):
    """No OAuth2 access token for IMAP: the refresh was refused; an admin must re-authorize
    the mailbox (``email-rag mailboxes authorize NAME``)."""
