"""A user's saved views of the review queue: a name and the queue's filters (mailbox,
category, search words, sort, view, state, owner, days), kept per user (``saved_views``,
migration 0375) and offered above the queue as links. Only the queue's own keys are kept;
a view is the user's alone (nobody else lists or deletes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode

from ..core.errors import BadInputError
from ..core.rows import FromRow
from ..db import sql
from .desk import FILTER_KEYS

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

MAX_NAME = 100
MAX_VIEWS = 50


@dataclass(frozen=True)
class SavedView(FromRow):
    id: int
    name: str
    query: str

    @property
    def href(self) -> str:
        return "/queue" + (f"?{self.query}" if self.query else "")


def clean_query(params: dict[str, str]) -> str:
    """The queue's filters of ``params`` as a query string (other keys dropped)."""
    kept = {k: str(params[k])[:200] for k in FILTER_KEYS if params.get(k)}
    return urlencode(kept)


def of_user(svc: ServiceContext, user_id: int) -> list[SavedView]:
    return SavedView.from_rows(svc.db.fetchall(sql("saved_views_of_user"), {"user_id": user_id}))


def save(svc: ServiceContext, user_id: int, name: str, query: str) -> SavedView:
    """Keep the filters (a queue query string) under ``name``; the same name again replaces
    them."""
    name = " ".join((name or "").split())
    if not name:
        raise BadInputError("give the view a name")
    if len(name) > MAX_NAME:
        raise BadInputError(f"the name is longer than {MAX_NAME} characters")
    cleaned = clean_query(dict(parse_qsl(query or "")))
    mine = of_user(svc, user_id)
    if len(mine) >= MAX_VIEWS and all(v.name != name for v in mine):
        raise BadInputError(f"at most {MAX_VIEWS} saved views; delete one first")
    svc.db.execute(sql("saved_view_set"), {"user_id": user_id, "name": name, "query": cleaned})
    return next(v for v in of_user(svc, user_id) if v.name == name)


def delete(svc: ServiceContext, user_id: int, view_id: int) -> bool:
    """Delete one of the user's views; False when it is not theirs (or gone)."""
    return svc.db.execute(sql("saved_view_delete"), {"id": view_id, "user_id": user_id}) == 1
