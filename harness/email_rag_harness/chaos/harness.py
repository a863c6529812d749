"""One chaos run per mode: the whole real pipeline under the fault plan, then the end state.

``run_mode(plan, mode, shared)`` sets up everything the run owns - its own
``mariadbd`` (fresh datadir, migrated database) and ``redis-server`` on private
ports, which the plan crashes for real (the machine's shared servers are never
touched); a fresh Dovecot user behind a
TCP fault proxy, filled with the corpus in waves; the scripted LLM server
with the plan's LLM faults; the fault SMTP relay filing accepted mail into
the user's Sent folder (what reconciliation searches); TCP fault proxy in
front of MariaDB; a local Qdrant folder - starts the real processes (one
``--with-vectors`` worker, plain workers, and the scheduler, whose periodic
jobs poll the mailbox through the workers, re-dispatch, reset stuck entries,
flush the audit spool and re-index), fires the plan's events,
makes the staff decisions, and waits until the system is quiescent (no
open queue entry, no draft waiting for review, nothing partially indexed,
the inbox polled to its last UID, the audit spool empty) or the deadline.
Then it stops every process, reads the end state, verifies it against the
ground truth and cleans up (drops the database, releases the Redis db).

``mode``: ``hardened`` (the product, as in production), a counter-check column
(``COUNTER_CHECKS``: hardened except one safeguard, harness/email_rag_harness/chaos/counter.py)
or ``naive`` (the
counter-check that shows the defects: every process of the column is built with
``NaiveServices``, harness/email_rag_harness/chaos/naive.py, the product's safeguards taken out; the
harness starts the column's processes through ``email_rag_harness.chaos.naive_cli``).

Failure table of the harness itself:

| situation | what happens |
|---|---|
| a local service is missing (Dovecot, MariaDB, Redis) | HarnessError before anything runs: exit 1 |
| a process exits by itself (e.g. a vector worker that cannot open the store yet) | restarted after 1 s, counted as a start; listed in the report |
| the system does not settle before the deadline | the run is verified as it is: whatever is unfinished shows as lost mails / missing sends (exit 3) |
| an injector fails (e.g. no LLM call in flight to kill) | recorded as skipped or error in the fault log; the run goes on |
| the harness is interrupted | every process it started is stopped, the database dropped, the Redis db released |
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from email_rag.core.errors import EmailRagError
from email_rag.core.settings import MailboxConfig, OAuthConfig, Settings
from email_rag.db import Database, slot_params, sql
from email_rag.db.migrate import ensure_database, migrate
from email_rag.mail.headers import normalise_message_id, parse_headers

from ..testing import corpus as corpus_mod
from ..testing.dovecot import Dovecot, DovecotUser, mailboxes_json
from ..testing.oauth_server import TokenServer
from . import plan as chaos_plan
from .admin import ACTS, Admin
from .counter import COLUMNS as COUNTER_COLUMNS
from .counter import VARIABLE as COUNTER_VARIABLE
from .faults import Injector, Targets
from .fleet import Fleet
from .staff import Staff
from .verify import MAIL_STATES, Observed, Received, TruthMail, draft_id_of, verify

log = logging.getLogger(__name__)

COUNTER_CHECKS = tuple(COUNTER_COLUMNS)  # hardened except one safeguard each (counter.py)
MODES = ("hardened", "naive", *COUNTER_CHECKS)
# per mode: what the run's processes run (``python -m ENTRY COMMAND``)
ENTRY = {"hardened": "email_rag", "naive": "email_rag_harness.chaos.naive_cli",
         **dict.fromkeys(COUNTER_CHECKS, "email_rag_harness.chaos.counter_cli")}
MAILBOX = "support"
ADDRESS = "support@example.com"
# access tokens of the harness's token server live 8 s and are renewed 2 s before expiry, so
# a run refreshes every ~6 s and an oauth_token fault of 9 s or more meets a refresh
TOKEN_LIFETIME_S = 8
OAUTH_ENV = {"EMAIL_RAG_OAUTH_REFRESH_SKEW_SECONDS": "2", "EMAIL_RAG_OAUTH_TIMEOUT": "3"}


class HarnessError(EmailRagError):
    """The chaos harness could not run (a local service is missing or broken)."""


@dataclass
class Shared:
    """What both columns share: the corpus (ground truth) and one private Dovecot."""

    plan: dict[str, Any]
    mails: list[corpus_mod.GeneratedMail]
    raws: list[bytes]  # deliveries, in order (duplicates included)
    truth: list[TruthMail]
    dovecot: Dovecot  # checks XOAUTH2 logins at ``tokens``
    tokens: TokenServer

    @classmethod
    def build(cls, plan: dict[str, Any], dovecot: Dovecot, tokens: TokenServer) -> Shared:
        c = plan["corpus"]
        mails = corpus_mod.generate(plan["mails"], plan["seed"], **c)
        truth = []
        for m in mails:
            h = parse_headers(m.raw)
            truth.append(TruthMail(m.key, m.kind, normalise_message_id(m.message_id),
                                   h.from_addr or None, m.deliveries, m.expects_draft))
        return cls(plan, mails, corpus_mod.deliveries(mails), truth, dovecot, tokens)


@dataclass
class ModeResult:
    mode: str
    figures: dict[str, int]
    findings: dict[str, list[str]]
    settled: bool
    seconds: float
    faults: list[dict[str, Any]] = field(default_factory=list)
    llm_faults: dict[str, int] = field(default_factory=dict)
    smtp_faults: list[str] = field(default_factory=list)
    staff: dict[str, int] = field(default_factory=dict)
    explained: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    staff_refused: list[str] = field(default_factory=list)  # e.g. MariaDB killed mid-approval
    run_dir: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Run:
    def __init__(self, plan: dict[str, Any], mode: str, shared: Shared,
                 keep: bool = False) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.plan, self.mode, self.shared, self.keep = plan, mode, shared, keep
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"email-rag-chaos-{mode}-"))
        self.db_name = f"erag_chaos_{mode[0]}_{uuid.uuid4().hex[:10]}"
        self.cleanups: list[Any] = []
        self.notes: list[str] = []
        self._unfiled = 0  # messages the relay must not file into the Sent folder
        self.stop = threading.Event()
        self._db_failing = False
        self.raced_deliveries = 0  # follow-ups the staff delivered right after an approval

    # --- connections ---
    def server_db(self, database: str | None = None) -> Database:
        """A direct connection to the run's private MariaDB (not through the fault proxy)."""
        return Database("127.0.0.1", self.mariadb.port, "root", "", database=database)

    # --- the run ---
    def execute(self) -> ModeResult:
        started = time.monotonic()
        try:
            self._setup()
            settled = self._drive()
            self._shutdown_fleet()
            observed = self._observe()
            observed.settled = settled
            v = verify(self.shared.truth, observed)
            figures = {**v.figures, **self.fleet.summary(), **self._fault_figures()}
            if not settled:
                self.notes.append(f"did not settle within {self.plan['timing']['deadline_s']} s;"
                                  " verified as it was")
            failed = bool(v.broken_promises()) if self.mode == "hardened" else False
            result = ModeResult(
                self.mode, figures, v.findings, settled, round(time.monotonic() - started, 1),
                faults=list(self.injector.log), llm_faults=dict(self.llm.stats()["faults"]),
                smtp_faults=list(self.relay.injected), staff=dict(self.staff.actions),
                explained=v.explained, notes=self.notes,
                staff_refused=self.staff.errors[:50])
            if (failed or not settled) and not self.keep:
                self.keep = True  # keep the logs of a failed run for the report
            if self.keep:
                result.run_dir = str(self.run_dir)
            return result
        finally:
            self._cleanup()

    def _setup(self) -> None:
        plan = self.plan
        from ..testing.llm_server import ScriptedLLMServer
        from ..testing.servers import PrivateMariaDB, PrivateRedis, ServerError
        from ..testing.smtp_server import FaultSmtpServer
        from ..testing.tcp_proxy import TcpFaultProxy

        # the run's own MariaDB and Redis servers: the plan crashes them for real (kill -9,
        # restart), which the machine's shared servers must never see
        try:
            self.mariadb = PrivateMariaDB(root=self.run_dir / "mariadb")
            self.cleanups.append(lambda: self.mariadb.stop(remove=not self.keep))
            self.mariadb.start()
            self.redis_server = PrivateRedis(root=self.run_dir / "redis")
            self.cleanups.append(lambda: self.redis_server.stop(remove=not self.keep))
            self.redis_server.start()
        except ServerError as e:
            raise HarnessError(str(e)) from e
        self.redis_url = self.redis_server.url
        db = self.server_db()
        try:
            ensure_database(db, self.db_name)
        finally:
            db.close()
        db = self.server_db(self.db_name)
        try:
            migrate(db)
        except EmailRagError as e:
            raise HarnessError(f"the private MariaDB on port {self.mariadb.port}: {e}") from e
        finally:
            db.close()

        dovecot = self.shared.dovecot
        self.user: DovecotUser = dovecot.add_user(name=MAILBOX)
        dovecot.make_maildir(self.user.maildir("Sent"))
        self.imap_proxy = TcpFaultProxy(dovecot.host, dovecot.port)
        self.cleanups.append(self.imap_proxy.close)
        self.db_proxy = TcpFaultProxy("127.0.0.1", self.mariadb.port)
        self.cleanups.append(self.db_proxy.close)
        self.llm = ScriptedLLMServer(plan=plan["llm"]).start()
        self.cleanups.append(self.llm.stop)
        self.relay = FaultSmtpServer(file_to=self._file_sent, on_fault=self._on_smtp_fault)
        self.relay.start()
        self.cleanups.append(self.relay.stop)

        tokens = self.shared.tokens
        mailbox = MailboxConfig(name=MAILBOX, host="127.0.0.1", port=self.imap_proxy.port,
                                security="plain", username=self.user.username, auth="xoauth2",
                                oauth=OAuthConfig(token_url=tokens.token_url,
                                                  authorize_url=tokens.url + "/authorize",
                                                  client_id=tokens.client_id,
                                                  client_secret=tokens.client_secret),
                                folders=["INBOX"], sent_folder="Sent", address=ADDRESS)
        oauth_key = uuid.uuid4().hex + uuid.uuid4().hex
        qdrant = self.run_dir / "qdrant"
        spool = self.run_dir / "spool" / "audit.jsonl"
        self.spool_dir = spool.parent
        self.env = {
            **plan["env"],
            "EMAIL_RAG_DB_HOST": "127.0.0.1", "EMAIL_RAG_DB_PORT": str(self.db_proxy.port),
            "EMAIL_RAG_DB_USER": "root", "EMAIL_RAG_DB_PASSWORD": "",
            "EMAIL_RAG_DB_NAME": self.db_name, "EMAIL_RAG_REDIS_URL": self.redis_url,
            "EMAIL_RAG_MAILBOXES": mailboxes_json([mailbox]),
            "EMAIL_RAG_LLM_BASE_URL": self.llm.url, "EMAIL_RAG_LLM_MODEL": "scripted",
            **self.relay.relay_env, "EMAIL_RAG_SMTP_USER": "", "EMAIL_RAG_SMTP_STARTTLS": "false",
            "EMAIL_RAG_QDRANT_URL": "", "EMAIL_RAG_QDRANT_PATH": str(qdrant),
            "EMAIL_RAG_ARANGO_URL": "", "EMAIL_RAG_AUDIT_SPOOL_PATH": str(spool),
            "EMAIL_RAG_WORKER_CLASS": "simple", "EMAIL_RAG_RECONCILE_SENT_FOLDER": "true",
            **OAUTH_ENV, "EMAIL_RAG_OAUTH_TOKEN_KEY": oauth_key,
            "EMAIL_RAG_OAUTH_JOURNAL_DIR": str(self.run_dir / "oauth-journal"),
            "EMAIL_RAG_HISTORY_IMPORT": "false",  # its mails are new work, drafted
        }
        if self.mode in COUNTER_CHECKS:  # counter_cli builds this column's services
            self.env[COUNTER_VARIABLE] = self.mode
        services_class = self._services_class()

        # the harness's own view (staff, progress): straight to MariaDB, not through the proxy
        harness_settings = Settings(
            db_host="127.0.0.1", db_port=self.mariadb.port, db_user="root", db_password="",
            db_name=self.db_name, redis_url=self.redis_url,
            mailboxes=[mailbox], audit_spool_path=self.run_dir / "spool" / "harness.jsonl",
            oauth_token_key=oauth_key, oauth_journal_dir=self.run_dir / "oauth-journal")
        self.svc = services_class(harness_settings)  # the main loop's thread only
        self.cleanups.append(self.svc.close)
        # the admin consented once before the run (as `email-rag mailboxes authorize` does)
        self.svc.oauth_tokens.authorize(MAILBOX, tokens.consent(self.user.username),
                                        actor="admin", actor_detail="chaos harness set-up")
        self.fleet = Fleet(self.env, self.run_dir, int(plan["workers"]["plain"]),
                           ENTRY[self.mode])
        self.cleanups.insert(0, self._shutdown_fleet)
        from email_rag.adapters.queue import JobQueue

        queue = JobQueue(self.redis_url)
        self.cleanups.append(queue.close)
        self.injector = Injector(Targets(
            self.fleet, self.imap_proxy, self.db_proxy, self.llm, self.relay, self.redis_url,
            self.db_name, self.server_db, lambda: self.server_db(self.db_name),
            qdrant / "collection" / Settings().qdrant_collection / "storage.sqlite",
            queue, int(plan["seed"]), self.mariadb, self.redis_server,
            self.env.get("EMAIL_RAG_QUEUE_NAME", Settings().queue_name),
            self.env.get("EMAIL_RAG_VECTOR_QUEUE_NAME", Settings().vector_queue_name),
            tokens, self.user.username, self._oauth_alarm, self._reauthorize))
        self.staff = Staff(self.svc, plan, self.shared.truth)
        self.staff.race_followups = {m.thread_root: m.raw for m in self.shared.mails
                                     if m.race and m.thread_root}
        self.staff.deliver = self._deliver_race
        # acts run in fault threads: each gets its own Services (its own connection)
        self.admin = Admin(self.env, lambda: self.server_db(self.db_name),
                           lambda: services_class(harness_settings), self._relay_drafts,
                           self.stop, self.staff, ENTRY[self.mode])
        self.injector.acts = self.admin

    def _oauth_alarm(self) -> bool:
        """The mailbox's OAuth2 ALARM as an admin sees it (status, web status page)."""
        db = self.server_db(self.db_name)
        try:
            row = db.fetchone(sql("chaos_oauth_alarm"), {"mailbox": MAILBOX}) or {}
        finally:
            db.close()
        return bool(row.get("needs_attention")) and row.get("token_status") == \
            "needs_authorization"

    def _reauthorize(self) -> dict[str, Any]:
        """The admin authorizes the mailbox again: `email-rag mailboxes authorize NAME`, the
        code of a fresh consent pasted (the user signed in again); tried until it is stored
        (MariaDB may be down by plan; on a loaded machine one CLI call took up to its 60 s
        timeout, and two tries in 90 s were not enough)."""
        deadline = time.monotonic() + 240
        tries = 0
        errors = len(self.admin.cli_errors)
        while time.monotonic() < deadline:
            tries += 1
            code = self.shared.tokens.issue_code(self.user.username)
            out = self.admin.cli("mailboxes", "authorize", MAILBOX, stdin=code + "\n")
            if out.get("ok"):
                return {"tries": tries, "how": (out.get("data") or {}).get("how")}
            time.sleep(1.0)
        return {"tries": tries, "failed": True, "errors": self.admin.cli_errors[errors:][-3:]}

    def _services_class(self) -> type[Any]:
        """What builds the harness's own services (staff, admin acts) in this mode."""
        if self.mode == "naive":
            from .naive import NaiveServices

            return NaiveServices
        if self.mode in COUNTER_CHECKS:
            from .counter import services_class

            return services_class(self.mode)
        from email_rag.wiring.services import Services

        return Services

    def _deliver_race(self, raws: list[bytes]) -> int:
        n = self.user.deliver(raws)
        self.raced_deliveries += n
        return n

    def _fault_figures(self) -> dict[str, int]:
        log_ = list(self.injector.log)
        crashes = [f for f in log_ if f["fault"] in ("db_crash", "redis_crash")
                   and f["result"] == "done"]
        return {
            "server_crashes": len(crashes),
            "longest_outage_s": int(max((float(f.get("down_s", 0)) for f in crashes),
                                        default=0)),
            "admin_actions": sum(1 for f in log_ if f["fault"] in ACTS and f["result"] == "done"),
            "race_followups": self.raced_deliveries,
        }

    def _relay_drafts(self) -> set[int]:
        """Drafts whose reply the relay accepted (its own record, as an admin reads it)."""
        with self.relay.lock:
            received = list(self.relay.received)
        out = set()
        for r in received:
            head = r.data.split(b"\r\n\r\n", 1)[0]
            for line in head.splitlines():
                if line.lower().startswith(b"x-email-rag:"):
                    draft = draft_id_of(line.split(b":", 1)[1].decode(errors="replace"))
                    if draft is not None:
                        out.add(draft)
        return out

    def _file_sent(self, data: bytes) -> None:
        """The relay files what it accepted into the Sent folder (like Exchange or Gmail),
        except a message whose stall was tagged ``unfiled`` (a relay that keeps no record)."""
        if self._unfiled:
            self._unfiled -= 1
            return
        self.user.deliver([data], folder="Sent")

    def _on_smtp_fault(self, fault: Any, peer: Any) -> None:
        # called by the relay's event loop right before it records (and files) that message
        if fault.tag == "unfiled":
            self._unfiled += 1
        injector = getattr(self, "injector", None)
        if injector is not None:
            injector.on_smtp_fault(fault, peer)

    def _drive(self) -> bool:
        plan = self.plan
        raws = self.shared.raws
        sizes = chaos_plan.delivery_sizes(plan, len(raws))
        waves, offset = [], 0
        for (at, _), n in zip(plan["deliveries"], sizes, strict=True):
            waves.append((float(at), raws[offset:offset + n]))
            offset += n
        events = list(plan["events"])
        t0 = time.monotonic()
        self.fleet.start()
        deadline = t0 + float(plan["timing"]["deadline_s"])
        settle = float(plan["timing"]["settle_s"])
        interval = float(plan["staff"]["interval_s"])
        delivered, quiet_since, last_staff, last_report = 0, None, 0.0, t0
        while True:
            now = time.monotonic()
            elapsed = now - t0
            while waves and waves[0][0] <= elapsed and not self.injector.gating():
                _, batch = waves.pop(0)
                delivered += self.user.deliver(batch)
            while events and events[0]["at"] <= elapsed:
                self.injector.fire(events.pop(0))
            self.fleet.watch()
            if now - last_staff >= interval:
                last_staff = now
                self._guard(self.staff.review_round)
            if not waves and not events and not self.injector.busy():
                progress = self._guard(self._progress) or {}
                quiet = (progress.get("open_jobs") == 0 and progress.get("open_drafts") == 0
                         and progress.get("partial") == 0 and self.staff.waiting == 0
                         and int(progress.get("last_uid") or 0)
                         >= delivered + self.raced_deliveries
                         and self._spooled() == 0)
                if quiet and self.staff.race_followups:
                    # roots never approved (rejected, manual, dead): their follow-ups still
                    # arrive, just not racing an approval
                    self._deliver_race(list(self.staff.race_followups.values()))
                    self.staff.race_followups.clear()
                    quiet = False
                if quiet:
                    quiet_since = quiet_since or now
                    if now - quiet_since >= settle:
                        log.info("%s: quiescent after %.1f s", self.mode, now - t0)
                        return True
                else:
                    quiet_since = None
            if now - last_report >= 5:
                last_report = now
                p = self._guard(self._progress) or {}
                log.info("%s %5.1f s: %s mails stored, %s drafts, %s sent, %s open jobs, "
                         "%s open drafts; %d starts, %d kills", self.mode, elapsed,
                         p.get("emails"), p.get("drafts"), p.get("sent"), p.get("open_jobs"),
                         p.get("open_drafts"), self.fleet.starts, self.fleet.hard_kills)
            if now >= deadline:
                log.error("%s: deadline reached before the system settled", self.mode)
                return False
            time.sleep(0.1)

    def _guard(self, fn: Any) -> Any:
        """Run a harness query; MariaDB may be down by plan (logged once per outage)."""
        try:
            result = fn()
        except EmailRagError as e:
            if not self._db_failing:
                log.info("%s: harness queries fail (%s; a planned fault); reconnecting until "
                         "MariaDB answers", self.mode, e)
            self._db_failing = True
            self.svc.reset()
            return None
        if self._db_failing:
            log.info("%s: harness queries answer again", self.mode)
            self._db_failing = False
        return result

    def _progress(self) -> dict[str, Any]:
        return self.svc.db.fetchone(sql("chaos_progress")) or {}

    def _spooled(self) -> int:
        n = 0
        for path in self.spool_dir.glob("audit.jsonl*"):
            try:
                n += sum(1 for line in path.read_text().splitlines() if line.strip())
            except OSError:
                pass
        return n

    def _shutdown_fleet(self) -> None:
        if getattr(self, "_fleet_stopped", False) or not hasattr(self, "fleet"):
            return
        self._fleet_stopped = True
        self.stop.set()
        injector = getattr(self, "injector", None)
        if injector is not None:
            injector.stop.set()
        self.fleet.stop()
        if injector is not None:
            injector.join(20)

    # --- end state ---
    def _observe(self) -> Observed:
        db = self.server_db(self.db_name)
        try:
            obs = Observed(
                emails=db.fetchall(sql("chaos_emails")), drafts=db.fetchall(sql("chaos_drafts")),
                attempts=db.fetchall(sql("chaos_attempts")), jobs=db.fetchall(sql("chaos_jobs")))
            for row in db.fetchall(sql("chaos_mail_state_events")):
                if row["to_state"] in MAIL_STATES and str(row["entity_id"]).isdigit():
                    obs.last_mail_state[int(row["entity_id"])] = row["to_state"]
                    obs.mail_history.setdefault(int(row["entity_id"]), []).append(
                        row["to_state"])
            obs.open_entries = [
                f"job {r['id']} {r['kind']} on {r['queue']}: {r['state']}, held by "
                f"{r['worker'] or 'nobody'}, attempt {r['attempts']}, email {r['email_id']} "
                f"({r['mail_status']})" for r in db.fetchall(sql("chaos_open_jobs"))]
            obs.open_entries += [f"draft {r['id']} {r['status']} (email {r['email_id']})"
                                 for r in db.fetchall(sql("chaos_pending_drafts"))]
            for row in db.fetchall(sql("chaos_entity_events")):
                if str(row["entity_id"]).isdigit():
                    obs.entity_events.setdefault(
                        (row["entity_type"], int(row["entity_id"])), set()).add(row["event"])
            obs.event_counts = {r["event"]: int(r["n"])
                                for r in db.fetchall(sql("chaos_event_counts"))}
            obs.send_marks = {int(r["entity_id"]): int(r["n"])
                              for r in db.fetchall(sql("chaos_send_marks"))
                              if str(r["entity_id"]).isdigit()}
            obs.partially_indexed_mails = int(
                (db.fetchone(sql("chaos_partially_indexed")) or {}).get("n") or 0)
        finally:
            db.close()
        obs.spooled_events = self._spooled()
        self._erasures(obs)
        obs.alarms = alarm_lines(self.fleet.logs)
        with self.relay.lock:
            received = list(self.relay.received)
        for r in received:
            head = r.data.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
            h = parse_headers(head + b"\r\n\r\n")
            rag = next((ln.split(b":", 1)[1].decode(errors="replace") for ln in head.splitlines()
                        if ln.lower().startswith(b"x-email-rag:")), None)
            obs.received.append(Received(r.message_id, draft_id_of(rag), h.in_reply_to))
        obs.approved_drafts = set(self.staff.approved)
        obs.oauth_faults = [f for f in self.injector.log if f["fault"] == "oauth_token"]
        obs.backoff_cap_s = float(self.env.get("EMAIL_RAG_IMAP_BACKOFF_CAP",
                                               Settings().imap_backoff_cap))
        return obs

    def _erasures(self, obs: Observed) -> None:
        """What is left of each customer the privacy_forget act erased, searched in every
        store of the run after its processes stopped: MariaDB (by id, by address, audit
        detail), the local Qdrant folder (points of the erased mails), the spool files."""
        from email_rag.adapters.vectors import QdrantStore

        erased = list(self.admin.erased)
        obs.erasures = len(erased)
        if not erased:
            return
        found: list[str] = []
        db = self.server_db(self.db_name)
        try:
            for e in erased:
                ids, drafts = e["email_ids"] or [-1], e["drafts"] or [-1]
                obs.erased_keys |= set(e["keys"])
                obs.erased_drafts |= set(e["drafts"])
                obs.erased_attempts.update(e.get("attempts") or {})
                row = db.fetchone(sql("chaos_privacy_leftovers", ids=len(ids), drafts=len(drafts)),
                                  {**slot_params(ids=ids, drafts=drafts),
                                   "pattern": f"%{e['address']}%"}) or {}
                found += [f"{e['address'][:3]}...: {n} {what}" for what, n in row.items() if n]
                by_address = db.fetchall(sql("privacy_mail_ids"), {"address": e["address"]})
                found += [f"{e['address'][:3]}...: mail {r['id']} found by the address"
                          for r in by_address]
        finally:
            db.close()
        # the run's vector settings (its embedder names the collection's vectors)
        vector = {k[len("EMAIL_RAG_"):].lower(): v for k, v in self.env.items()
                  if any(w in k for w in ("EMBEDDING", "VECTOR_DIM", "QDRANT"))}
        store = QdrantStore.from_settings(Settings(**vector))
        try:
            for e in erased:
                found += [f"{e['address'][:3]}...: {n} vector point(s) of mail {i}"
                          for i in e["email_ids"] if (n := store.count(i))]
        finally:
            store.close()
        for path in self.spool_dir.glob("*"):
            text = path.read_text(errors="replace").lower() if path.is_file() else ""
            found += [f"{e['address'][:3]}...: named in {path.name}" for e in erased
                      if e["address"] in text]
        obs.privacy_leftovers = found

    # --- cleanup ---
    def _cleanup(self) -> None:
        for fn in self.cleanups:
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - clean up as much as possible
                log.warning("chaos cleanup step %s failed: %s", getattr(fn, "__name__", fn), e)
        if not self.keep:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        else:
            (self.run_dir / "plan.json").write_text(json.dumps(self.plan, indent=2))


def run_mode(plan: dict[str, Any], mode: str, shared: Shared, keep: bool = False) -> ModeResult:
    return Run(plan, mode, shared, keep).execute()


def alarm_lines(logs: Path) -> list[str]:
    """The ALARM lines of every process log of the run, in file order."""
    lines: list[str] = []
    for path in sorted(logs.glob("*.log")):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        lines += [f"{path.name}: {ln.strip()}" for ln in text.splitlines() if "ALARM" in ln]
    return lines
