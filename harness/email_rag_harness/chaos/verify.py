"""Verification of a chaos run from the ground truth, not from the pipeline's counters.

The ground truth is what the harness generated and delivered (``Truth``: one
entry per generated mail) and what the fault relay received (every message,
with its Message-ID and our ``X-Email-RAG: draft=N`` header). ``Observed`` is
what MariaDB holds at the end (rows, drafts, send attempts, jobs, audit
facts). ``verify(truth, observed)`` compares them and returns the figures of
the report plus the findings behind every non-zero defect figure.

Counting rules (one generated mail = one customer request):

| figure | counted as |
|---|---|
| duplicate_mails | email rows beyond the first, per generated mail |
| duplicate_drafts | drafts that are not superseded beyond the first, per generated mail |
| duplicate_sends | relay-received replies beyond the first, per generated mail |
| missing_sends | drafts staff approved, never received by the relay and not explained (send attempt failed/unknown with its audit event, or a dead send job with its dead-letter event) |
| lost_mails | generated mails without a row (a mail of a customer an admin erased excepted) |
| privacy_leftovers | what the harness still finds of a customer erased by the ``privacy_forget`` act: their erased mails' rows, drafts, send attempts, queue entries, steps and marks, a mail found by their address, audit detail naming the address, a pending request, vector points of their mails (the local Qdrant folder, read after the processes stopped), a spool line naming the address (the chaos run configures no graph store) |
| stranded_mails | rows resting at the end in a state that is neither terminal nor waiting for a human (e.g. ``approved`` with nothing queued to send it), named with their open entries |
| reopened_mails | rows that left ``resolved`` or ``sent`` again (e.g. a retry from a stale console tab reopened a mail another admin had closed) |
| not_settled | 1 when the run did not settle before its deadline (liveness); the open entries are named with their state and holder |
| lost_events | rows whose status is not the to_state of their last audited state change, send attempts whose final status has no audit event, and audit events left in the spool |
| unexplained_dead_letters / unexplained_unknown_sends | dead entries / unknown attempts without the audit event that explains them |
| partially_indexed_left | mails still partially_indexed at the end (the periodic sync must repair them) |
| unmarked_sends | relay receptions of a draft beyond the number of times its send attempt was marked ``attempted`` (send_started) first: a reply must be marked before it leaves |
| outage_failures | dead entries whose last error is a MariaDB or Redis failure: an outage of either must be waited out, never fail a mail |
| oauth_refresh_storms | ``oauth_token`` faults during which the token endpoint got more refresh requests than backing-off pollers make (``refresh_budget``: two per backoff cap, for the poll jobs and the IDLE process, plus four) |
| oauth_unalarmed_refusals | ``invalid_grant`` faults without the ALARM (the mailbox needs attention and its token row needs authorization) before the admin authorized again, without the audit event ``oauth_refresh_failed``, or whose new authorization was not stored |
| missing_drafts | generated mails that expect a reply draft (ground truth of the corpus) whose row got no draft and does not rest where a human sees why (manual or failed with its reason, resolved by an admin) |
| unexpected_dead_letters | dead entries outside the expected set: the expected causes are the domain's own errors (a refused send, LLM or store faults past their retries, a stuck reset, an admin's resolve); a dead letter of anything else (a KeyError, a TypeError: the policy's ``unexpected``) is a defect |
| unexplained_alarms | ALARM lines in the processes' logs outside the expected set: a dead letter of an entry that has its dead_letter event, an unknown send, a silent IDLE connection, the vector store or its owner unavailable, a hung step that was reset; anything else (an unexpected error, a refused store request, a lost send journal) is a defect |
"""

from __future__ import annotations

import inspect
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from email_rag.core import errors as domain_errors
from email_rag.core.states import (
    MAIL_REVIEW,
    MAIL_TERMINAL,
    IndexStatus,
    JobState,
    MailStatus,
    SendStatus,
)

MAIL_STATES = frozenset(str(s) for s in MailStatus)
AT_REST = frozenset(str(s) for s in MAIL_TERMINAL | MAIL_REVIEW)
CLOSED = frozenset({str(MailStatus.RESOLVED), str(MailStatus.SENT)})  # never left again
_DRAFT_HEADER = re.compile(r"draft=(\d+)")

# defects the hardened pipeline promises to keep at zero
PROMISED_ZERO = ("privacy_leftovers", "duplicate_mails", "duplicate_drafts", "duplicate_sends", "missing_sends",
                 "lost_mails", "stranded_mails", "reopened_mails", "not_settled", "lost_events",
                 "unexplained_dead_letters",
                 "unexplained_unknown_sends", "partially_indexed_left", "outage_failures",
                 "unmarked_sends", "oauth_refresh_storms", "oauth_unalarmed_refusals",
                 "missing_drafts", "unexpected_dead_letters", "unexplained_alarms")
# last errors of dead entries that an outage of MariaDB or Redis caused
OUTAGE_ERRORS = ("DatabaseError", "DatabaseUnavailableError", "DatabaseBusyError",
                 "QueueUnavailableError", "MariaDB error")
# the domain's own errors: a dead letter of one of them is expected under faults
DOMAIN_ERRORS = frozenset(
    name for name, cls in inspect.getmembers(domain_errors, inspect.isclass)
    if issubclass(cls, domain_errors.EmailRagError))
# where a mail without a draft rests in view of a human (with its reason)
SEEN_BY_HUMAN = frozenset({str(MailStatus.MANUAL), str(MailStatus.FAILED),
                           str(MailStatus.RESOLVED)})
# ALARM lines a planned fault explains (see ``classify_alarm``)
_ALARM_DEAD = re.compile(r"ALARM dead letter: job (\d+)")
_ALARM_HUNG = re.compile(r"ALARM job (\d+): step \S+ still running after its deadline")
EXPECTED_ALARMS = ("ALARM send outcome unknown for draft", "IDLE connection silent",
                   "ALARM vector store unavailable at start", "ALARM vector owner cannot start",
                   # a send's outcome arriving after an admin decided it (audited late_outcome)
                   "ALARM late send outcome for attempt")
# defect classes the counter-check (safeguards off) must show, or the harness is blind
NAIVE_MUST_SHOW = ("duplicate_mails", "duplicate_drafts", "duplicate_sends")


@dataclass
class TruthMail:
    key: str  # corpus key, e.g. m00042
    kind: str
    message_id: str | None  # normalised (<local@domain>), None when the mail has none
    from_addr: str | None
    deliveries: int = 1
    expects_draft: bool = False


@dataclass
class Received:
    """One message the fault relay accepted."""

    message_id: str
    draft_id: int | None  # from the X-Email-RAG header
    in_reply_to: str | None = None


@dataclass
class Observed:
    emails: list[dict[str, Any]] = field(default_factory=list)  # id, message_id, from_addr, status, index_status
    drafts: list[dict[str, Any]] = field(default_factory=list)  # id, email_id, status
    attempts: list[dict[str, Any]] = field(default_factory=list)  # id, draft_id, status
    jobs: list[dict[str, Any]] = field(default_factory=list)  # id, kind, state, email_id, draft_id
    # last audited mail state per email id (to_state of its last event that set one)
    last_mail_state: dict[int, str] = field(default_factory=dict)
    mail_history: dict[int, list[str]] = field(default_factory=dict)  # audited states, in order
    settled: bool = True  # the run settled before its deadline
    open_entries: list[str] = field(default_factory=list)  # at the end: state and holder
    # audit event names per entity: {("job", 7): {"dead_letter", ...}, ("send_attempt", 3): ...}
    entity_events: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    event_counts: dict[str, int] = field(default_factory=dict)  # audit event name -> count
    partially_indexed_mails: int = 0  # distinct mails that were partially_indexed at some point
    spooled_events: int = 0  # audit events still in the spool at the end
    send_marks: dict[int, int] = field(default_factory=dict)  # attempt id -> send_started events
    alarms: list[str] = field(default_factory=list)  # ALARM lines of every process's log
    received: list[Received] = field(default_factory=list)
    approved_drafts: set[int] = field(default_factory=set)  # drafts staff approved (harness)
    # the oauth_token faults as the injector recorded them (mode, window seconds, token
    # requests in the window, alarm_seen_after_s, reauthorized) and the pollers' backoff cap
    oauth_faults: list[dict[str, Any]] = field(default_factory=list)
    backoff_cap_s: float = 2.0
    # customers erased by the privacy_forget act: the corpus keys of their mails and their
    # drafts' ids (gone by design, so neither lost nor a missing send), and what the harness
    # still found of them in MariaDB, the vector store and the spool files
    erased_keys: set[str] = field(default_factory=set)
    erased_drafts: set[int] = field(default_factory=set)
    erased_attempts: dict[int, int] = field(default_factory=dict)  # draft -> its attempt
    erasures: int = 0
    privacy_leftovers: list[str] = field(default_factory=list)


@dataclass
class Verification:
    figures: dict[str, int]
    findings: dict[str, list[str]]  # behind every non-zero defect figure
    explained: dict[str, list[str]] = field(default_factory=dict)  # dead letters, manual: why

    def broken_promises(self) -> list[str]:
        return [k for k in PROMISED_ZERO if self.figures.get(k, 0)]

    def blind_spots(self) -> list[str]:
        """Defect classes the counter-check should show but did not."""
        return [k for k in NAIVE_MUST_SHOW if not self.figures.get(k, 0)]


def refresh_budget(seconds: float, backoff_cap_s: float) -> int:
    """Refresh requests a token-endpoint fault of ``seconds`` may see from pollers that back
    off (each failed poll waits up to ``backoff_cap_s``): two logging-in processes (a poll job,
    the IDLE process) at one request per backoff, plus four for the ramp-up and the end.
    A refresh per poll (every second, per worker) exceeds it."""
    return int(2 * seconds / max(backoff_cap_s, 0.1)) + 4


def _oauth(obs: Observed, figures: dict[str, int], findings: dict[str, list[str]]) -> None:
    storms = unalarmed = 0
    for f in obs.oauth_faults:
        if f.get("result") != "done":
            continue
        budget = refresh_budget(float(f["seconds"]), obs.backoff_cap_s)
        if int(f["token_requests"]) > budget:
            storms += 1
            findings["oauth_refresh_storms"].append(
                f"oauth_token {f['mode']} at {f['at']} s: {f['token_requests']} refresh requests "
                f"in {f['seconds']} s (budget {budget})")
        if f["mode"] == "invalid_grant":
            reauth = f.get("reauthorized") or {}
            missing = [what for what, bad in (
                ("no ALARM before the admin authorized again", f.get("alarm_seen_after_s") is None),
                ("the new authorization was not stored", bool(reauth.get("failed"))),
                ("no oauth_refresh_failed audit event",
                 not obs.event_counts.get("oauth_refresh_failed"))) if bad]
            if missing:
                unalarmed += 1
                findings["oauth_unalarmed_refusals"].append(
                    f"oauth_token invalid_grant at {f['at']} s: {'; '.join(missing)}")
    figures["oauth_refresh_storms"] = storms
    figures["oauth_unalarmed_refusals"] = unalarmed
    figures["oauth_faults"] = sum(1 for f in obs.oauth_faults if f.get("result") == "done")
    figures["oauth_fault_token_requests"] = sum(int(f.get("token_requests") or 0)
                                                for f in obs.oauth_faults)


def draft_id_of(header_value: str | None) -> int | None:
    m = _DRAFT_HEADER.search(header_value or "")
    return int(m.group(1)) if m else None


def _mail_map(truth: list[TruthMail], emails: list[dict[str, Any]]) -> dict[int, str]:
    """email row id -> corpus key (by Message-ID, else by sender address)."""
    by_mid = {t.message_id.lower(): t.key for t in truth if t.message_id}
    by_from = Counter(t.from_addr.lower() for t in truth if t.from_addr)
    by_from_key = {t.from_addr.lower(): t.key for t in truth
                   if t.from_addr and not t.message_id and by_from[t.from_addr.lower()] == 1}
    out: dict[int, str] = {}
    for e in emails:
        mid = (e.get("message_id") or "").lower()
        key = by_mid.get(mid) if mid else None
        if key is None and e.get("from_addr"):
            key = by_from_key.get(str(e["from_addr"]).lower())
        if key is not None:
            out[int(e["id"])] = key
    return out


def verify(truth: list[TruthMail], obs: Observed) -> Verification:
    findings: dict[str, list[str]] = defaultdict(list)
    figures: dict[str, int] = {}
    row_key = _mail_map(truth, obs.emails)
    rows_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in obs.emails:
        key = row_key.get(int(e["id"]))
        if key is None:
            findings["unmatched_rows"].append(f"email {e['id']} matches no generated mail")
        else:
            rows_of[key].append(e)

    # --- mails ---
    dup_mails = lost = 0
    for t in truth:
        rows = rows_of.get(t.key, [])
        if not rows and t.key in obs.erased_keys:
            continue  # erased by an admin: its leftovers are counted below
        if not rows:
            lost += 1
            findings["lost_mails"].append(f"{t.key} ({t.kind}): no email row")
        if len(rows) > 1:
            dup_mails += len(rows) - 1
            findings["duplicate_mails"].append(
                f"{t.key}: {len(rows)} rows ({', '.join(str(r['id']) for r in rows)})")
    open_jobs_of: dict[int, list[str]] = defaultdict(list)
    for j in obs.jobs:
        if j.get("email_id") is not None and j["state"] not in (JobState.DONE, JobState.DEAD):
            open_jobs_of[int(j["email_id"])].append(f"job {j['id']} {j['kind']} {j['state']}")
    stranded = 0
    for e in obs.emails:
        if str(e["status"]) not in AT_REST:
            stranded += 1
            held = open_jobs_of.get(int(e["id"])) or ["no open queue entry"]
            findings["stranded_mails"].append(
                f"email {e['id']} rests in status {e['status']} ({', '.join(held)})")
    figures["duplicate_mails"] = dup_mails
    figures["lost_mails"] = lost
    figures["stranded_mails"] = stranded
    reopened = 0
    for email_id, states in sorted(obs.mail_history.items()):
        for i, state in enumerate(states[:-1]):
            if state in CLOSED and states[i + 1] != state:
                reopened += 1
                findings["reopened_mails"].append(
                    f"email {email_id}: {state} -> {states[i + 1]} ({' -> '.join(states)})")
                break
    figures["reopened_mails"] = reopened
    figures["not_settled"] = 0 if obs.settled else 1
    if not obs.settled:
        findings["not_settled"] += obs.open_entries or ["(no open entry found)"]

    # --- drafts ---
    email_of_draft = {int(d["id"]): int(d["email_id"]) for d in obs.drafts}
    open_drafts: dict[str, list[int]] = defaultdict(list)
    for d in obs.drafts:
        key = row_key.get(int(d["email_id"]))
        if key is not None and d["status"] != "superseded":
            open_drafts[key].append(int(d["id"]))
    figures["duplicate_drafts"] = sum(max(0, len(v) - 1) for v in open_drafts.values())
    for key, ids in open_drafts.items():
        if len(ids) > 1:
            findings["duplicate_drafts"].append(f"{key}: drafts {ids}")

    # --- sends (the relay is the ground truth) ---
    received_by_draft: Counter[int] = Counter()
    received_by_key: Counter[str] = Counter()
    by_mid = {t.message_id.lower(): t.key for t in truth if t.message_id}
    for r in obs.received:
        key = None
        if r.draft_id is not None:
            received_by_draft[r.draft_id] += 1
            email_id = email_of_draft.get(r.draft_id)
            key = row_key.get(email_id) if email_id is not None else None
        if key is None and r.in_reply_to:
            key = by_mid.get(r.in_reply_to.lower())
        if key is None:
            findings["unmatched_sends"].append(f"{r.message_id}: answers no generated mail")
            continue
        received_by_key[key] += 1
    figures["duplicate_sends"] = sum(max(0, n - 1) for n in received_by_key.values())
    for key, n in sorted(received_by_key.items()):
        if n > 1:
            findings["duplicate_sends"].append(f"{key}: received {n} times")

    attempt_of = {int(a["draft_id"]): a for a in obs.attempts}
    send_job_of = {int(j["draft_id"]): j for j in obs.jobs
                   if j.get("draft_id") is not None and j["kind"] == "send_draft"}
    missing = 0
    for draft_id in sorted(obs.approved_drafts):
        if received_by_draft[draft_id] or draft_id in obs.erased_drafts:
            continue
        a = attempt_of.get(draft_id)
        j = send_job_of.get(draft_id)
        a_events = obs.entity_events.get(("send_attempt", int(a["id"])), set()) if a else set()
        j_events = obs.entity_events.get(("job", int(j["id"])), set()) if j else set()
        if a and a["status"] == SendStatus.FAILED and "send_refused" in a_events:
            continue
        if a and a["status"] == SendStatus.UNKNOWN and "send_unknown" in a_events:
            continue
        if j and j["state"] == JobState.DEAD and j_events & {"dead_letter", "stuck_reset"}:
            continue
        missing += 1
        findings["missing_sends"].append(
            f"draft {draft_id}: approved, never received (attempt "
            f"{a['status'] if a else 'none'}, job {j['state'] if j else 'none'})")
    figures["missing_sends"] = missing

    unmarked = 0
    for draft_id, n in sorted(received_by_draft.items()):
        a = attempt_of.get(draft_id)
        if a is None and draft_id in obs.erased_attempts:  # erased: its audit events stay
            a = {"id": obs.erased_attempts[draft_id]}
        marks = obs.send_marks.get(int(a["id"]), 0) if a else 0
        if n > marks:
            unmarked += n - marks
            findings["unmarked_sends"].append(
                f"draft {draft_id}: received {n} time(s), marked attempted {marks} time(s)")
    figures["unmarked_sends"] = unmarked

    # --- events ---
    lost_events = 0
    for e in obs.emails:
        last = obs.last_mail_state.get(int(e["id"]))
        if last != str(e["status"]):
            lost_events += 1
            findings["lost_events"].append(
                f"email {e['id']}: status {e['status']}, last audited state {last}")
    expected_event = {SendStatus.SENT: {"sent", "reconciled_sent", "admin_mark_sent"},
                      SendStatus.UNKNOWN: {"send_unknown"}, SendStatus.FAILED: {"send_refused"}}
    for a in obs.attempts:
        wanted = expected_event.get(a["status"])
        if wanted and not wanted & obs.entity_events.get(("send_attempt", int(a["id"])), set()):
            lost_events += 1
            findings["lost_events"].append(f"send attempt {a['id']}: {a['status']} without "
                                           f"any of {sorted(wanted)} in the audit log")
    if obs.spooled_events:
        lost_events += obs.spooled_events
        findings["lost_events"].append(f"{obs.spooled_events} audit event(s) left in the spool")
    figures["lost_events"] = lost_events

    # --- dead letters, manual, unknown ---
    dead = [j for j in obs.jobs if j["state"] == JobState.DEAD]
    figures["dead_letters"] = len(dead)
    unexplained_dead = [j for j in dead if not obs.entity_events.get(("job", int(j["id"])), set())
                        & {"dead_letter", "stuck_reset", "admin_resolved"}]
    figures["unexplained_dead_letters"] = len(unexplained_dead)
    findings["unexplained_dead_letters"] += [f"job {j['id']} ({j['kind']})"
                                             for j in unexplained_dead]
    by_outage = [j for j in dead if any(m in str(j.get("last_error") or "")
                                        for m in OUTAGE_ERRORS)]
    figures["outage_failures"] = len(by_outage)
    findings["outage_failures"] += [f"job {j['id']} ({j['kind']}, email {j.get('email_id')}): "
                                    f"{str(j.get('last_error'))[:160]}" for j in by_outage]
    manual = [e for e in obs.emails if e["status"] == MailStatus.MANUAL]
    figures["manual"] = len(manual)
    explained = {
        "dead_letters": [f"job {j['id']} ({j['kind']}, email {j.get('email_id')}): "
                         f"{str(j.get('last_error') or '')[:160]}" for j in dead],
        "manual": [f"email {e['id']}: {str(e.get('status_reason') or '')[:160]}"
                   for e in manual],
    }
    unknown = [a for a in obs.attempts if a["status"] == SendStatus.UNKNOWN]
    # ever unknown (an admin may have decided them since) and still unknown at the end
    figures["unknown_sends"] = sum(
        1 for a in obs.attempts
        if "send_unknown" in obs.entity_events.get(("send_attempt", int(a["id"])), set()))
    figures["unknown_sends_left"] = len(unknown)
    unexplained_unknown = [a for a in unknown if "send_unknown" not in obs.entity_events.get(
        ("send_attempt", int(a["id"])), set())]
    figures["unexplained_unknown_sends"] = len(unexplained_unknown)
    findings["unexplained_unknown_sends"] += [f"send attempt {a['id']}"
                                              for a in unexplained_unknown]

    unexpected_dead = [j for j in dead
                       if str(j.get("last_error") or "").split(":", 1)[0] not in DOMAIN_ERRORS
                       and "admin_resolved" not in obs.entity_events.get(("job", int(j["id"])),
                                                                          set())]
    figures["unexpected_dead_letters"] = len(unexpected_dead)
    findings["unexpected_dead_letters"] += [
        f"job {j['id']} ({j['kind']}, email {j.get('email_id')}): "
        f"{str(j.get('last_error') or 'no error recorded')[:160]}" for j in unexpected_dead]

    # --- drafts that should exist ---
    drafted = {int(d["email_id"]) for d in obs.drafts}
    missing_drafts = 0
    for t in truth:
        rows = rows_of.get(t.key, [])
        if not t.expects_draft or not rows or any(int(r["id"]) in drafted for r in rows):
            continue
        if any(str(r["status"]) in SEEN_BY_HUMAN and r.get("status_reason") for r in rows) or \
                any(str(r["status"]) == MailStatus.RESOLVED for r in rows):
            continue
        missing_drafts += 1
        findings["missing_drafts"].append(
            f"{t.key} ({t.kind}): no draft; " + ", ".join(
                f"email {r['id']} {r['status']}" for r in rows))
    figures["missing_drafts"] = missing_drafts

    # --- erasures (privacy_forget) ---
    figures["erasures"] = obs.erasures
    figures["privacy_leftovers"] = len(obs.privacy_leftovers)
    findings["privacy_leftovers"] += obs.privacy_leftovers
    figures["drafts_expected"] = sum(1 for t in truth if t.expects_draft)

    # --- ALARM lines ---
    figures["alarm_lines"] = len(obs.alarms)
    unexplained_alarms = [line for line in obs.alarms if not _alarm_explained(line, obs)]
    figures["unexplained_alarms"] = len(unexplained_alarms)
    findings["unexplained_alarms"] += [line[:240] for line in unexplained_alarms]

    # --- index ---
    left = [e for e in obs.emails if e.get("index_status") == IndexStatus.PARTIALLY_INDEXED]
    figures["partially_indexed_left"] = len(left)
    findings["partially_indexed_left"] += [f"email {e['id']}" for e in left]
    figures["partially_indexed"] = obs.partially_indexed_mails

    # --- activity ---
    c = obs.event_counts
    figures["retries"] = int(c.get("retry_scheduled", 0))
    figures["reconciled_sent"] = int(c.get("reconciled_sent", 0))
    figures["stuck_resets"] = int(c.get("stuck_reset", 0))
    figures["duplicate_deliveries_dropped"] = int(c.get("duplicate_delivery", 0))
    figures["replies_received"] = len(obs.received)
    figures["drafts_approved"] = len(obs.approved_drafts)
    _oauth(obs, figures, findings)
    return Verification(figures, {k: v for k, v in findings.items() if v},
                        {k: v for k, v in explained.items() if v})


def _alarm_explained(line: str, obs: Observed) -> bool:
    """An ALARM line a planned fault explains: a dead letter of an entry whose dead_letter
    event is in the audit log, a hung step whose entry was reset, or one of
    ``EXPECTED_ALARMS``."""
    dead = _ALARM_DEAD.search(line)
    if dead:
        return "dead_letter" in obs.entity_events.get(("job", int(dead.group(1))), set())
    hung = _ALARM_HUNG.search(line)
    if hung:
        return "stuck_reset" in obs.entity_events.get(("job", int(hung.group(1))), set())
    return any(text in line for text in EXPECTED_ALARMS)
