"""The review figures: how much staff changed the drafts, how often they rejected or
regenerated them, and how often they corrected a classification.

Each figure is a row written in the transaction of what it counts, so it exists exactly
when that action does and nothing is recomputed from the drafts or the audit log:

| action (module)                                    | writes                                  |
|----------------------------------------------------|-----------------------------------------|
| staff approve a draft (sending.review)             | ``draft_reviews``: unchanged / light_edit / rewritten, edit distance |
| staff reject a draft (sending.review)              | ``draft_reviews``: rejected             |
| staff regenerate a draft (sending.regenerate)      | ``draft_reviews``: regenerated           |
| the classify step's checkpoint (pipeline.classify) | ``classified_mails``: the category given |
| staff correct the classification (review.corrections), or ask for a reply the model had not suggested (review.no_reply) | ``classified_mails.corrected`` |

Read per mailbox, category and week (the status page, ``by_week``) and in total (the
counters of /metrics, ``totals``). Rates: rejected, regenerated and each edit class over
the drafts decided; corrected over the mails classified.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| the action's transaction rolls back | - | yes | no figure, as no action |
| a draft decided again (approved again after a refusal or bounce) | - | yes | its latest decision counts, once |
| a mail classified again (admin retry) | - | yes | its latest category and week; a correction stays |
| a mail corrected twice | - | yes | counted once |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..core.actors import shown
from ..core.jsonvalue import JsonObject
from ..core.states import ReviewOutcome
from .connection import Cursor, Database
from .queries import sql

APPROVED = (ReviewOutcome.UNCHANGED, ReviewOutcome.LIGHT_EDIT, ReviewOutcome.REWRITTEN)


def draft_decided(
    cur: Cursor, draft_id: int, outcome: ReviewOutcome, distance: float | None = None,
    agent: str = "",
) -> None:
    """Count a staff decision on a draft (inside the caller's transaction); ``agent``: who
    decided (``user:NAME``)."""
    cur.execute(
        sql("figures_draft_decided"),
        {"draft_id": draft_id, "outcome": str(outcome), "edit_distance": distance,
         "agent": agent[:100]},
    )


def classified(cur: Cursor, email_id: int, category: str) -> None:
    """Count a classified mail with the category it was given (the classify checkpoint)."""
    cur.execute(sql("figures_classified"), {"email_id": email_id, "category": category})


def corrected(cur: Cursor, email_id: int) -> None:
    """Count a staff correction of the mail's classification (once per mail)."""
    cur.execute(sql("figures_corrected"), {"email_id": email_id})


@dataclass
class Figures:
    """The figures of one group (a mailbox, category and week; or a mailbox and category)."""

    mailbox: str
    category: str
    week: date | None = None
    outcomes: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(map(str, ReviewOutcome), 0)
    )
    distance_sum: float = 0.0  # over the approved drafts
    classified: int = 0
    corrected: int = 0
    agent: str = ""  # the reports' grouping per agent (``user:NAME``); '' otherwise

    @property
    def week_label(self) -> str:
        """ISO week, e.g. ``2026-W49``."""
        if self.week is None:
            return ""
        year, week, _ = self.week.isocalendar()
        return f"{year}-W{week:02d}"

    @property
    def decided(self) -> int:
        return sum(self.outcomes.values())

    @property
    def approved(self) -> int:
        return sum(self.outcomes[str(o)] for o in APPROVED)

    def rate(self, outcome: ReviewOutcome) -> float | None:
        """The share of the decided drafts with this outcome (None: none decided)."""
        return _ratio(self.outcomes[str(outcome)], self.decided)

    @property
    def mean_distance(self) -> float | None:
        """The mean edit distance of the approved drafts (None: none approved)."""
        return _ratio(self.distance_sum, self.approved)

    @property
    def correction_rate(self) -> float | None:
        return _ratio(self.corrected, self.classified)

    def as_dict(self) -> JsonObject:
        """The JSON of the status page and ``email-rag status --json``."""
        return {
            "mailbox": self.mailbox,
            "category": self.category,
            "week": self.week_label,
            "drafts_decided": self.decided,
            **self.outcomes,
            "mean_edit_distance": self.mean_distance,
            **{f"{o}_rate": self.rate(o) for o in ReviewOutcome},
            "classified": self.classified,
            "corrected": self.corrected,
            "correction_rate": self.correction_rate,
        }


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def combine(
    drafts: Iterable[Mapping[str, Any]], mails: Iterable[Mapping[str, Any]], by_week: bool
) -> list[Figures]:
    """The rows of ``figures_drafts_*`` and ``figures_classified_*`` as one ``Figures`` per
    group, newest week first, then by mailbox and category."""
    groups: dict[tuple[str, str, date | None], Figures] = {}

    def group(row: Mapping[str, Any]) -> Figures:
        week = row["week"] if by_week else None
        key = (str(row["mailbox"]), str(row["category"] or ""), week)
        if key not in groups:
            groups[key] = Figures(*key)
        return groups[key]

    for r in drafts:
        f = group(r)
        f.outcomes[str(r["outcome"])] = f.outcomes.get(str(r["outcome"]), 0) + int(r["n"])
        f.distance_sum += float(r["distance_sum"] or 0)
    for r in mails:
        f = group(r)
        f.classified += int(r["classified"])
        f.corrected += int(r["corrected"] or 0)
    return sorted(
        groups.values(),
        key=lambda f: (-(f.week.toordinal() if f.week else 0), f.mailbox, f.category),
    )


def by_week(cur: Cursor | Database, weeks: int = 8) -> list[Figures]:
    """Per mailbox, category and week, for this week and the ``weeks`` before it."""
    params = {"weeks": weeks}
    return combine(
        cur.fetchall(sql("figures_drafts_by_week"), params),
        cur.fetchall(sql("figures_classified_by_week"), params),
        by_week=True,
    )


def totals(cur: Cursor | Database) -> list[Figures]:
    """Per mailbox and category, since the beginning (the counters of /metrics)."""
    return combine(
        cur.fetchall(sql("figures_drafts_total")),
        cur.fetchall(sql("figures_classified_total")),
        by_week=False,
    )


REPORT_BY = ("week", "mailbox", "agent")


@dataclass
class ReportRow:
    """One row of the reports page: the review figures of a group and its replies' times
    (seconds; None: no reply accepted by the relay in the group)."""

    figures: Figures
    sent: int = 0
    first_response_p50: float | None = None
    first_response_mean: float | None = None
    time_to_send_p50: float | None = None
    with_due: int = 0
    due_met: int = 0

    @property
    def agent(self) -> str:
        return shown(self.figures.agent)

    @property
    def edited(self) -> int:
        o = self.figures.outcomes
        return o[str(ReviewOutcome.LIGHT_EDIT)] + o[str(ReviewOutcome.REWRITTEN)]


def report(cur: Cursor | Database, weeks: int = 8, by: str = "agent") -> list[ReportRow]:
    """Per week and, ``by`` ``mailbox`` or ``agent``, per mailbox or agent (``week``: the
    whole team), for this week and the ``weeks`` before it; newest week first. Two grouped
    reads: the decisions (``draft_reviews``, the review figures' rows) and the replies the
    relay accepted (``send_attempts`` by ``sent_at``)."""
    by = by if by in REPORT_BY else "agent"
    params = {"weeks": weeks, "by_mailbox": by == "mailbox", "by_agent": by == "agent"}
    rows: dict[tuple[date, str, str], ReportRow] = {}

    def row(r: Mapping[str, Any]) -> ReportRow:
        key = (r["week"], str(r["mailbox"]), str(r["agent"]))
        if key not in rows:
            rows[key] = ReportRow(Figures(key[1], "", key[0], agent=key[2]))
        return rows[key]

    for r in cur.fetchall(sql("figures_drafts_report"), params):
        f = row(r).figures
        f.outcomes[str(r["outcome"])] = f.outcomes.get(str(r["outcome"]), 0) + int(r["n"])
        f.distance_sum += float(r["distance_sum"] or 0)
    for r in cur.fetchall(sql("figures_replies_report"), params):
        one = row(r)
        one.sent = int(r["sent"])
        one.first_response_p50 = _float(r["first_p50"])
        one.first_response_mean = _float(r["first_mean"])
        one.time_to_send_p50 = _float(r["send_p50"])
        one.with_due, one.due_met = int(r["with_due"] or 0), int(r["due_met"] or 0)
    return sorted(rows.values(), key=lambda x: (-x.figures.week.toordinal()  # type: ignore[union-attr]
                                                 if x.figures.week else 0,
                                                 x.figures.mailbox, x.agent))


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
