"""IMAP IDLE: a mail is ingested within a second of its arrival, by the normal poll path.

``IdleWatcher(services, config).run()`` holds one mailbox: it takes the mailbox's
poll lease (the same one ``poll`` takes, so IDLE and polling never overlap and a
second IDLE process waits), opens one IDLE connection per configured folder
(``adapters.imap.IdleSession``) and then, until stopped:

- a notification (EXISTS/RECENT) on a folder -> ``Poller.poll_held`` of that folder:
  cursor, dedup, one transaction per batch, hand-off to RQ - exactly as a scheduled
  poll, so exactly-once ingestion is unchanged (IDLE only decides *when* to poll);
- every ``idle_refresh_seconds`` each IDLE is ended and re-issued (RFC 2177: within
  29 min), then the folder is polled; the poll records the mailbox's success, which is
  what the liveness alarm of ``email-rag status`` watches;
- every ``poll_interval_seconds`` all folders are polled anyway (safety net against a
  lost notification: the holder of the lease is the one that polls);
- the lease is renewed every third of ``poll_lease_seconds``.

A server without the IDLE capability gets the same loop without connections:
a poll every ``poll_interval_seconds`` (fallback to polling). The scheduler's poll
job stays configured as the safety net of the IDLE process itself: while the
process lives it finds the lease busy; when it dies, the lease expires (or its dead
pid is seen) and the scheduled polls take over.

Failure table (situation | retry? | state known? | resume?):
  another process holds the lease  | wait idle_wait_seconds, try again | the holder ingests |
      takes over when the holder is gone (lease expiry / dead pid)
  mailbox in backoff after failures | wait until backoff_until | unchanged | then connect
  connection cut / BYE / EOF while IDLE | yes: failure recorded, backoff (exp., capped, jitter,
      forever - the polling schedule), lease released | cursor in MariaDB | new sessions and
      a catch-up poll from the cursor: nothing lost, dedup + cursor: nothing doubled
  server silent (DONE of a re-issue unanswered within imap_timeout) | same; logged as
      ALARM | - | same; persists -> status shows the mailbox failing / ALARM
  server mute (notifications never come, commands answered) | safety poll every
      poll_interval_seconds and after every re-issue | - | -
  poll in hand fails (IMAP)        | failure + backoff recorded by the poll path; sessions
      closed, lease released | committed batches stay | after backoff
  MariaDB down                     | sessions closed, services reset, retried after
      idle_wait_seconds | nothing half-written | from the cursor
  lease lost (stalled past expiry) | back to waiting for the lease | the other holder polls | -
  server without IDLE              | no: polls every poll_interval_seconds instead | - | -
  SIGTERM / SIGINT                 | no: the batch in hand is committed, sessions closed,
      lease released | yes | next start
"""

from __future__ import annotations

import logging
import selectors
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..adapters.imap import IdleSession
from ..core.errors import ConfigError, DatabaseUnavailableError, EmailRagError, ImapError
from ..core.redact import redact_text
from ..core.settings import MailboxConfig, Settings
from ..jobs.context import ServiceContext
from . import mailbox_state as ms
from .poller import MailboxResult, Poller

log = logging.getLogger(__name__)

RFC2177_LIMIT = 29 * 60  # seconds a server must keep an IDLE connection without traffic


def check(settings: Settings) -> None:
    """Refuse settings with which a healthy IDLE would be dropped or raise false alarms."""
    problems = []
    if not 0 < settings.idle_refresh_seconds < RFC2177_LIMIT:
        problems.append(f"EMAIL_RAG_IDLE_REFRESH_SECONDS={settings.idle_refresh_seconds} must be "
                        f"above 0 and below {RFC2177_LIMIT} (RFC 2177: servers may end an "
                        "IDLE after 30 minutes)")
    if settings.idle_refresh_seconds >= settings.imap_alarm_after_seconds:
        problems.append(f"EMAIL_RAG_IDLE_REFRESH_SECONDS={settings.idle_refresh_seconds} must be "
                        "below EMAIL_RAG_IMAP_ALARM_AFTER_SECONDS="
                        f"{settings.imap_alarm_after_seconds}: a healthy IDLE mailbox would "
                        "show as ALARM between two re-issues")
    if problems:
        raise ConfigError("; ".join(problems))


@dataclass
class IdleStats:
    """What one watcher did (for the CLI summary, tests and the latency benchmark)."""

    leases: int = 0  # times the lease was taken
    sessions: int = 0  # IDLE connections opened
    notifications: int = 0  # polls triggered by a notification
    refreshes: int = 0  # IDLE commands re-issued
    safety_polls: int = 0  # polls of the poll_interval safety net (and fallback polling)
    failures: int = 0  # IMAP failures (connection cut, silent server, poll failed)
    alarms: int = 0  # silent IDLE connections
    new: int = 0  # mails stored
    missed: int = 0  # of those: found by a safety poll although IDLE was on (not announced)
    idle_supported: bool | None = None
    polls: list[MailboxResult] = field(default_factory=list, repr=False)


class IdleContext(ServiceContext, Protocol):
    """A watcher's services: the context, the poller and IDLE connections it opens, and the
    reset of every client after a MariaDB outage (``wiring.services.Services`` is one)."""

    def poller(self, **options: Any) -> Poller: ...

    def idle_session(self, config: MailboxConfig, folder: str, timeout: float) -> IdleSession: ...

    def reset(self) -> None: ...

    def close(self) -> None: ...


class IdleWatcher:
    def __init__(self, services: IdleContext, config: MailboxConfig, *,
                 stop: threading.Event | None = None, owner: str | None = None,
                 session_factory: Callable[[MailboxConfig, str, float], IdleSession] | None = None,
                 keep_polls: bool = False) -> None:
        self.svc = services
        self.config = config
        self.settings = services.settings
        self.stop = stop or threading.Event()
        self.owner = owner or ms.new_owner()
        self.poller: Poller = services.poller(owner=self.owner, stop=self.stop)
        self.session_factory = session_factory or services.idle_session  # with OAuth2 tokens
        self.stats = IdleStats()
        self.keep_polls = keep_polls
        self.holding = threading.Event()  # set while this watcher holds the lease
        self.mailbox: ms.Mailbox | None = None  # while holding: the row as the polls left it

    # --- outer loop: lease, backoff, outages ---
    def run(self) -> IdleStats:
        while not self.stop.is_set():
            try:
                wait = self._once()
            except DatabaseUnavailableError as e:
                log.error("mailbox %s: MariaDB unavailable (%s); IDLE paused, trying again in "
                          "%s s", self.config.name, redact_text(str(e)),
                          self.settings.idle_wait_seconds)
                self.svc.reset()
                wait = self.settings.idle_wait_seconds
            except Exception as e:  # noqa: BLE001 - a long-running watcher outlives errors
                log.error("mailbox %s: IDLE stopped by %s; trying again in %s s",
                          self.config.name, redact_text(f"{type(e).__name__}: {e}"),
                          self.settings.idle_wait_seconds,
                          exc_info=not isinstance(e, EmailRagError))
                wait = self.settings.idle_wait_seconds
            if wait:
                self.stop.wait(wait)
        return self.stats

    def _once(self) -> float:
        """Take the lease and hold it as long as things go well; returns the seconds to wait
        before the next try (0: at once)."""
        db = self.svc.db
        mailbox, lease = ms.ensure_and_lease(db, self.config, self.owner,
                                             self.settings.poll_lease_seconds)
        if not lease.got:
            if lease.why == "backoff" and lease.backoff_until is not None:
                now = ms.ensure_mailbox(db, self.config).db_now or lease.backoff_until
                wait = max(0.05, (lease.backoff_until - now).total_seconds())
                log.info("mailbox %s in backoff for %.1f s", self.config.name, wait)
                return wait
            log.debug("mailbox %s: lease held by %s; waiting", self.config.name, lease.holder)
            return self.settings.idle_wait_seconds
        self.stats.leases += 1
        self.holding.set()
        try:
            self._hold(lease.mailbox or mailbox)
        finally:
            self.holding.clear()
            ms.release_lease(db, mailbox.id, self.owner)
        return 0.0

    # --- inner loop: sessions, notifications, re-issue, safety poll ---
    def _hold(self, mailbox: ms.Mailbox) -> None:
        """Hold the lease of ``mailbox``: IDLE sessions and polls until a failure or stop."""
        self.mailbox = mailbox
        s = self.settings
        sessions: list[IdleSession] = []
        selector = selectors.DefaultSelector()
        try:
            try:
                sessions = self._open_sessions()
            except ImapError as e:
                self._failed(e)
                return
            for session in sessions:
                selector.register(session.fileno(), selectors.EVENT_READ, session)
            if not self._poll(None, "catch-up"):  # what arrived while nobody listened
                return
            now = time.monotonic()
            next_safety = now + s.poll_interval_seconds
            next_renew = now + s.poll_lease_seconds / 3
            while not self.stop.is_set():
                now = time.monotonic()
                due = [x.started_at + s.idle_refresh_seconds for x in sessions]
                timeout = max(0.0, min([next_safety, next_renew, *due]) - now)
                announced: set[str] = set()
                for key, _ in selector.select(min(timeout, 1.0)):  # 1 s: notice stop
                    session = key.data
                    if session.wait(0).new_mail:
                        announced.add(session.folder)
                        self.stats.notifications += 1
                if announced and not self._poll(announced, "notification"):
                    return
                now = time.monotonic()
                unannounced: set[str] = set()
                for session in sessions:
                    if now - session.started_at >= s.idle_refresh_seconds:
                        self._refresh(session)
                        unannounced.add(session.folder)
                if now >= next_safety:
                    self.stats.safety_polls += 1
                    next_safety = now + s.poll_interval_seconds
                    unannounced = set(self.config.folders)
                if unannounced and not self._poll(unannounced, "safety"):
                    return
                if time.monotonic() >= next_renew:
                    with self.svc.db.transaction() as cur:
                        ms.renew_lease(cur, mailbox.id, self.owner, s.poll_lease_seconds)
                    next_renew = time.monotonic() + s.poll_lease_seconds / 3
        except ImapError as e:
            self._failed(e)
        except ms.LeaseLostError as e:
            log.warning("mailbox %s: %s; IDLE stops and waits for the lease", self.config.name, e)
        finally:
            selector.close()
            for session in sessions:
                session.close()

    def _open_sessions(self) -> list[IdleSession]:
        sessions: list[IdleSession] = []
        try:
            for folder in self.config.folders:
                session = self.session_factory(self.config, folder, self.settings.imap_timeout)
                if not session.start():
                    if self.stats.idle_supported is not False:
                        log.warning("mailbox %s: the server has no IDLE capability; polling "
                                    "every %s s instead", self.config.name,
                                    self.settings.poll_interval_seconds)
                    self.stats.idle_supported = False
                    for opened in sessions:
                        opened.close()
                    return []
                sessions.append(session)
                self.stats.sessions += 1
        except ImapError:
            for opened in sessions:
                opened.close()
            raise
        if self.stats.idle_supported is None:
            log.info("mailbox %s: IDLE on %s", self.config.name, ", ".join(self.config.folders))
        self.stats.idle_supported = True
        return sessions

    def _refresh(self, session: IdleSession) -> None:
        try:
            session.refresh()
        except ImapError as e:
            self.stats.alarms += 1
            log.error("ALARM mailbox %s folder %s: IDLE connection silent - the re-issue after "
                      "%.0f s was not answered within %s s (%s); opening it again with backoff",
                      self.config.name, session.folder, self.settings.idle_refresh_seconds,
                      self.settings.imap_timeout, redact_text(str(e)))
            raise
        self.stats.refreshes += 1

    def _poll(self, folders: set[str] | None, why: str) -> bool:
        """The normal poll path under the held lease; False when the watcher must let go."""
        assert self.mailbox is not None
        res, self.mailbox = self.poller.poll_held(self.config, self.mailbox, folders)
        new = res.total("new")
        self.stats.new += new
        if self.keep_polls:
            self.stats.polls.append(res)
        if why == "safety" and new and self.stats.idle_supported:
            self.stats.missed += new
            log.warning("mailbox %s: %d new mail(s) in %s that IDLE did not announce; the "
                        "safety poll stored them (a server that drops notifications costs "
                        "latency, not mail)", self.config.name, new, ", ".join(sorted(folders or ())))
        if res.status in ("ok", "interrupted"):
            log.debug("mailbox %s: %s poll stored %d new", self.config.name, why, res.total("new"))
            return True
        if res.status == "failed":
            self.stats.failures += 1
        log.warning("mailbox %s: %s poll ended %s (%s); IDLE connections closed",
                    self.config.name, why, res.status, res.error)
        return False

    def _failed(self, error: ImapError) -> None:
        self.stats.failures += 1
        assert self.mailbox is not None
        failures, delay = ms.record_failure(self.svc.db, self.mailbox, error, self.poller.backoff)
        self.mailbox = self.mailbox.failed(failures)
        log.warning("mailbox %s: IDLE failed (%s); failure %d, reconnecting in %.1f s",
                    self.config.name, redact_text(str(error)), failures, delay)


@dataclass
class _Watched:
    config: MailboxConfig
    stop: threading.Event
    thread: threading.Thread | None = None
    stats: IdleStats = field(default_factory=IdleStats)


def watch(settings: Settings, names: list[str] | None, stop: threading.Event,
          services: IdleContext) -> dict[str, IdleStats]:
    """Watch the polled mailboxes (only ``names``, when given), one thread each with its
    own services of the caller's kind, until ``stop``. The mailboxes are read again every
    ``poll_interval_seconds``: an added mailbox gets its watcher, a disabled or removed one's
    watcher stops (its lease released), a changed one's starts again with the new settings.
    Returns each mailbox's stats (of its last watcher)."""
    check(settings)
    wanted = _wanted(services, names)
    if names:
        unknown = sorted(set(names) - set(wanted))
        if unknown:
            raise EmailRagError(f"no mailbox named {', '.join(unknown)} is polled "
                                "(`email-rag mailboxes list` shows every mailbox)")
    running: dict[str, _Watched] = {}
    stats: dict[str, IdleStats] = {}
    make = type(services)
    try:
        while True:
            for name, w in list(running.items()):  # gone, disabled or changed: stop it
                if wanted.get(name) is not w.config:
                    _end(w, stats, name)
                    del running[name]
                    if name not in wanted:
                        log.info("mailbox %s: no longer polled; its IDLE watcher stopped", name)
            for name, config in wanted.items():
                if name not in running:
                    running[name] = _start(make, settings, config)
            if stop.wait(settings.poll_interval_seconds):
                break
            try:
                wanted = _wanted(services, names)
            except EmailRagError as e:  # MariaDB away: keep the watchers, read again later
                log.error("IDLE: the mailboxes could not be read again (%s); the watchers "
                          "run on", redact_text(str(e)))
    finally:
        for name, w in running.items():
            _end(w, stats, name)
    return stats


def _wanted(services: ServiceContext, names: list[str] | None) -> dict[str, MailboxConfig]:
    return {c.name: c for c in services.mailboxes.active(fresh=True)
            if not names or c.name in names}


def _start(make: Callable[[Settings], IdleContext], settings: Settings,
           config: MailboxConfig) -> _Watched:
    w = _Watched(config, threading.Event())

    def one() -> None:
        svc = make(settings)
        try:
            w.stats = IdleWatcher(svc, config, stop=w.stop).run()
        finally:
            svc.close()

    w.thread = threading.Thread(target=one, name=f"idle-{config.name}", daemon=True)
    w.thread.start()
    return w


def _end(w: _Watched, stats: dict[str, IdleStats], name: str) -> None:
    w.stop.set()
    while w.thread is not None and w.thread.is_alive():
        w.thread.join(0.5)
    stats[name] = w.stats
