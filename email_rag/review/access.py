"""Who may see and act on a draft or a mail: the user's mailbox scope.

Staff only see, open and act on the mailboxes they are assigned to (``require_draft`` /
``require_mail`` are called before every action); admins (scope None) see all.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| draft or mail of a mailbox outside the user's scope | no | yes: answered as "not found", nothing changed | an admin assigns the mailbox |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import DRAFT_MISSING, MAIL_MISSING, DraftNotFoundError
from ..db import sql

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext


def draft_mailbox(svc: ServiceContext, draft_id: int) -> int | None:
    """The mailbox of a draft's mail (None: no such draft)."""
    return _mailbox_of(svc, "desk_draft_mailbox", draft_id)


def mail_mailbox(svc: ServiceContext, email_id: int) -> int | None:
    """The mailbox of a mail (None: no such mail)."""
    return _mailbox_of(svc, "desk_mail_mailbox", email_id)


def require_draft(svc: ServiceContext, scope: frozenset[int] | None, draft_id: int) -> None:
    """The draft exists and its mailbox is in the user's scope; otherwise "not found"
    (a staff member does not learn that drafts of other mailboxes exist)."""
    if not in_scope(scope, _mailbox_of(svc, "desk_draft_mailbox", draft_id)):
        raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})


def require_mail(svc: ServiceContext, scope: frozenset[int] | None, email_id: int) -> None:
    if not in_scope(scope, _mailbox_of(svc, "desk_mail_mailbox", email_id)):
        raise DraftNotFoundError(MAIL_MISSING % {"id": email_id})


def in_scope(scope: frozenset[int] | None, mailbox_id: int | None) -> bool:
    """A record of this mailbox (None: no such record) may be seen by a user of ``scope``
    (None: an admin, every mailbox)."""
    return mailbox_id is not None and (scope is None or mailbox_id in scope)


def _mailbox_of(svc: ServiceContext, query: str, record_id: int) -> int | None:
    found = svc.db.fetchone(sql(query), {"id": record_id})
    return None if found is None else int(found["mailbox_id"])


def visible_mailboxes(svc: ServiceContext, scope: frozenset[int] | None) -> list[str]:
    """The mailbox names a user may filter by."""
    return [r["name"] for r in svc.db.fetchall(sql("desk_mailboxes"))
            if scope is None or int(r["id"]) in scope]
