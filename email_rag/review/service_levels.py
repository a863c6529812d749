"""Due times of waiting mails (docs/web.md, "Service levels").

A mailbox's ``service_level`` (``MailboxConfig``) says its business hours and the
first-response target; ``email_rag.core.service_levels.due_at`` computes a mail's due time
from when the customer sent it (the queue's waiting time). The desk keeps it with the mail
(``emails.due_at``, with the fingerprint of the rule it was computed under in
``due_rule``), so the queue sorts by it through its index (sort ``due``, kept by the
triggers of migration 0380).

``compute`` fills the due times not computed yet (an index range read when there are
none, so the queue and draft pages call it before every read; at most 1,000 a call, so
after an upgrade with a long queue the first pages each take their share, about a second
per 1,000 on 2 busy cores, and the rest sort last until computed); ``forget_changed`` clears
the due times of waiting mails whose mailbox's service level changed (the web app calls it
at start).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| a new waiting draft | - | yes: its 'due' key marks it not computed | the next queue or draft page computes it |
| the service level changed | - | yes | at the next start of the web app the waiting mails are computed again |
| a mailbox without a service level | - | yes: rule 'none', no due time, sorted after the due ones by waiting time | - |
| two web processes compute the same mail | - | yes: the UPDATE only writes a mail not computed yet; a deadlock or lock wait between them rolls back this batch | the next page computes what is left |
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import DatabaseBusyError
from ..core.service_levels import due_at
from ..core.settings import MailboxConfig
from ..db import Database, slot_params, sql

NONE = "none"  # due_rule of a mail whose mailbox has no service level
BATCH = 500


def _levels(db: Database, mailboxes: Sequence[MailboxConfig]) -> dict[int, MailboxConfig | None]:
    by_name = {b.name: b for b in mailboxes}
    return {int(r["id"]): by_name.get(str(r["name"])) for r in db.fetchall(sql("sla_mailboxes"))}


def compute(db: Database, mailboxes: Sequence[MailboxConfig], limit: int = 2 * BATCH) -> int:
    """Compute the due times of waiting mails that have none yet (at most ``limit``, the
    longest waiting first); how many were written."""
    rows = db.fetchall(sql("sla_uncomputed"), {"limit": limit})
    if not rows:
        return 0
    levels = _levels(db, mailboxes)
    updates = []
    for r in rows:
        box = levels.get(int(r["mailbox_id"]))
        level = box.service_level if box else None
        if level is None or r["waiting_since"] is None:
            updates.append({"id": r["email_id"], "due_at": None, "rule": NONE})
        else:
            due = due_at(r["waiting_since"], level.business_hours())
            updates.append({"id": r["email_id"], "due_at": due.replace(tzinfo=None),
                            "rule": level.fingerprint})
    for i in range(0, len(updates), BATCH):
        try:
            with db.transaction() as cur:
                cur.executemany(sql("sla_set_due"), updates[i:i + BATCH])
        except DatabaseBusyError:  # another page computes the same mails: theirs stands
            return i
    return len(updates)


def forget_changed(db: Database, mailboxes: Sequence[MailboxConfig]) -> None:
    """Clear the due times computed under another rule than the mailbox's service level
    now (waiting mails only); ``compute`` writes them again."""
    for mailbox_id, box in _levels(db, mailboxes).items():
        level = box.service_level if box else None
        ids = [int(r["id"]) for r in db.fetchall(sql("sla_changed"), {
            "mailbox_id": mailbox_id, "rule": level.fingerprint if level else NONE})]
        for i in range(0, len(ids), BATCH):
            chunk = ids[i:i + BATCH]
            db.execute(sql("sla_forget", ids=len(chunk)), slot_params(ids=chunk))
