"""The classification corrected by a human: category, language and priority set by hand,
audited before and after, repeated inside the action when the database is busy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import DRAFT_MISSING, DraftNotFoundError
from ..core.records import RecordedExample
from ..db import examples, figures, sql
from ..db.audit import AuditEvent
from ..db.busy import repeated_when_busy

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext


def classification_choices() -> dict[str, list[str]]:
    from ..classification.values import Category, Language, Priority

    return {"categories": [c.value for c in Category], "languages": [c.value for c in Language],
            "priorities": [c.value for c in Priority]}


def correct_classification(svc: ServiceContext, draft_id: int, by: str, category: str,
                           language: str, priority: str) -> dict[str, Any]:
    """Set the mail's category, language and priority by hand, with an audit event
    (``classification_corrected``, before and after). Values outside the enums are refused.
    Returns the changes (empty when nothing differed)."""
    from ..core.errors import BadInputError
    from ..db.audit import write_events

    choices = classification_choices()
    new = {"category": category, "language": language, "priority": priority}
    lists = {"category": "categories", "language": "languages", "priority": "priorities"}
    for field, value in new.items():
        if value not in choices[lists[field]]:
            raise BadInputError(f"{field} {value!r} is not one of the known values")

    def correct(repeats: list[AuditEvent]) -> tuple[dict[str, Any], RecordedExample | None]:
        with svc.db.transaction() as cur:
            mail = cur.fetchone(sql("desk_classification_for_update"), {"draft_id": draft_id})
            if mail is None:
                raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
            changes = {k: [mail[k], v] for k, v in new.items() if mail[k] != v}
            if changes:
                cur.execute(sql("desk_classification_set"), {"id": mail["id"], **new})
                write_events(cur, [AuditEvent(by, "email", mail["id"],
                                              "classification_corrected",
                                              detail={"draft_id": draft_id,
                                                      "changes": changes})])
                figures.corrected(cur, mail["id"])
            example = examples.record(cur, mail["id"], "correction")
            write_events(cur, repeats)
        return changes, example

    changes, example = repeated_when_busy("correct_classification", by, "draft", draft_id,
                                          correct)
    examples.embed_recorded(svc.db, svc, example)
    return changes
