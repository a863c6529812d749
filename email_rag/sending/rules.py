"""The review and send decisions, as pure functions over typed records.

Records (and the caller's input) in, a decision or a ``StateRefused``-family error out: no
cursor, no SQL. ``sending.review`` and ``sending.admin`` read the records (locked), ask
these, and write what they decide through the stores; the transition tables themselves
stay in email_rag/core/states.py (``StatusStore.allowed``).

| action | refused when | a repeat (double click, second tab) |
|---|---|---|
| approve | the page showed another version (``DraftConflictError``); the draft is not pending or stale; no reply address; empty text; a FLAGGED draft unchanged | approved or sent already: no-op, says so |
| reject | another version; not pending or stale; no reason | rejected already: no-op |
| regenerate | not pending or stale; the mail's job is running | superseded already: no-op |
| send decision (admin) | the attempt is not ``unknown``; a resend with delivery evidence unless confirmed | - |
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from ..core.catalog import N_
from ..core.errors import (
    BadInputError,
    DeliveryEvidenceError,
    DraftConflictError,
    StateRefused,
    TransitionRefused,
)
from ..core.records import Draft, ReplyMail, SendAttempt
from ..core.states import DraftStatus, JobState, MailStatus, ReviewOutcome, SendStatus
from ..mail.addresses import ReplyChoice, stored_reply

OPEN = (DraftStatus.PENDING_REVIEW, DraftStatus.STALE)  # the drafts staff act on


def check_seen(draft: Draft, seen: str | None) -> None:
    """Optimistic concurrency: ``seen`` is the version the agent's page showed (None: no
    check, e.g. the CLI). Asked with the row locked."""
    if seen is not None and draft.seen != seen:
        raise DraftConflictError(draft)


def reply_choice(mail: ReplyMail) -> ReplyChoice:
    """Who the reply goes to: the decision stored with the mail (addresses.stored_reply), as
    the draft page shows it, the approval checks it and the sender addresses it."""
    return stored_reply(dataclasses.asdict(mail))


# --- approve ---
@dataclass(frozen=True)
class Approval:
    body_final: str  # the text that will be sent
    diff: str  # unified diff draft -> sent ("" when unchanged)
    recipient: str
    distance: float = 0.0  # normalised edit distance draft -> sent (``edit_distance``)

    @property
    def outcome(self) -> ReviewOutcome:
        return edit_outcome(self.distance)


# Why a decision on a draft is refused, in words staff read (the web UI translates them:
# ``REFUSALS`` read back with ``core.catalog.read_back``)
NOT_APPROVABLE = N_("draft %(id)s is %(status)s; only a pending or stale draft can be approved")
NOT_REJECTABLE = N_("draft %(id)s is %(status)s; only a pending or stale draft can be rejected")
NOT_REGENERABLE = N_("draft %(id)s is %(status)s; only a pending or stale draft can be "
                     "regenerated")
NOBODY_TO_ANSWER = N_("nobody to send the reply to (%(rule)s); nothing approved")
EMPTY_REPLY = N_("the reply text is empty; nothing approved")
FLAGGED_UNCHANGED = N_("draft %(id)s is FLAGGED by the automatic checks (their findings are "
                       "on its page and in `email-rag drafts show`); it cannot be approved "
                       "unchanged: edit the reply (or regenerate or reject it)")
NO_REASON = N_("a reason is required to reject a draft")
BEING_PROCESSED = N_("mail %(mail)s is being processed right now (job %(job)s); nothing "
                     "changed, try again in a moment")
REFUSALS = (NOT_APPROVABLE, NOT_REJECTABLE, NOT_REGENERABLE, NOBODY_TO_ANSWER, EMPTY_REPLY,
            FLAGGED_UNCHANGED, NO_REASON, BEING_PROCESSED)


def already_approved(draft: Draft, seen: str | None, allowed: bool) -> bool:
    """True: approved (or sent) already, nothing to do; False: approve it. ``allowed``: the
    draft store's transition table allows pending/stale -> approved
    (``DraftStore.allowed``). Refused: another version than the page showed, or a status
    that cannot be approved."""
    check_seen(draft, seen)
    if allowed:
        return False
    if draft.status in (DraftStatus.APPROVED, DraftStatus.SENT):
        return True
    raise StateRefused(NOT_APPROVABLE % {"id": draft.id, "status": draft.status})


def approval(draft: Draft, reply: ReplyChoice, edited_body: str | None) -> Approval:
    """What an approval writes: the final text, its diff and the recipient."""
    if not reply.ok:
        raise BadInputError(NOBODY_TO_ANSWER % {"rule": reply.rule})
    body_final = draft.body_draft if edited_body is None else edited_body
    if not body_final.strip():
        raise BadInputError(EMPTY_REPLY)
    diff = edit_diff(draft.body_draft, body_final)
    if draft.check_flags and not diff:
        raise StateRefused(FLAGGED_UNCHANGED % {"id": draft.id})
    return Approval(body_final, diff, reply.addr or "",
                    edit_distance(draft.body_draft, body_final))


# How much staff changed a draft: the normalised Levenshtein distance between the generated
# and the approved text (edits of single characters / the longer text's length: 0 the same,
# 1 nothing in common), line endings and trailing spaces ignored. Up to LIGHT_EDIT_MAX is a
# light edit. Measured on the 70 reference replies of the bench corpus (~270 characters):
# a new greeting 0.01-0.08, a sentence added 0.05-0.12, the sign-off replaced 0.05-0.25, one
# of two or three sentences dropped 0.13-0.56; two different replies in one language
# 0.51-0.66 (5th-95th percentile; 3 of 578 pairs below 0.3, replies sharing a sentence). So
# above 0.3 staff wrote much of the reply themselves (docs/web.md, "Review figures").
LIGHT_EDIT_MAX = 0.3


def edit_distance(generated: str, approved: str) -> float:
    """The normalised edit distance (0..1) between the generated and the approved text."""
    a, b = _comparable(generated), _comparable(approved)
    return 0.0 if a == b else round(float(Levenshtein.normalized_distance(a, b)), 4)


def edit_outcome(distance: float) -> ReviewOutcome:
    """unchanged (0), light edit (up to ``LIGHT_EDIT_MAX``) or rewritten."""
    if distance <= 0:
        return ReviewOutcome.UNCHANGED
    return ReviewOutcome.LIGHT_EDIT if distance <= LIGHT_EDIT_MAX else ReviewOutcome.REWRITTEN


def _comparable(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def edit_diff(before: str, after: str) -> str:
    if before == after:
        return ""
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        "draft", "sent", n=1))


@dataclass(frozen=True)
class Rearm:
    query: str  # the SendStore UPDATE that arms the attempt again
    new_message_id: bool  # a bounced copy keeps its Message-ID in the Sent folder
    why: str


def rearm(send: SendAttempt) -> Rearm | None:
    """An existing attempt on (re-)approval: refused by the relay -> pending, same
    Message-ID; bounced -> pending with a new one; otherwise left as it is."""
    if send.status == SendStatus.FAILED:
        return Rearm("sends_rearm", False, "approved again after the relay refused it")
    if send.status == SendStatus.BOUNCED:
        return Rearm("sends_rearm_new_id", True, "approved again after the reply bounced")
    return None


# --- reject, regenerate ---
def already_rejected(draft: Draft, seen: str | None, reason: str) -> bool:
    if not reason.strip():
        raise BadInputError(NO_REASON)
    check_seen(draft, seen)
    if draft.status == DraftStatus.REJECTED:
        return True
    if draft.status not in OPEN:
        raise StateRefused(NOT_REJECTABLE % {"id": draft.id, "status": draft.status})
    return False


def already_superseded(draft: Draft, job_state: JobState | None, job_id: int | None) -> bool:
    """Regenerate: True when the draft was replaced already (nothing to do)."""
    if draft.status == DraftStatus.SUPERSEDED:
        return True
    if draft.status not in OPEN:
        raise StateRefused(NOT_REGENERABLE % {"id": draft.id, "status": draft.status})
    if job_state == JobState.PROCESSING:
        raise StateRefused(BEING_PROCESSED % {"mail": draft.email_id, "job": job_id})
    return False


# --- the admin's send decision ---
DECISIONS: dict[str, tuple[SendStatus, DraftStatus | None, MailStatus]] = {
    # decision -> (attempt, draft, mail)
    "mark_sent": (SendStatus.SENT, DraftStatus.SENT, MailStatus.SENT),
    "resend": (SendStatus.PENDING, None, MailStatus.APPROVED),
    "give_up": (SendStatus.FAILED, DraftStatus.FAILED, MailStatus.RESOLVED),
}


def send_decision(attempt: SendAttempt, decision: str
                  ) -> tuple[SendStatus, DraftStatus | None, MailStatus]:
    """The moves of an admin's decision about an attempt whose outcome is unknown."""
    if decision not in DECISIONS:
        raise BadInputError("decision must be mark_sent, resend or give_up")
    send_to = DECISIONS[decision][0]
    if attempt.status != SendStatus.UNKNOWN:
        raise TransitionRefused("send_attempt", attempt.id, attempt.status, send_to,
                                f"it is {attempt.status}, not unknown: there is nothing to "
                                "decide")
    return DECISIONS[decision]


def check_resend(attempt: SendAttempt, evidence: list[str], despite_evidence: bool) -> None:
    """A resend while something speaks for delivery needs the admin's confirmation."""
    if evidence and not despite_evidence:
        raise DeliveryEvidenceError(
            f"send attempt {attempt.id} was NOT resent: there is evidence it may have "
            "arrived: " + "; ".join(evidence) + ". Check the customer's inbox or the "
            "relay's log; to send it once more anyway, confirm the resend despite this "
            "evidence (CLI: --despite-evidence).")
