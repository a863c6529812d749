"""Edits saved as the agent types (``draft_edits``), who else is editing, and what happened to
a draft (its state as the desk tells it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.actors import shown
from ..core.catalog import N_
from ..core.records import Draft
from ..core.rows import FromRow
from ..core.states import DraftStatus
from ..db import sql
from ..db.busy import written_when_busy

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext


EDITING_WINDOW_S = 600  # another agent's edit younger than this shows "being edited by X"


MAX_EDIT_CHARS = 100_000


def save_edit(svc: ServiceContext, draft_id: int, user_id: int, body: str, by: str) -> None:
    """The agent's autosave (``by``: the agent's actor, for an audited repeat)."""
    written_when_busy(svc.db, "save_edit", by, "draft", draft_id, "desk_edit_save",
                      {"draft_id": draft_id, "user_id": user_id, "body": body[:MAX_EDIT_CHARS]})


@dataclass(frozen=True)
class OwnEdit(FromRow):
    """The agent's own autosaved text of a draft."""

    body: str
    saved_at: datetime | None = None


@dataclass(frozen=True)
class OtherEditor(FromRow):
    """Another agent who saved an edit of the draft recently."""

    name: str
    saved_at: datetime | None = None
    ago_s: int | None = None


def own_edit(svc: ServiceContext, draft_id: int, user_id: int) -> OwnEdit | None:
    row = svc.db.fetchone(sql("desk_edit_get"), {"draft_id": draft_id, "user_id": user_id})
    return None if row is None else OwnEdit.from_row(row)


def discard_edit(svc: ServiceContext, draft_id: int, user_id: int, by: str) -> None:
    written_when_busy(svc.db, "discard_edit", by, "draft", draft_id, "desk_edit_discard",
                      {"draft_id": draft_id, "user_id": user_id})


def others_editing(svc: ServiceContext, draft_id: int, user_id: int) -> list[OtherEditor]:
    return OtherEditor.from_rows(svc.db.fetchall(sql("desk_edit_others"), {
        "draft_id": draft_id, "user_id": user_id, "window_s": EDITING_WINDOW_S}))


def draft_state(svc: ServiceContext, draft_id: int) -> Draft | None:
    """The draft's status and who moved it (no texts): what an open page polls."""
    row = svc.db.fetchone(sql("desk_draft_state"), {"id": draft_id})
    return None if row is None else Draft.from_row(row)


def what_happened(draft: Draft, zone: Any = None) -> tuple[str, dict[str, str]]:
    """The other agent's action on a draft, as a message with its values (for a conflict;
    the web UI translates it); times in ``zone``."""
    status = draft.status
    if status in (DraftStatus.APPROVED, DraftStatus.SENT):
        return N_("%(who)s approved it at %(at)s"), {
            "who": _who(draft.approved_by), "at": _at(draft.approved_at, zone)}
    if status == DraftStatus.REJECTED:
        return N_("%(who)s rejected it (%(reason)s)"), {
            "who": _who(draft.rejected_by), "reason": str(draft.reject_reason or "")}
    if status == DraftStatus.SUPERSEDED:
        return N_("it was replaced by a regenerated draft"), {}
    if status == DraftStatus.STALE:
        return N_("it was marked stale (%(reason)s)"), {
            "reason": str(draft.stale_reason or "a newer mail arrived")}
    return N_("it changed (now %(status)s)"), {"status": str(status)}


def _who(actor: Any) -> str:
    return shown(actor, "someone")


def _at(value: Any, zone: Any = None) -> str:
    if not hasattr(value, "strftime"):
        return str(value or "")
    if zone is not None and value.tzinfo is None:  # stored as UTC without tzinfo
        from datetime import UTC

        value = value.replace(tzinfo=UTC).astimezone(zone)
    return value.strftime("%H:%M")
