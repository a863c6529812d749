"""One exception tree for email-rag.

Adapters translate client-library errors into these with ``raise ... from e``.
The retry policy decides on the class alone: ``TransientError`` may be retried,
``PermanentError`` may not, ``OutcomeUnknownError`` must be reconciled first.
A message defaults to the class docstring.
"""

from __future__ import annotations


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


class TransitionRefused(PermanentError):
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
