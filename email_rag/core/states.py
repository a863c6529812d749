"""Every status value of email-rag, in one place.

Two levels are never confused: the business state of a mail (``MailStatus``)
and the state of a queue entry (``JobState``). Values are stored as their
string in MariaDB.
"""

from __future__ import annotations

from enum import StrEnum


class MailStatus(StrEnum):
    RECEIVED = "received"  # stored by the poller, processing not finished
    CLASSIFIED = "classified"  # classification confirmed
    NO_REPLY = "no_reply"  # terminal: no draft (loop guard / headers, or staff confirmed it)
    NO_REPLY_SUGGESTED = "no_reply_suggested"  # the LLM says no reply is needed and no header
    # corroborates it: staff confirm (-> no_reply) or ask for a reply (-> classified, drafted)
    DRAFT_READY = "draft_ready"  # a draft waits for staff review
    APPROVED = "approved"  # staff approved the draft; sending pending
    SENT = "sent"  # the relay accepted the reply, the Sent folder shows it, or an admin said
    # so (send_attempts.verified_by says which); a bounce later puts it back to review
    REJECTED = "rejected"  # terminal: staff rejected the draft
    MANUAL = "manual"  # needs a human (e.g. LLM timed out twice, send outcome unknown)
    FAILED = "failed"  # final business failure: processing stopped, a human must act
    RESOLVED = "resolved"  # terminal: an admin resolved it by hand, with a note
    HISTORY = "history"  # terminal: sent before the mailbox's cut-off, or a reply of ours from
    # Sent: stored, threaded, indexed as a past case; never classified, drafted or reviewed


MAIL_TERMINAL = frozenset(  # sent: terminal unless a bounce arrives later
    {MailStatus.NO_REPLY, MailStatus.SENT, MailStatus.REJECTED, MailStatus.RESOLVED,
     MailStatus.HISTORY}
)
# States in which a human is expected to look; a mail resting here is not lost.
MAIL_REVIEW = frozenset({MailStatus.DRAFT_READY, MailStatus.MANUAL, MailStatus.FAILED,
                         MailStatus.NO_REPLY_SUGGESTED})


class IndexStatus(StrEnum):
    PENDING = "pending"  # not indexed yet
    COMPLETE = "complete"  # every configured store has the mail
    PARTIALLY_INDEXED = "partially_indexed"  # a store is missing (emails.index_missing says which)
    SKIPPED = "skipped"  # nothing to index (unparseable or no text)


class ParseStatus(StrEnum):
    PENDING = "pending"  # stored by the poller (headers read); the full MIME parse has not run
    OK = "ok"  # parsed completely
    PARTIAL = "partial"  # parsed with defects (bad charset, broken boundary, truncated)
    FAILED = "failed"  # could not be parsed; raw bytes kept with the reason
    TOO_LARGE = "too_large"  # above the size limit; headers kept with the reason


class JobState(StrEnum):
    QUEUED = "queued"  # waiting to be claimed
    PROCESSING = "processing"  # claimed by a worker (started_at, worker set)
    DONE = "done"  # terminal: every step confirmed
    FAILED = "failed"  # last attempt failed; will be retried at next_run_at
    DEAD = "dead"  # terminal: no more automatic retries; kept for review, never deleted


JOB_CLAIMABLE = (JobState.QUEUED, JobState.FAILED)


class JobKind(StrEnum):
    PROCESS_EMAIL = "process_email"  # parse -> classify -> index -> draft
    SEND_DRAFT = "send_draft"  # one SMTP send of an approved draft
    INDEX_SYNC = "index_sync"  # re-index partially_indexed (or all / one) mails; vector queue
    INDEX_HISTORY = "index_history"  # index one history mail (no LLM); history queue
    RETENTION = "retention"  # one retention pass over every mailbox; vector queue
    PRIVACY_FORGET = "privacy_forget"  # one person's erasure asked for in the web; vector queue


class Step(StrEnum):
    """Steps of a process_email job, in order. A confirmed step is skipped on re-run."""

    PARSE = "parse"  # full MIME parse of the stored raw mail
    CLASSIFY = "classify"  # LLM classification
    INDEX = "index"  # vector store + graph store
    RETRIEVE = "retrieve"  # similar past cases for the draft (recorded as sources)
    DRAFT = "draft"  # LLM reply draft, pending review


class DraftStatus(StrEnum):
    PENDING_REVIEW = "pending_review"  # waits for staff
    APPROVED = "approved"  # approved, not yet sent (a send attempt exists)
    SENT = "sent"  # sent (send_attempts.verified_by says how we know); a bounce -> stale
    REJECTED = "rejected"  # terminal
    STALE = "stale"  # staff take a new look: a newer inbound mail arrived in the thread
    # before sending, or the reply bounced (stale_reason says which)
    FAILED = "failed"  # permanent send failure (e.g. 550); terminal for this draft
    SUPERSEDED = "superseded"  # replaced by a regenerated draft


class ReviewOutcome(StrEnum):
    """What staff did with a draft, as the review figures count it (``draft_reviews``)."""

    UNCHANGED = "unchanged"  # approved as generated (normalised edit distance 0)
    LIGHT_EDIT = "light_edit"  # approved after an edit of at most LIGHT_EDIT_MAX of the text
    REWRITTEN = "rewritten"  # approved after changing more than that
    REJECTED = "rejected"  # rejected with a reason
    REGENERATED = "regenerated"  # replaced by a new draft at staff's request


class SendStatus(StrEnum):
    PENDING = "pending"  # created, nothing handed to SMTP yet
    ATTEMPTED = "attempted"  # handed to SMTP; outcome not confirmed yet
    SENT = "sent"  # confirmed: accepted by the relay or found in the Sent folder
    FAILED = "failed"  # permanent refusal (5xx); not retried
    UNKNOWN = "unknown"  # outcome cannot be established; an admin decides, never resent blindly
    BOUNCED = "bounced"  # a delivery status notification (bounce) named it: it did not arrive;
    # the mail is back to review (re-approval sends it again with a new Message-ID)


class SendVerifiedBy(StrEnum):
    """How the outcome of a send attempt was established (send_attempts.verified_by)."""

    RELAY_250 = "relay_250"  # the relay answered 250 to our DATA: accepted for delivery
    SENT_FOLDER = "sent_folder"  # its Message-ID was found in the Sent folder (reconciliation)
    ADMIN = "admin"  # an admin decided (sends resolve): belief, not verified by the system
    BOUNCE = "bounce"  # a bounce (DSN) for its Message-ID or recipient arrived


class UserRole(StrEnum):
    """Roles of web UI users."""

    STAFF = "staff"  # reviews drafts: approve, edit, reject, regenerate
    ADMIN = "admin"  # staff rights plus failure console, audit log, retry and resolve


class Actor(StrEnum):
    """The pipeline's own processes as audit actors (people: core/actors.py)."""

    POLLER = "system:poller"  # the mailbox poll (cron, ``email-rag poll`` or ``idle``)
    WORKER = "worker:jobs"  # a worker running queue entries
    SCHEDULER = "system:scheduler"  # periodic maintenance: re-dispatch, stuck resets, sync
    SYSTEM = "system:internal"  # the application itself (token refresh, audit spool)
    WEB = "system:web"  # the web process where nobody is logged in (a refused login)


# --- Transition tables: from a status, the statuses a record may move to. -----------------
# A store (email_rag/db/stores.py, JobStore in email_rag/jobs/store.py) is the only code that writes a
# status column, and only along these tables; anything else is refused with
# ``TransitionRefused``. A terminal status has no way out. docs/states.md shows these tables.

MAIL_MOVES: dict[MailStatus, frozenset[MailStatus]] = {
    MailStatus.RECEIVED: frozenset({  # pipeline steps, or the entry dies
        MailStatus.CLASSIFIED, MailStatus.NO_REPLY, MailStatus.NO_REPLY_SUGGESTED,
        MailStatus.MANUAL, MailStatus.FAILED}),
    MailStatus.CLASSIFIED: frozenset({  # draft step, or the entry dies
        MailStatus.DRAFT_READY, MailStatus.NO_REPLY, MailStatus.MANUAL, MailStatus.FAILED}),
    MailStatus.NO_REPLY_SUGGESTED: frozenset({  # staff confirm, or ask for a reply
        MailStatus.NO_REPLY, MailStatus.CLASSIFIED, MailStatus.FAILED}),
    MailStatus.DRAFT_READY: frozenset({  # staff approve / reject / regenerate / no reply
        MailStatus.APPROVED, MailStatus.REJECTED, MailStatus.CLASSIFIED, MailStatus.RECEIVED,
        MailStatus.FAILED, MailStatus.NO_REPLY}),
    MailStatus.APPROVED: frozenset({  # the send job
        MailStatus.SENT, MailStatus.FAILED, MailStatus.MANUAL, MailStatus.DRAFT_READY}),
    MailStatus.MANUAL: frozenset({  # a human: retry, resolve, or decide the unknown send;
        # a bounce of the unknown send: back to review
        MailStatus.RECEIVED, MailStatus.CLASSIFIED, MailStatus.APPROVED, MailStatus.SENT,
        MailStatus.RESOLVED, MailStatus.FAILED, MailStatus.DRAFT_READY}),
    MailStatus.FAILED: frozenset({  # a human: retry (resumes), back to review, or resolve
        MailStatus.RECEIVED, MailStatus.CLASSIFIED, MailStatus.APPROVED, MailStatus.DRAFT_READY,
        MailStatus.RESOLVED}),
    # closed; staff may reopen a closed case (review/reopen.py): it is kept for a human
    MailStatus.NO_REPLY: frozenset({MailStatus.MANUAL}),
    MailStatus.SENT: frozenset({  # the reply bounced: back to review; or staff reopen it
        MailStatus.DRAFT_READY, MailStatus.MANUAL}),
    MailStatus.REJECTED: frozenset({MailStatus.MANUAL}),
    MailStatus.RESOLVED: frozenset({MailStatus.MANUAL}),
    MailStatus.HISTORY: frozenset(),  # a past case: never reopened
}
# The closed statuses staff may reopen (each may move to manual only, by a person).
MAIL_REOPENABLE = frozenset({MailStatus.NO_REPLY, MailStatus.SENT, MailStatus.REJECTED,
                             MailStatus.RESOLVED})

DRAFT_MOVES: dict[DraftStatus, frozenset[DraftStatus]] = {
    DraftStatus.PENDING_REVIEW: frozenset({
        DraftStatus.APPROVED, DraftStatus.REJECTED, DraftStatus.SUPERSEDED}),
    DraftStatus.STALE: frozenset({  # staff take a new look
        DraftStatus.APPROVED, DraftStatus.REJECTED, DraftStatus.SUPERSEDED}),
    DraftStatus.APPROVED: frozenset({  # the send job, or the admin's send decision
        DraftStatus.SENT, DraftStatus.FAILED, DraftStatus.STALE}),
    DraftStatus.FAILED: frozenset({DraftStatus.PENDING_REVIEW}),  # refused send back to review
    DraftStatus.SENT: frozenset({DraftStatus.STALE}),  # the reply bounced: staff look again
    DraftStatus.REJECTED: frozenset(),
    DraftStatus.SUPERSEDED: frozenset(),
}

SEND_MOVES: dict[SendStatus, frozenset[SendStatus]] = {
    SendStatus.PENDING: frozenset({SendStatus.ATTEMPTED}),
    SendStatus.ATTEMPTED: frozenset({  # the relay's answer, or reconciliation
        SendStatus.PENDING, SendStatus.SENT, SendStatus.FAILED, SendStatus.UNKNOWN}),
    SendStatus.UNKNOWN: frozenset({  # the admin's send decision (`sends resolve`), or a bounce
        SendStatus.SENT, SendStatus.PENDING, SendStatus.FAILED, SendStatus.BOUNCED}),
    SendStatus.FAILED: frozenset({SendStatus.PENDING}),  # approved again after back to review
    SendStatus.SENT: frozenset({SendStatus.BOUNCED}),  # a bounce names it
    SendStatus.BOUNCED: frozenset({SendStatus.PENDING}),  # approved again (new Message-ID)
}

JOB_MOVES: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.PROCESSING, JobState.DEAD}),  # claim; admin resolve
    JobState.PROCESSING: frozenset({  # finish, fail, hand-off / re-approval, stuck reset
        JobState.DONE, JobState.FAILED, JobState.DEAD, JobState.QUEUED}),
    JobState.FAILED: frozenset({  # claim when due; admin retry or resolve
        JobState.PROCESSING, JobState.QUEUED, JobState.DEAD}),
    JobState.DEAD: frozenset({JobState.QUEUED, JobState.DONE}),  # admin retry; back to review
    JobState.DONE: frozenset({JobState.QUEUED}),  # approved again, regenerate, resend, retry
}

MOVES: dict[str, dict] = {"email": MAIL_MOVES, "draft": DRAFT_MOVES,
                          "send_attempt": SEND_MOVES, "job": JOB_MOVES}
