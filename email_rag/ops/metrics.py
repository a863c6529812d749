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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.errors import EmailRagError
from ..db import sql
from ..wiring.services import Services

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LLM_BUCKETS_MS = (50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)


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
               rows: Iterable[dict[str, Any]]) -> None:
        self.declare(name, kind, help_text)
        for r in rows:
            self.sample(name, r["n"], **{label: r["label"] if r["label"] is not None else ""})

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
        data = _fetch(svc)
    except EmailRagError:
        data = None
    out.declare("email_rag_database_up", "gauge", "1 when MariaDB answers.")
    out.sample("email_rag_database_up", 1 if data is not None else 0)
    if data is not None:
        _database(data, out)
    _redis(svc, out)
    out.declare("email_rag_audit_spooled_events", "gauge",
                "Audit events in the local spool, waiting for MariaDB.")
    try:
        out.sample("email_rag_audit_spooled_events", svc.audit.spooled_count())
    except OSError:
        pass
    return out.text()


def _fetch(svc: Services) -> dict[str, Any]:
    names = ("mails", "index", "jobs", "sends", "drafts", "audit_events", "llm_latency",
             "mailboxes")
    with svc.db.transaction() as cur:
        data = {n: cur.fetchall(sql(f"web_metrics_{n}")) for n in names}
        data["oldest"] = cur.fetchone(sql("web_metrics_oldest_pending_draft"))
    return data


def _database(data: dict[str, Any], out: Exposition) -> None:
    mails, index, jobs, sends, drafts = (data[n] for n in ("mails", "index", "jobs", "sends",
                                                           "drafts"))
    oldest, events, mailboxes = data["oldest"], data["audit_events"], data["mailboxes"]
    llm_outcomes = data["llm_latency"]
    llm: dict[str, dict[str, float]] = {}  # per task: histogram over timed attempts
    for r in llm_outcomes:
        h = llm.setdefault(r["task"], {"n": 0, "sum_ms": 0.0, **{f"le_{b}": 0 for b in LLM_BUCKETS_MS}})
        h["n"] += int(r["timed"])
        h["sum_ms"] += float(r["sum_ms"])
        for b in LLM_BUCKETS_MS:
            h[f"le_{b}"] += int(r[f"le_{b}"] or 0)
    out.family("email_rag_mails", "gauge", "Mails by business status.", "status", mails)
    out.family("email_rag_mails_index", "gauge", "Mails by index status.", "index_status", index)
    out.declare("email_rag_jobs", "gauge", "Queue entries by kind and state.")
    for r in jobs:
        out.sample("email_rag_jobs", r["n"], kind=r["kind"], state=r["state"])
    out.declare("email_rag_dead_letters", "gauge", "Queue entries in state dead.")
    out.sample("email_rag_dead_letters", sum(int(r["n"]) for r in jobs if r["state"] == "dead"))
    out.family("email_rag_drafts", "gauge", "Drafts by status.", "status", drafts)
    out.declare("email_rag_oldest_pending_draft_age_seconds", "gauge",
                "Age of the oldest mail whose draft waits for review.")
    out.sample("email_rag_oldest_pending_draft_age_seconds", oldest["age_s"] if oldest else 0)
    out.family("email_rag_send_attempts", "gauge", "Send attempts by status (send outcomes).",
               "status", sends)
    out.declare("email_rag_events_total", "counter", "Audit events of interest by event name.")
    by_event = {r["event"]: int(r["n"]) for r in events}
    for name in sorted(by_event):
        out.sample("email_rag_events_total", by_event[name], event=name)
    out.declare("email_rag_retries_total", "counter", "Automatic retries scheduled (audit "
                "events retry_scheduled).")
    out.sample("email_rag_retries_total", by_event.get("retry_scheduled", 0))
    out.declare("email_rag_llm_attempt_duration_seconds", "histogram",
                "Duration of LLM attempts (audit events llm_attempt, detail.duration_ms).")
    for task, h in sorted(llm.items()):
        for b in LLM_BUCKETS_MS:
            out.sample("email_rag_llm_attempt_duration_seconds_bucket", h[f"le_{b}"],
                       task=task, le=_num(b / 1000))
        out.sample("email_rag_llm_attempt_duration_seconds_bucket", h["n"], task=task, le="+Inf")
        out.sample("email_rag_llm_attempt_duration_seconds_sum", h["sum_ms"] / 1000, task=task)
        out.sample("email_rag_llm_attempt_duration_seconds_count", h["n"], task=task)
    out.declare("email_rag_llm_attempts_total", "counter", "LLM attempts by task and outcome.")
    for r in llm_outcomes:
        out.sample("email_rag_llm_attempts_total", r["n"], task=r["task"], outcome=r["outcome"])
    for metric, key, help_text in (
            ("email_rag_mailbox_consecutive_failures", "consecutive_failures",
             "Failed polls in a row."),
            ("email_rag_mailbox_needs_attention", "needs_attention",
             "1 when a mailbox needs a human."),
            ("email_rag_mailbox_last_success_timestamp_seconds", "last_success_ts",
             "Unix time of the last successful poll (absent: never).")):
        out.declare(metric, "gauge", help_text)
        for r in mailboxes:  # samples of one family stay together
            if r[key] is not None:
                out.sample(metric, r[key], mailbox=r["name"])


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
