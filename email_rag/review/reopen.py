"""Reopen: a closed case (sent, rejected, no reply, resolved) back into work.

The mail moves to ``manual`` (kept for a human) through its store, along the transition
table (``MAIL_REOPENABLE`` in email_rag/core/states.py), with the audit event ``reopened``
under the person and the reason as the mail's status reason. From there staff write a
reply by hand on the mail page (``sending.handwrite``), put it aside or resolve it; its
earlier drafts and send attempts stay as they were (a sent reply stays sent).

| situation | outcome |
|---|---|
| no reason given, or longer than ``MAX_REASON`` | refused (BadInputError), nothing written |
| the mail is open (in review, in the pipeline, approved) or a history mail | refused (TransitionRefused / StateRefused), nothing written |
| two people reopen it at once | one moves it; the other is refused (it is manual now) |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.actors import person
from ..core.errors import (
    MAIL_MISSING,
    BadInputError,
    DraftNotFoundError,
    PermanentError,
    StateRefused,
)
from ..core.states import MAIL_REOPENABLE, MailStatus

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

MAX_REASON = 500
PREFIX = "reopened by "  # the status reason of a reopened mail: "reopened by user:NAME: why"


def reopened_reason(status_reason: str | None) -> str | None:
    """The reason a reopened mail carries (None for any other status reason: those may be
    internal errors, not for every page)."""
    return status_reason if status_reason and status_reason.startswith(PREFIX) else None


def reopen(svc: ServiceContext, email_id: int, by: str, reason: str) -> str:
    """Move the closed mail to ``manual``; returns the status it had. The caller checked
    that the user may see the mail's mailbox."""
    by = person(by)
    reason = " ".join((reason or "").split())
    if not reason:
        raise BadInputError("say why the case is reopened")
    if len(reason) > MAX_REASON:
        raise BadInputError(f"the reason is longer than {MAX_REASON} characters")
    with svc.db.transaction() as cur:
        try:
            mail = svc.stores.mails.get(cur, email_id)
        except PermanentError:
            raise DraftNotFoundError(MAIL_MISSING % {"id": email_id}) from None
        if mail.status not in MAIL_REOPENABLE:
            raise StateRefused(f"mail {email_id} is {mail.status}, not closed; only a sent, "
                               "rejected, resolved or no-reply case is reopened")
        svc.stores.mails.move(cur, email_id, MailStatus.MANUAL, actor=by, event="reopened",
                              reason=f"{PREFIX}{by}: {reason}", row=mail,
                              expect=MAIL_REOPENABLE)
    return str(mail.status)
