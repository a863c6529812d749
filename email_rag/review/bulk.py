"""Bulk actions on the queue: assign, reject with a reason, mark "no reply", each on many
waiting drafts at once, with one outcome per item.

Every item is checked (its mailbox in the user's scope, else "does not exist") and done
by the same domain function as the single action, in its own transaction: one item
refused (another agent approved it meanwhile, it is not waiting any more) is reported
with its reason and never hides or undoes the others.

"Mark no reply" closes a waiting draft's mail without an answer: the draft is rejected
with the reason ``NO_REPLY_REASON`` (counted as rejected in the review figures) and the
mail moves draft_ready -> no_reply through its store, audited ``marked_no_reply``.

| situation | outcome of the item |
|---|---|
| draft of a mailbox outside the scope, or no such draft | refused: does not exist |
| draft no longer waiting (approved, rejected, replaced) | refused with its state, nothing changed |
| assign to someone who cannot see the mailbox | refused, nothing changed |
| already so (rejected already, owner unchanged) | reported as unchanged |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.actors import person
from ..core.errors import DRAFT_MISSING, BadInputError, DraftNotFoundError, StateRefused
from ..core.states import DraftStatus, MailStatus, ReviewOutcome
from ..sending import review
from ..sending.rules import OPEN
from . import assignment, desk

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

ACTIONS = ("assign", "reject", "no_reply")
MAX_ITEMS = 100
NO_REPLY_REASON = "no reply needed"


@dataclass(frozen=True)
class Outcome:
    draft_id: int
    result: str  # done | unchanged | refused
    why: str = ""


def mark_no_reply(svc: ServiceContext, draft_id: int, by: str) -> str:
    """Close the waiting draft's mail without a reply; "done", or "unchanged" when it was
    closed so already."""
    by = person(by)
    stores = svc.stores
    with svc.db.transaction() as cur:
        draft = stores.drafts.locked(cur, draft_id)
        if draft is None:
            raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
        if draft.status == DraftStatus.REJECTED and draft.reject_reason == NO_REPLY_REASON:
            return "unchanged"
        if draft.status not in OPEN:
            raise StateRefused(f"draft {draft_id} is {draft.status}, not waiting for review")
        stores.drafts.move(cur, draft_id, DraftStatus.REJECTED, actor=by, event="rejected",
                           query="drafts_reject", row=draft, detail={"reason": NO_REPLY_REASON},
                           by=by, reject_reason=NO_REPLY_REASON)
        stores.mails.move(cur, draft.email_id, MailStatus.NO_REPLY, actor=by,
                          event="marked_no_reply", reason=f"{NO_REPLY_REASON} ({by})",
                          expect=(MailStatus.DRAFT_READY,), detail={"draft_id": draft_id})
        stores.rows_of(cur).reviewed(draft_id, ReviewOutcome.REJECTED)
    return "done"


def _one(svc: ServiceContext, scope: frozenset[int] | None, by: str, action: str, draft_id: int,
         to: str | None, reason: str) -> Outcome:
    desk.require_draft(svc, scope, draft_id)
    if action == "reject":
        r = review.reject(svc, draft_id, by, reason)
        return Outcome(draft_id, "unchanged" if r.action == "already_rejected" else "done")
    if action == "no_reply":
        return Outcome(draft_id, mark_no_reply(svc, draft_id, by))
    state = desk.draft_state(svc, draft_id)
    if state is None:
        raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
    if state.status not in OPEN:
        raise StateRefused(f"draft {draft_id} is {state.status}, not waiting for review")
    before, after = assignment.assign(svc, state.email_id, desk.draft_mailbox(svc, draft_id) or 0,
                                      to, person(by))
    return Outcome(draft_id, "unchanged" if before == after else "done")


def run(svc: ServiceContext, scope: frozenset[int] | None, by: str, action: str,
        draft_ids: list[int], to: str = "", reason: str = "") -> list[Outcome]:
    """Do ``action`` on every draft (at most ``MAX_ITEMS``, each once, in the given order);
    the outcome of each. A missing reason (reject) or an unknown action refuses the whole
    request before anything is done (BadInputError)."""
    if action not in ACTIONS:
        raise BadInputError(f"unknown bulk action {action!r}")
    reason = " ".join((reason or "").split())
    if action == "reject" and not reason:
        raise BadInputError("a reason is required to reject")
    ids = list(dict.fromkeys(draft_ids))
    if not ids:
        raise BadInputError("no draft was selected")
    if len(ids) > MAX_ITEMS:
        raise BadInputError(f"at most {MAX_ITEMS} drafts at once")
    outcomes = []
    for draft_id in ids:
        try:
            outcomes.append(_one(svc, scope, by, action, draft_id, to.strip() or None, reason))
        except (DraftNotFoundError, StateRefused, BadInputError) as e:
            outcomes.append(Outcome(draft_id, "refused", str(e)))
    return outcomes
