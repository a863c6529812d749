"""Reachability and version of every dependency, plus queue and mail counts.

Used by ``email-rag status`` and the web status page. A check never raises:
it returns a ``Check`` that says what failed, in words an operator can act on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime

from ..core.errors import EmailRagError
from ..core.jsonvalue import JsonObject, JsonValue
from ..core.redact import redact_text
from ..core.rows import FromRow, Row, set_field
from ..db import figures, sql
from ..db.figures import Figures
from ..db.oauth_tokens import TokenHealth, token_health
from ..ingest import history_import
from ..ingest.history import Progress
from ..ingest.history import progress as history_progress
from ..ingest.history_import import ImportProgress
from ..wiring.services import Services
from .llm_status import ModelStatus, model_status


@dataclass
class Check:
    name: str
    required: bool
    ok: bool
    version: str = ""
    detail: str = ""
    latency_ms: float = 0.0

    def as_dict(self) -> JsonObject:
        return asdict(self)


def _timed(name: str, required: bool, fn: Callable[[], tuple[str, str]]) -> Check:
    started = time.perf_counter()
    try:
        version, detail = fn()
        ok = True
    except Exception as e:  # noqa: BLE001 - a health check reports, it does not crash
        version, detail, ok = "", redact_text(f"{type(e).__name__}: {e}"), False
    return Check(name, required, ok, version, detail, round((time.perf_counter() - started) * 1000, 1))


def check_mariadb(svc: Services) -> Check:
    def probe() -> tuple[str, str]:
        return svc.db.ping(), f"{svc.settings.db_host}:{svc.settings.db_port}/{svc.settings.db_name}"
    return _timed("mariadb", True, probe)


def check_redis(svc: Services) -> Check:
    def probe() -> tuple[str, str]:
        return svc.queue.ping(), redact_text(svc.settings.redis_url)
    return _timed("redis", True, probe)


def check_imap(svc: Services) -> list[Check]:
    checks = []
    try:
        polled = svc.mailboxes.active()
    except EmailRagError as e:  # the mailboxes are kept in MariaDB
        return [Check("imap", False, False, detail=redact_text(
            f"mailboxes unknown: {type(e).__name__}: {e}"))]
    for mb in polled:
        def probe(mb=mb) -> tuple[str, str]:
            with svc.imap_mailbox(mb, 5) as imap:  # its own login (password or OAuth2)
                greeting = imap.greeting
            return greeting[:80], f"{mb.host}:{mb.port} as {mb.username}"
        checks.append(_timed(f"imap:{mb.name}", False, probe))
    if not checks:
        checks.append(Check("imap", False, False, detail="no mailbox polled (add one: web admin or `email-rag mailboxes add`)"))
    return checks


def check_smtp(svc: Services) -> Check:
    s = svc.settings

    def probe() -> tuple[str, str]:  # the relay as a send opens it (TLS verified), 5 s
        from dataclasses import replace

        from ..adapters.smtp import SmtpConfig, SmtpSender

        relay = SmtpSender(replace(SmtpConfig.from_settings(s), timeout=5))
        return relay.greet(), f"{s.smtp_host}:{s.smtp_port}"
    return _timed("smtp", False, probe)


def check_llm(svc: Services) -> Check:
    s = svc.settings

    def probe() -> tuple[str, str]:
        from ..adapters.llm import LLMClient

        client = LLMClient(s.llm_base_url, s.llm_api_key.get_secret_value(), s.llm_model,
                           timeout=5, response_format=s.llm_response_format)
        try:
            models = client.list_models()
        finally:
            client.close()
        found = "model found" if s.llm_model in models else f"model {s.llm_model!r} NOT listed"
        return s.llm_model, f"{s.llm_base_url} ({found})"
    return _timed("llm", False, probe)


def check_qdrant(svc: Services) -> Check:
    s = svc.settings

    def probe() -> tuple[str, str]:
        from ..adapters.vectors import QdrantStore

        store = QdrantStore.from_settings(s)
        store.timeout = min(store.timeout, 5.0)
        return store.mode, store.probe()
    return _timed("qdrant", False, probe)


def check_vector_owner(svc: Services) -> Check:
    """Local Qdrant only: the one worker that may open the folder is running and stable."""
    s = svc.settings
    if s.qdrant_url:
        return Check("vector owner", False, True, "server", "Qdrant server: any worker indexes")
    from ..indexing import owner_beacon

    started = time.monotonic()
    try:
        row = svc.db.fetchone(sql("vector_queue_waiting"),
                              {"queue": s.vector_queue_name, "grace": 30})
        ok, detail = owner_beacon.state(svc.coordination, int((row or {}).get("n") or 0))
    except Exception as e:  # noqa: BLE001 - Redis down: the redis check says so
        ok, detail = False, f"unknown (Redis: {type(e).__name__})"
    return Check("vector owner", False, ok, "local", detail,
                 round((time.monotonic() - started) * 1000, 1))


def check_arango(svc: Services) -> Check:
    s = svc.settings
    if not s.arango_url:
        return Check("arangodb", False, True, "off", "graph store off (EMAIL_RAG_ARANGO_URL unset)")

    def probe() -> tuple[str, str]:
        from ..adapters.graph import ArangoGraph

        graph = ArangoGraph(s.arango_url, s.arango_db, s.arango_user,
                            s.arango_password.get_secret_value(), min(s.arango_timeout, 5.0))
        try:
            return graph.server_version(), redact_text(s.arango_url)
        finally:
            graph.close()
    return _timed("arangodb", False, probe)


@dataclass(frozen=True)
class Tally(FromRow):
    """One group of a count (``health_*_by_*``): its label (a state or status) and size."""

    label: str | None
    n: int

    def __post_init__(self) -> None:
        set_field(self, "n", int(self.n))


def tally(rows: list[Row]) -> dict[str | None, int]:
    return {t.label: t.n for t in Tally.from_rows(rows)}


def _labelled(counts: dict[str | None, int]) -> dict[str, JsonValue]:
    """Counts by label as JSON (a NULL label is the key "null", as ``json.dumps`` writes it)."""
    return {"null" if k is None else k: n for k, n in counts.items()}


@dataclass(frozen=True)
class MailboxHealth(FromRow):
    """A mailbox's poll health (``health_mailboxes``)."""

    name: str
    consecutive_failures: int = 0
    needs_attention: bool = False
    last_success_at: datetime | None = None
    failing_since: datetime | None = None
    backoff_until: datetime | None = None
    last_error: str | None = None
    alarm: bool = False  # no successful poll for imap_alarm_after_seconds, or needs a human
    lease_owner: str | None = None
    lease_until: datetime | None = None
    lease_expired: bool = False

    def __post_init__(self) -> None:
        set_field(self, "consecutive_failures", int(self.consecutive_failures or 0))
        set_field(self, "needs_attention", bool(self.needs_attention))
        set_field(self, "alarm", bool(self.alarm))
        set_field(self, "lease_expired", bool(self.lease_expired))

    @property
    def held_by(self) -> str | None:
        """Who holds the poll lease now (an `email-rag idle` process holds it while it runs)."""
        return self.lease_owner if self.lease_until and not self.lease_expired else None

    def as_dict(self) -> JsonObject:
        return {"name": self.name, "last_success_at": _iso(self.last_success_at),
                "failing_since": _iso(self.failing_since),
                "consecutive_failures": self.consecutive_failures,
                "backoff_until": _iso(self.backoff_until), "needs_attention": self.needs_attention,
                "last_error": self.last_error, "alarm": self.alarm, "lease_owner": self.held_by}


REVIEW_WEEKS = 8  # the review figures shown: this week and the 8 before it


@dataclass(frozen=True)
class Counts:
    """Queue entries per state, mails per status and index status, sends per status, and
    every mailbox's poll health."""

    jobs: dict[str | None, int]
    mails: dict[str | None, int]
    index: dict[str | None, int]
    sends: dict[str | None, int]
    mailboxes: list[MailboxHealth]
    history: Progress | None = None  # the history import (email_rag/ingest/history.py)
    oauth: list[TokenHealth] = field(default_factory=list)  # OAuth2 sign-ins per mailbox
    imports: list[ImportProgress] = field(default_factory=list)  # history import per mailbox
    reviews: list[Figures] = field(default_factory=list)  # per mailbox, category and week

    def as_dict(self) -> JsonObject:
        return {"jobs": _labelled(self.jobs), "mails": _labelled(self.mails),
                "index": _labelled(self.index), "sends": _labelled(self.sends),
                "mailboxes": [m.as_dict() for m in self.mailboxes],
                "history": self.history.as_dict() if self.history else None,
                "oauth": [t.as_dict() for t in self.oauth],
                "imports": [p.as_dict() for p in self.imports],
                "reviews": [f.as_dict() for f in self.reviews]}


def poll_health(svc: Services) -> list[MailboxHealth]:
    """Every polled-before mailbox's poll health (``health_mailboxes``)."""
    return MailboxHealth.from_rows(svc.db.fetchall(
        sql("health_mailboxes"), {"alarm_after": svc.settings.imap_alarm_after_seconds}))


def counts(svc: Services) -> Counts:
    db = svc.db
    return Counts(
        jobs=tally(db.fetchall(sql("health_jobs_by_state"))),
        mails=tally(db.fetchall(sql("web_metrics_mails"))),
        index=tally(db.fetchall(sql("web_metrics_index"))),
        sends=tally(db.fetchall(sql("web_metrics_sends"))),
        mailboxes=poll_health(svc), oauth=token_health(db), imports=history_import.progress(db),
        history=history_progress(db), reviews=figures.by_week(db, REVIEW_WEEKS))


def _iso(v: datetime | None) -> str | None:
    return v.isoformat() if v is not None else None


@dataclass(frozen=True)
class Status:
    """Every dependency's check, the counts (MariaDB up) and the queue depths (Redis up)."""

    checks: list[Check]
    counts: Counts | None = None
    counts_error: str | None = None  # MariaDB answered but the counts failed (schema?)
    queues: dict[str, int] | None = None  # waiting entries per queue
    queues_error: str | None = None
    model: ModelStatus | None = None  # the model's last calls (MariaDB up, calls made)

    @property
    def ok(self) -> bool:
        """Every required dependency is up and the counts could be read."""
        return all(c.ok for c in self.checks if c.required) and self.counts_error is None

    @property
    def down(self) -> list[str]:
        return [c.name for c in self.checks if c.required and not c.ok]

    @property
    def degraded(self) -> list[str]:
        return [c.name for c in self.checks if not c.ok]

    def as_dict(self) -> JsonObject:
        """The JSON of ``email-rag status --json`` and of the web status page."""
        out: JsonObject = {"ok": self.ok, "dependencies": [c.as_dict() for c in self.checks],
                               "counts": self.counts.as_dict() if self.counts else None,
                               "queues": self.queues,
                               "model": self.model.as_dict() if self.model else None}
        if self.counts_error is not None:
            out["counts_error"] = self.counts_error
        if self.queues_error is not None:
            out["queues_error"] = self.queues_error
        return out


def report(svc: Services) -> Status:
    checks = [check_mariadb(svc), check_redis(svc), *check_imap(svc), check_smtp(svc),
              check_llm(svc), check_qdrant(svc), check_vector_owner(svc), check_arango(svc)]
    found_counts, counts_error, queues, queues_error, model = None, None, None, None, None
    if checks[0].ok:
        try:
            found_counts = counts(svc)
            model = model_status(svc.db)
        except EmailRagError as e:
            counts_error = redact_text(str(e))
    if checks[1].ok:
        s = svc.settings
        try:
            queues = svc.queue.depths([s.queue_name, s.vector_queue_name])
        except EmailRagError as e:
            queues_error = str(e)
    return Status(checks, found_counts, counts_error, queues, queues_error, model)


def status(svc: Services) -> JsonObject:
    """``report`` as JSON (the web status page)."""
    return report(svc).as_dict()
