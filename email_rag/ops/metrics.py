"""Prometheus metrics in the text exposition format (version 0.0.4), from MariaDB and Redis.

Labels are only states, kinds, queue names, mailbox names (configuration),
LLM task names and outcomes: never mail content, addresses or subjects.

| metric | type | labels | from |
|---|---|---|---|
| email_rag_database_up | gauge | | MariaDB answers (0: nothing else from MariaDB) |
| email_rag_redis_up | gauge | | Redis answers |
| email_rag_mails | gauge | status | emails.status |
| email_rag_mails_index | gauge | index_status | emails.index_status |
| email_rag_jobs | gauge | kind, state | jobs (queue entries) |
| email_rag_dead_letters | gauge | | jobs in state dead (resolved ones included: never deleted) |
| email_rag_drafts | gauge | status | drafts.status |
| email_rag_oldest_pending_draft_age_seconds | gauge | | age of the oldest mail waiting for review |
| email_rag_send_attempts | gauge | status | send_attempts.status (the send outcomes) |
| email_rag_events_total | counter | event | audit events: retry_scheduled (retries), dead_letter, stuck_reset, admin_retry, admin_resolved, sent, reconciled_sent, send_refused, send_unknown, send_deferred, send_outcome_unknown, sent_copy_failed, stale, fallback_defaults, login_failed, login_locked, database_unavailable |
| email_rag_retries_total | counter | | audit events retry_scheduled (automatic retries) |
| email_rag_llm_attempt_duration_seconds | histogram | task | audit events llm_attempt, detail.duration_ms |
| email_rag_llm_attempts_total | counter | task, outcome | audit events llm_attempt |
| email_rag_queue_depth | gauge | queue | RQ queue lengths in Redis |
| email_rag_mailbox_consecutive_failures | gauge | mailbox | poll health |
| email_rag_mailbox_needs_attention | gauge | mailbox | poll health |
| email_rag_mailbox_last_success_timestamp_seconds | gauge | mailbox | last successful poll (absent: never) |
| email_rag_audit_spooled_events | gauge | | audit events waiting in the local spool (MariaDB was down) |
| email_rag_history_import_mails | gauge | mailbox, state | a mailbox's history import: total (stored), done (indexed), left, errors (dead index entries) |
| email_rag_history_import_rate_per_second | gauge | mailbox | history mails indexed per second over the last 10 minutes |
| email_rag_history_import_seconds_left | gauge | mailbox | the time left at that rate (absent: unknown, paused or no rate) |
| email_rag_history_import_paused | gauge | mailbox | 1 while an admin paused the import |
| email_rag_review_drafts_total | counter | mailbox, category, outcome | drafts staff decided: unchanged, light_edit, rewritten (approved), rejected, regenerated (``draft_reviews``) |
| email_rag_review_edit_distance | summary | mailbox, category | normalised edit distance generated -> approved text, of the approved drafts (_sum, _count) |
| email_rag_classified_mails_total | counter | mailbox, category | mails the classify step classified (the category it gave; ``classified_mails``) |
| email_rag_classification_corrections_total | counter | mailbox, category | of those, the mails whose classification staff corrected |

The review figures per week are the counters' increase over a week (PromQL
``increase(email_rag_review_drafts_total[1w])``; a rate is the ratio of two increases); the
status page shows them per calendar week (docs/web.md, "Review figures").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import EmailRagError
from ..core.rows import FromRow
from ..db import figures, sql
from ..db.figures import Figures
from ..ingest import history_import
from ..wiring.services import Services
from .health import Tally

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LLM_BUCKETS_MS = (50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)


@dataclass(frozen=True)
class JobTally(FromRow):
    kind: str
    state: str
    n: int


@dataclass(frozen=True)
class EventTally(FromRow):
    event: str
    n: int


@dataclass(frozen=True)
class LlmAttempts:
    """LLM attempts of one (task, outcome) (``web_metrics_llm_latency``): how many, how many
    timed, their summed duration and the cumulative count per bucket of ``LLM_BUCKETS_MS``."""

    task: str
    outcome: str
    n: int
    timed: int
    sum_ms: float
    buckets: tuple[int, ...]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> LlmAttempts:
        return cls(str(row["task"]), str(row["outcome"]), int(row["n"]), int(row["timed"]),
                   float(row["sum_ms"]),
                   tuple(int(row[f"le_{b}"] or 0) for b in LLM_BUCKETS_MS))


@dataclass
class Histogram:
    """One task's duration histogram, summed over its outcomes."""

    n: int = 0
    sum_ms: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * len(LLM_BUCKETS_MS))

    def add(self, a: LlmAttempts) -> None:
        self.n += a.timed
        self.sum_ms += a.sum_ms
        self.buckets = [x + y for x, y in zip(self.buckets, a.buckets, strict=True)]


def histograms(attempts: Iterable[LlmAttempts]) -> dict[str, Histogram]:
    out: dict[str, Histogram] = {}
    for a in attempts:
        out.setdefault(a.task, Histogram()).add(a)
    return out


@dataclass(frozen=True)
class MailboxGauge(FromRow):
    name: str
    consecutive_failures: int | None = None
    needs_attention: int | None = None
    last_success_ts: float | None = None


@dataclass(frozen=True)
class Snapshot:
    """What MariaDB says, read in one transaction."""

    mails: list[Tally]
    index: list[Tally]
    jobs: list[JobTally]
    sends: list[Tally]
    drafts: list[Tally]
    events: list[EventTally]
    llm: list[LlmAttempts]
    mailboxes: list[MailboxGauge]
    oldest_pending_draft_age_s: float
    reviews: list[Figures] = field(default_factory=list)  # per mailbox and category


class Exposition:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._declared: set[str] = set()

    def declare(self, name: str, kind: str, help_text: str) -> None:
        if name not in self._declared:
            self._declared.add(name)
            self.lines.append(f"# HELP {name} {help_text}")
            self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, **labels: Any) -> None:
        label_text = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
        self.lines.append(f"{name}{{{label_text}}} {_num(value)}" if labels
                          else f"{name} {_num(value)}")

    def family(self, name: str, kind: str, help_text: str, label: str,
               rows: Iterable[Tally]) -> None:
        self.declare(name, kind, help_text)
        for r in rows:
            self.sample(name, r.n, **{label: r.label if r.label is not None else ""})

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(v: Any) -> str:
    f = float(v or 0)
    return str(int(f)) if f.is_integer() else repr(f)


def collect(svc: Services) -> str:
    out = Exposition()
    try:
        data: Snapshot | None = _fetch(svc)
    except EmailRagError:
        data = None
    out.declare("email_rag_database_up", "gauge", "1 when MariaDB answers.")
    out.sample("email_rag_database_up", 1 if data is not None else 0)
    if data is not None:
        _database(data, out)
        _history(svc, out)
    _redis(svc, out)
    out.declare("email_rag_audit_spooled_events", "gauge",
                "Audit events in the local spool, waiting for MariaDB.")
    try:
        out.sample("email_rag_audit_spooled_events", svc.audit.spooled_count())
    except OSError:
        pass
    return out.text()


def _history(svc: Services, out: Exposition) -> None:
    """The history import per mailbox (``ingest.history_import.progress``)."""
    try:
        imports = history_import.progress(svc.db)
    except EmailRagError:
        return
    out.declare("email_rag_history_import_mails", "gauge",
                "History mails of a mailbox's import by state: total, done, left, errors.")
    for p in imports:
        for state, n in (("total", p.total), ("done", p.done), ("left", p.left),
                         ("errors", p.errors)):
            out.sample("email_rag_history_import_mails", n, mailbox=p.mailbox, state=state)
    out.declare("email_rag_history_import_rate_per_second", "gauge",
                "History mails indexed per second (last 10 minutes).")
    out.declare("email_rag_history_import_seconds_left", "gauge",
                "Seconds left at the current rate (absent: unknown).")
    out.declare("email_rag_history_import_paused", "gauge", "1 while the import is paused.")
    for p in imports:
        out.sample("email_rag_history_import_rate_per_second", p.rate_per_s, mailbox=p.mailbox)
        if p.seconds_left is not None:
            out.sample("email_rag_history_import_seconds_left", p.seconds_left,
                       mailbox=p.mailbox)
        out.sample("email_rag_history_import_paused", int(p.paused), mailbox=p.mailbox)


def _fetch(svc: Services) -> Snapshot:
    with svc.db.transaction() as cur:
        def rows(n: str) -> list[dict[str, Any]]:
            return cur.fetchall(sql(f"web_metrics_{n}"))
        tallies = {n: Tally.from_rows(rows(n)) for n in ("mails", "index", "sends", "drafts")}
        oldest = cur.fetchone(sql("web_metrics_oldest_pending_draft"))
        return Snapshot(
            jobs=JobTally.from_rows(rows("jobs")), events=EventTally.from_rows(rows("audit_events")),
            llm=[LlmAttempts.from_row(r) for r in rows("llm_latency")],
            mailboxes=MailboxGauge.from_rows(rows("mailboxes")),
            oldest_pending_draft_age_s=float(oldest["age_s"] or 0) if oldest else 0.0,
            reviews=figures.totals(cur), **tallies)


def _database(data: Snapshot, out: Exposition) -> None:
    out.family("email_rag_mails", "gauge", "Mails by business status.", "status", data.mails)
    out.family("email_rag_mails_index", "gauge", "Mails by index status.", "index_status",
               data.index)
    out.declare("email_rag_jobs", "gauge", "Queue entries by kind and state.")
    for j in data.jobs:
        out.sample("email_rag_jobs", j.n, kind=j.kind, state=j.state)
    out.declare("email_rag_dead_letters", "gauge", "Queue entries in state dead.")
    out.sample("email_rag_dead_letters", sum(int(j.n) for j in data.jobs if j.state == "dead"))
    out.family("email_rag_drafts", "gauge", "Drafts by status.", "status", data.drafts)
    out.declare("email_rag_oldest_pending_draft_age_seconds", "gauge",
                "Age of the oldest mail whose draft waits for review.")
    out.sample("email_rag_oldest_pending_draft_age_seconds", data.oldest_pending_draft_age_s)
    out.family("email_rag_send_attempts", "gauge", "Send attempts by status (send outcomes).",
               "status", data.sends)
    out.declare("email_rag_events_total", "counter", "Audit events of interest by event name.")
    by_event = {e.event: int(e.n) for e in data.events}
    for name in sorted(by_event):
        out.sample("email_rag_events_total", by_event[name], event=name)
    out.declare("email_rag_retries_total", "counter", "Automatic retries scheduled (audit "
                "events retry_scheduled).")
    out.sample("email_rag_retries_total", by_event.get("retry_scheduled", 0))
    out.declare("email_rag_llm_attempt_duration_seconds", "histogram",
                "Duration of LLM attempts (audit events llm_attempt, detail.duration_ms).")
    for task, h in sorted(histograms(data.llm).items()):
        for b, count in zip(LLM_BUCKETS_MS, h.buckets, strict=True):
            out.sample("email_rag_llm_attempt_duration_seconds_bucket", count,
                       task=task, le=_num(b / 1000))
        out.sample("email_rag_llm_attempt_duration_seconds_bucket", h.n, task=task, le="+Inf")
        out.sample("email_rag_llm_attempt_duration_seconds_sum", h.sum_ms / 1000, task=task)
        out.sample("email_rag_llm_attempt_duration_seconds_count", h.n, task=task)
    out.declare("email_rag_llm_attempts_total", "counter", "LLM attempts by task and outcome.")
    for a in data.llm:
        out.sample("email_rag_llm_attempts_total", a.n, task=a.task, outcome=a.outcome)
    gauges: tuple[tuple[str, str, Callable[[MailboxGauge], float | None]], ...] = (
        ("email_rag_mailbox_consecutive_failures", "Failed polls in a row.",
         lambda m: m.consecutive_failures),
        ("email_rag_mailbox_needs_attention", "1 when a mailbox needs a human.",
         lambda m: m.needs_attention),
        ("email_rag_mailbox_last_success_timestamp_seconds",
         "Unix time of the last successful poll (absent: never).", lambda m: m.last_success_ts))
    for metric, help_text, value in gauges:
        out.declare(metric, "gauge", help_text)
        for m in data.mailboxes:  # samples of one family stay together
            if value(m) is not None:
                out.sample(metric, value(m), mailbox=m.name)  # type: ignore[arg-type]
    _reviews(data.reviews, out)


def _reviews(groups: list[Figures], out: Exposition) -> None:
    """The review figures since the beginning, per mailbox and category."""
    drafts = [f for f in groups if f.decided]
    out.declare("email_rag_review_drafts_total", "counter",
                "Drafts staff decided, by outcome: unchanged, light_edit, rewritten (approved; "
                "by normalised edit distance), rejected, regenerated.")
    for f in drafts:
        for outcome, n in f.outcomes.items():
            out.sample("email_rag_review_drafts_total", n, mailbox=f.mailbox,
                       category=f.category, outcome=outcome)
    out.declare("email_rag_review_edit_distance", "summary",
                "Normalised edit distance between the generated and the approved text "
                "(0 unchanged, 1 nothing kept), of the approved drafts.")
    for f in drafts:
        out.sample("email_rag_review_edit_distance_sum", round(f.distance_sum, 4),
                   mailbox=f.mailbox, category=f.category)
        out.sample("email_rag_review_edit_distance_count", f.approved, mailbox=f.mailbox,
                   category=f.category)
    for metric, help_text, value in (
            ("email_rag_classified_mails_total", "Mails classified, by the category given.",
             lambda f: f.classified),
            ("email_rag_classification_corrections_total",
             "Classified mails whose classification staff corrected.", lambda f: f.corrected)):
        out.declare(metric, "counter", help_text)
        for f in groups:
            if f.classified:
                out.sample(metric, value(f), mailbox=f.mailbox, category=f.category)


def _redis(svc: Services, out: Exposition) -> None:
    s = svc.settings
    out.declare("email_rag_redis_up", "gauge", "1 when Redis answers.")
    try:
        depths = svc.queue.depths(dict.fromkeys([s.queue_name, s.vector_queue_name]))
    except EmailRagError:
        out.sample("email_rag_redis_up", 0)
        return
    out.sample("email_rag_redis_up", 1)
    out.declare("email_rag_queue_depth", "gauge", "Jobs waiting in each RQ queue.")
    for name, n in depths.items():
        out.sample("email_rag_queue_depth", n, queue=name)
