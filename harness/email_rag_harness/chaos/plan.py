"""The fault plan of a chaos run: JSON, seeded, reproducible.

``default_plan(mails, seed)`` derives everything from the two numbers (same
numbers, same plan, byte for byte); ``--plan FILE`` replaces it with a plan
of the same shape (``validate`` says what is wrong with one). Shape::

    {"version": 1, "seed": 7, "mails": 60,
     "corpus": {"duplicate_rate": .., "auto_rate": .., "malformed_rate": ..,
                "followup_rate": ..},
     "deliveries": [[at_s, fraction], ...],      # waves into the IMAP inbox
     "workers": {"plain": 2},                     # plus exactly one --with-vectors worker
     "timing": {"deadline_s": .., "settle_s": ..},
     "env": {"EMAIL_RAG_...": "..."},             # short intervals for every process
     "llm": {scripted LLM server plan: seed, latency_ms, rules},
     "staff": {"reject_rate": .., "double_approve_rate": .., "interval_s": ..},
     "events": [{"at": s, "fault": NAME, ...}, ...]}

Events (``at``: seconds after the fleet started):

| fault | what the harness does |
|---|---|
| ``smtp`` | arm the fault relay (once it has received ``after_received`` messages, so the SMTP faults spread over the sending) : the next message at ``stage`` gets ``action`` (a reply line like ``421 ...``, ``drop``, or ``stall`` for ``seconds``; ``tag: kill`` = SIGKILL the worker holding that SMTP connection during the stall, i.e. between the relay's accept and the worker marking it sent; ``tag: unfiled`` = the relay does not file that message into the Sent folder, so reconciliation cannot find it and the send ends ``unknown``) |
| ``kill_llm_call`` | SIGKILL the worker whose LLM call of ``kind`` is in flight (mid-step); waits up to ``wait_s`` for one |
| ``kill_worker`` | SIGKILL a worker of ``role`` (vectors / plain) wherever it is |
| ``imap_cut`` | IMAP connections through the proxy are cut after ``bytes`` bytes for ``seconds`` (drops mid-FETCH) |
| ``imap_sever`` | every open IMAP connection is dropped now |
| ``qdrant_outage`` | once the collection exists, the local Qdrant storage is locked by another process for ``seconds`` and then until an index write gave up (at most ``max_seconds``); the next delivery wave waits until the lock is in force, so its mails are indexed into the outage: index writes fail, mails become partially_indexed, the periodic sync repairs them. After the last wave it meets whatever is still to be indexed (retries, the sync's own writes) and holds the store at most ``max_seconds``; the run settles only once the store is back and the sync repaired what the outage left |
| ``redis_flush`` | FLUSHDB on the run's Redis db (every RQ job and worker record gone) |
| ``db_kill_connections`` | KILL every MariaDB connection of the run's database |
| ``db_down`` | the TCP proxy in front of MariaDB refuses and drops connections for ``seconds`` |
| ``redeliver`` | ``count`` finished queue entries are delivered again through RQ (a duplicate delivery, as after a broker failover or a re-dispatch race) |
| ``db_crash`` | ``kill -9`` of the run's own mariadbd, restarted after ``seconds`` (InnoDB crash recovery); waits until no Qdrant outage is in force |
| ``db_hang`` | SIGSTOP of the run's mariadbd for ``seconds``: connections open, no answer |
| ``redis_crash`` | ``kill -9`` of the run's own redis-server, restarted empty after ``seconds`` |
| ``imap_silence`` | the IMAP proxy holds back every byte from Dovecot for ``seconds`` while connections stay open (a server that stops answering and stops sending IDLE notifications without closing) |
| ``kill_idle`` | SIGKILL of the ``email-rag idle`` process holding the mailbox's lease (its replacement waits for the lease) |
| ``oauth_token`` | the OAuth2 token endpoint the run's mailbox logs in through fails for ``seconds``: ``mode: down`` answers 503 to every token request (access tokens already granted stay valid until they expire, every 8 s); ``mode: invalid_grant`` revokes the consent (the refresh token and every access token are refused, ``invalid_grant``), then, once the ALARM shows (at most ``max_seconds``), the harness authorizes the mailbox again as an admin would (``email-rag mailboxes authorize``, the code of a fresh consent pasted); token requests in the window are counted (no refresh storm) |
| ``misroute`` | the vector worker is killed and kept down for ``restart_after`` s while the vector queue's open entries are enqueued on the plain queue (an RQ message reaching a worker of the other queue) |
| ``db_blackhole_worker`` | the MariaDB proxy stops forwarding (and closes nothing) for ``seconds``, longer than every timeout, on every connection of ONE worker that holds a mail entry (waits up to ``wait_s`` for one), new connections of that worker included; every other process is served: the worker is alive but its entry is stuck until the stuck reset hands it to another worker |

Admin and staff actions are events with ``act`` instead of ``fault`` (see
``chaos.admin``): ``admin_console``, ``admin_retry_refused_sends``,
``admin_cli_retry_failed``, ``admin_decide_unknown_sends``, ``staff_regenerate``,
``privacy_forget``;
``wait_s``: how long the act waits for something to act on.

``default_plan`` is random per seed, not a fixed script with shifted times: the
magnitudes (outage lengths, cut sizes, LLM fault rates x0.5-2), the places of the
server crashes and admin acts, and a few extra faults drawn from a pool differ
from seed to seed. Every plan holds at least: two MariaDB crashes (one down for
longer than every timeout, >= 20 s), two Redis crashes, a hung MariaDB, a misroute,
a Qdrant outage, one worker's MariaDB link blackholed for longer than every timeout,
every SMTP fault class and every admin act.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

from .admin import ACTS

PLAN_VERSION = 1
FAULTS = ("smtp", "kill_llm_call", "kill_worker", "imap_cut", "imap_sever", "qdrant_outage",
          "redis_flush", "db_kill_connections", "db_down", "redeliver", "db_crash", "db_hang",
          "redis_crash", "misroute", "imap_silence", "kill_idle", "oauth_token",
          "db_blackhole_worker")
OAUTH_MODES = ("down", "invalid_grant")
LONG_OUTAGE_S = 20.0  # longer than every timeout of the pipeline (LLM, SMTP, IMAP, DB, lease)
DECISIONS = ("approve", "double_approve", "reject")

# Settings every process of the run gets: short intervals so a run takes seconds, not hours.
# stuck_after_seconds must exceed the longest legitimate step: a Qdrant outage blocks an
# index write for store_tries x 5 s (the local store's SQLite busy timeout); an outage must
# last longer than that (16 s) for a write to give up and leave the mail partially_indexed.
BASE_ENV: dict[str, str] = {
    "EMAIL_RAG_RETRY_DELAYS": "[1, 2, 3]",
    "EMAIL_RAG_MAX_ATTEMPTS": "4",
    "EMAIL_RAG_RETRY_JITTER": "0",
    "EMAIL_RAG_STUCK_AFTER_SECONDS": "13",
    "EMAIL_RAG_CLEANUP_INTERVAL_SECONDS": "1",
    "EMAIL_RAG_REDISPATCH_INTERVAL_SECONDS": "1",
    "EMAIL_RAG_REINDEX_INTERVAL_SECONDS": "2",
    "EMAIL_RAG_POLL_INTERVAL_SECONDS": "1",
    "EMAIL_RAG_JOB_TIMEOUT_SECONDS": "120",
    "EMAIL_RAG_IMAP_TIMEOUT": "5",
    "EMAIL_RAG_IMAP_BACKOFF_BASE": "0.5",
    "EMAIL_RAG_IMAP_BACKOFF_CAP": "2",
    "EMAIL_RAG_IMAP_FETCH_BATCH": "25",
    "EMAIL_RAG_POLL_LEASE_SECONDS": "15",
    "EMAIL_RAG_IDLE_REFRESH_SECONDS": "5",
    "EMAIL_RAG_IDLE_WAIT_SECONDS": "2",
    "EMAIL_RAG_LLM_TIMEOUT": "1.5",
    "EMAIL_RAG_LLM_MAX_RETRY_AFTER": "5",
    "EMAIL_RAG_SMTP_TIMEOUT": "2",
    "EMAIL_RAG_STORE_TRIES": "2",
    "EMAIL_RAG_STORE_BACKOFF": "0.3",
    "EMAIL_RAG_DB_OUTAGE_BACKOFF_MAX": "1",
    "EMAIL_RAG_DB_CONNECT_TIMEOUT": "2",
    # a worker's statement that gets no answer fails after this (then it waits for
    # MariaDB); longer than a hung MariaDB (db_hang) need not be: that is an outage too
    "EMAIL_RAG_WORKER_DB_TIMEOUT_SECONDS": "8",
    "EMAIL_RAG_EMBEDDING_BACKEND": "hashing",
    "EMAIL_RAG_VECTOR_LOCK_WAIT_SECONDS": "60",
    "EMAIL_RAG_LOG_LEVEL": "WARNING",
}


class PlanError(ValueError):
    """The fault plan is not valid."""


def _round(x: float) -> float:
    return round(x, 2)


def active_seconds(mails: int) -> float:
    """The stretch of a run over which deliveries and faults are spread."""
    return max(30.0, 0.2 * mails)


def default_plan(mails: int, seed: int) -> dict[str, Any]:
    """The plan for ``mails`` generated mails and ``seed`` (reproducible)."""
    if mails < 10:
        raise PlanError("a chaos run needs at least 10 mails")
    rng = random.Random(f"chaos-plan:{seed}:{mails}")
    span = active_seconds(mails)
    rounds = max(1, round(mails / 150))
    # each round of the fault cycle gets its share of the mail, in the same waves, so that
    # every round's faults (the Qdrant outage above all) meet mail still to be processed
    waves = ((0.0, 0.4), (0.08, 0.15), (0.25, 0.15), (0.45, 0.15), (0.6, 0.15))
    deliveries = [[_round(span * (r + f) / rounds), share / rounds]
                  for r in range(rounds) for f, share in waves]

    # the Qdrant outage comes early and alone with the LLM/SMTP faults: an index write
    # blocked in it must give up (store_tries x 5 s) before a MariaDB fault makes the
    # worker repeat the step after the outage (then the mail is simply indexed)
    cycle: list[tuple[float, dict[str, Any]]] = [
        (0.05, {"fault": "smtp", "stage": "mail", "action": "421 4.3.2 service shutting down"}),
        (0.07, {"fault": "smtp", "stage": "data", "action": "stall", "seconds": 4.0,
                "tag": "timeout"}),
        (0.08, {"fault": "kill_llm_call", "kind": "classify", "wait_s": 10.0}),
        (0.10, {"fault": "imap_cut", "bytes": 2500 + rng.randrange(4000),
                "seconds": _round(rng.uniform(1.0, 4.0))}),
        (0.12, {"fault": "qdrant_outage", "seconds": _round(rng.uniform(16.0, 24.0)),
                "max_seconds": 180.0}),
        (0.18, {"fault": "smtp", "stage": "rcpt", "action": "451 4.7.1 greylisted, try later"}),
        (0.27, {"fault": "smtp", "stage": "data", "action": "stall", "seconds": 6.0,
                "tag": "kill"}),
        (0.30, {"fault": "redis_flush"}),
        (0.34, {"fault": "kill_llm_call", "kind": "draft", "wait_s": 15.0}),
        (0.40, {"fault": "smtp", "stage": "data", "action": "550 5.1.1 mailbox unavailable"}),
        (0.50, {"fault": "imap_sever"}),
        (0.52, {"fault": "smtp", "stage": "data", "action": "stall", "seconds": 4.0,
                "tag": "unfiled"}),
        (0.55, {"fault": "smtp", "stage": "mail", "action": "drop"}),
        (0.66, {"fault": "smtp", "stage": "data", "action": "451 4.3.0 queue full"}),
        (0.70, {"fault": "db_kill_connections"}),
        (0.74, {"fault": "redeliver", "count": 3 + rng.randrange(3)}),
        (0.76, {"fault": "smtp", "stage": "data", "action": "stall", "seconds": 6.0,
                "tag": "kill"}),
        (0.80, {"fault": "db_down", "seconds": _round(rng.uniform(2.0, 6.0))}),
        (0.86, {"fault": "kill_worker", "role": "vectors"}),
        (0.90, {"fault": "kill_llm_call", "kind": "chat", "wait_s": 15.0}),
        (0.93, {"fault": "smtp", "stage": "data", "action": "stall", "seconds": 4.0,
                "tag": "timeout"}),
    ]
    events = []
    for r in range(rounds):
        for frac, event in cycle:
            at = span * (r + frac) / rounds + rng.uniform(-0.3, 0.3)
            extra = {}
            if event["fault"] == "smtp":  # spread over the sends, which come late in a run
                extra["after_received"] = int(0.6 * mails * (r + frac) / rounds)
            events.append({"at": _round(max(0.5, at)), **event, **extra})
    for r in range(rounds):
        for lo, hi, event in _server_faults(rng, r):
            at = span * (r + rng.uniform(lo, hi)) / rounds
            events.append({"at": _round(max(0.5, at)), **event})
        for act in ACTS:
            at = span * (r + rng.uniform(0.3, 0.95)) / rounds
            # an act waits for something to act on as long as a loaded machine may need to
            # produce it (the first drafts came 86 s into a run beside the test suite); a
            # waiting act does not keep the run from settling
            events.append({"at": _round(at), "act": act,
                           "wait_s": 150.0 if act in ("admin_console", "staff_regenerate")
                           else 240.0})
    events.sort(key=lambda e: e["at"])
    # the Qdrant outage lasts until an index write gave up (up to max_seconds: a vector
    # worker restarted in it waits for the store before it gives up, 91 s in seed 7 beside
    # other work): the deadline leaves room for all of it
    outages = sum(float(e.get("seconds", 0)) for e in events
                  if e.get("fault") in ("db_crash", "db_hang", "redis_crash", "db_down",
                                        "db_blackhole_worker")) + max(
        [float(e.get("max_seconds", 0)) for e in events if e.get("fault") == "qdrant_outage"]
        or [0.0])

    rate = round(rng.uniform(0.5, 2.0), 2)  # the LLM's fault rates, x0.5 to x2
    llm_delay = 3.0  # > EMAIL_RAG_LLM_TIMEOUT: the client gives up first
    llm = {
        "seed": seed, "latency_ms": 60,
        "rules": [
            {"fault": "timeout_before", "kind": "chat", "probability": 0.025 * rate, "delay": llm_delay},
            {"fault": "timeout_after", "kind": "chat", "probability": 0.025 * rate, "delay": llm_delay},
            {"fault": "invalid_json", "kind": "classify", "probability": 0.04 * rate},
            {"fault": "schema_violation", "kind": "classify", "probability": 0.03 * rate},
            {"fault": "status", "status": 429, "retry_after": 0.3, "kind": "chat",
             "probability": 0.04 * rate},
            {"fault": "status", "status": 500, "kind": "chat", "probability": 0.025 * rate},
            {"fault": "status", "status": 503, "kind": "chat", "probability": 0.02 * rate},
        ],
    }
    plan = {
        "version": PLAN_VERSION, "seed": seed, "mails": mails,
        "corpus": {"duplicate_rate": 0.08, "auto_rate": 0.06, "malformed_rate": 0.03,
                   "followup_rate": 0.12, "race_rate": 0.1},
        "deliveries": deliveries,
        "workers": {"plain": 2},
        "timing": {"deadline_s": _round(120 + 1.2 * mails + outages), "settle_s": 2.0},
        "env": dict(BASE_ENV),
        "llm": llm,
        "staff": {"reject_rate": 0.1, "double_approve_rate": 0.25, "interval_s": 0.3},
        "events": events,
    }
    return validate(plan)


# extra faults drawn per seed and round (on top of the fixed minimum below)
POOL: tuple[dict[str, Any], ...] = (
    {"fault": "kill_worker", "role": "plain"},
    {"fault": "kill_worker", "role": "vectors"},
    {"fault": "redis_flush"},
    {"fault": "db_kill_connections"},
    {"fault": "imap_sever"},
    {"fault": "kill_llm_call", "kind": "chat", "wait_s": 15.0},
    {"fault": "redeliver", "count": 4},
    {"fault": "oauth_token", "mode": "down"},
    {"fault": "oauth_token", "mode": "invalid_grant"},
)


def _server_faults(rng: random.Random, r: int) -> list[tuple[float, float, dict[str, Any]]]:
    """Real server crashes and the misroute, with random places and lengths: (earliest,
    latest fraction of the round, event). The first round's first MariaDB crash is longer
    than every timeout."""
    long_down = _round(rng.uniform(LONG_OUTAGE_S, LONG_OUTAGE_S + 6)) if r == 0 else \
        _round(rng.uniform(2.0, 8.0))
    out = [
        (0.15, 0.45, {"fault": "db_crash", "seconds": long_down}),
        (0.55, 0.85, {"fault": "db_crash", "seconds": _round(rng.uniform(1.0, 4.0))}),
        (0.2, 0.5, {"fault": "redis_crash", "seconds": _round(rng.uniform(1.0, 6.0))}),
        (0.6, 0.9, {"fault": "redis_crash", "seconds": _round(rng.uniform(1.0, 4.0))}),
        (0.3, 0.8, {"fault": "db_hang", "seconds": _round(rng.uniform(3.0, 8.0))}),
        (0.25, 0.6, {"fault": "misroute", "restart_after": _round(rng.uniform(3.0, 6.0))}),
        (0.1, 0.7, {"fault": "imap_silence", "seconds": _round(rng.uniform(6.0, 12.0))}),
        (0.3, 0.9, {"fault": "kill_idle"}),
    ]
    for extra in rng.sample(POOL, rng.randint(1, 3)):
        event = dict(extra)
        if event["fault"] == "oauth_token":  # longer than an access token lives (8 s)
            event.update(seconds=_round(rng.uniform(9.0, 16.0)), max_seconds=60.0)
        out.append((0.1, 0.9, event))
    out.append((0.2, 0.7, {"fault": "db_blackhole_worker",
                           "seconds": _round(rng.uniform(LONG_OUTAGE_S, LONG_OUTAGE_S + 10)),
                           "wait_s": 150.0}))
    return out


def validate(plan: Any) -> dict[str, Any]:
    """A checked, normalised copy; ``PlanError`` says what is wrong."""
    if not isinstance(plan, dict):
        raise PlanError("the plan must be a JSON object")
    p = copy.deepcopy(plan)
    if p.get("version") != PLAN_VERSION:
        raise PlanError(f"plan version must be {PLAN_VERSION}")
    for key in ("seed", "mails"):
        if not isinstance(p.get(key), int):
            raise PlanError(f"plan.{key} must be an integer")
    if p["mails"] < 10:
        raise PlanError("plan.mails must be at least 10")
    waves = p.get("deliveries")
    if (not isinstance(waves, list) or not waves
            or not all(isinstance(w, list) and len(w) == 2 for w in waves)):
        raise PlanError("plan.deliveries must be a list of [at_s, fraction] pairs")
    if abs(sum(float(w[1]) for w in waves) - 1.0) > 1e-6:
        raise PlanError("the delivery fractions must add up to 1")
    corpus_keys = {"duplicate_rate", "auto_rate", "malformed_rate", "followup_rate",
                   "attachment_rate", "race_rate"}
    corpus = p.setdefault("corpus", {})
    if not isinstance(corpus, dict) or set(corpus) - corpus_keys or not all(
            isinstance(v, int | float) and 0 <= v <= 1 for v in corpus.values()):
        raise PlanError(f"plan.corpus takes rates between 0 and 1 for {sorted(corpus_keys)}")
    if int(p.get("workers", {}).get("plain", 0)) < 1:
        raise PlanError("plan.workers.plain must be at least 1")
    timing = p.setdefault("timing", {})
    timing.setdefault("deadline_s", 90 + 0.9 * p["mails"])
    timing.setdefault("settle_s", 2.0)
    env = p.setdefault("env", {})
    if not all(isinstance(k, str) and k.startswith("EMAIL_RAG_") for k in env):
        raise PlanError("plan.env keys must be EMAIL_RAG_* settings")
    for forbidden in ("EMAIL_RAG_DB_NAME", "EMAIL_RAG_REDIS_URL"):
        if forbidden in env:
            raise PlanError(f"plan.env must not set {forbidden}: the harness sets it per run")
    if "EMAIL_RAG_SAFEGUARDS" in env:
        raise PlanError("plan.env must not set EMAIL_RAG_SAFEGUARDS: it is no setting; the "
                        "harness builds each column's processes (naive: email_rag_harness.chaos.naive)")
    from ..testing.llm_server import normalise_plan

    try:
        p["llm"] = normalise_plan(p.get("llm") or {})
    except ValueError as e:
        raise PlanError(f"plan.llm: {e}") from e
    staff = p.setdefault("staff", {})
    for key, default in (("reject_rate", 0.1), ("double_approve_rate", 0.25),
                         ("interval_s", 0.3)):
        staff[key] = float(staff.get(key, default))
    if staff["reject_rate"] + staff["double_approve_rate"] > 1:
        raise PlanError("staff.reject_rate + staff.double_approve_rate must be at most 1")
    events = p.setdefault("events", [])
    for i, e in enumerate(events):
        if isinstance(e, dict) and "act" in e:
            if e["act"] not in ACTS or "fault" in e:
                raise PlanError(f"event {i}: act must be one of {', '.join(ACTS)} (and no fault)")
            if not isinstance(e.get("at"), int | float) or e["at"] < 0:
                raise PlanError(f"event {i}: 'at' must be seconds >= 0")
            continue
        if not isinstance(e, dict) or e.get("fault") not in FAULTS:
            raise PlanError(f"event {i}: fault must be one of {', '.join(FAULTS)}")
        if not isinstance(e.get("at"), int | float) or e["at"] < 0:
            raise PlanError(f"event {i}: 'at' must be seconds >= 0")
        if e["fault"] == "smtp":
            if e.get("stage") not in ("mail", "rcpt", "data"):
                raise PlanError(f"event {i}: smtp stage must be mail, rcpt or data")
            action = str(e.get("action", ""))
            if action not in ("drop", "stall") and not action[:3].isdigit():
                raise PlanError(f"event {i}: smtp action must be drop, stall or an SMTP reply")
            if action == "stall" and e["stage"] != "data":
                raise PlanError(f"event {i}: a stall happens at the data stage only")
            if e.get("tag", "") not in ("", "kill", "timeout", "unfiled"):
                raise PlanError(f"event {i}: smtp tag must be kill, timeout or unfiled")
        if e["fault"] == "oauth_token" and e.get("mode") not in OAUTH_MODES:
            raise PlanError(f"event {i}: oauth_token mode must be {' or '.join(OAUTH_MODES)}")
        if e["fault"] == "kill_worker" and e.get("role") not in ("vectors", "plain"):
            raise PlanError(f"event {i}: kill_worker role must be vectors or plain")
        if e["fault"] == "kill_llm_call" and e.get("kind", "chat") not in (
                "classify", "draft", "chat"):
            raise PlanError(f"event {i}: kill_llm_call kind must be classify, draft or chat")
        for key in ("seconds", "max_seconds", "bytes", "count", "wait_s", "after_received",
                    "restart_after"):
            if key in e and (not isinstance(e[key], int | float) or e[key] < 0):
                raise PlanError(f"event {i}: {key} must be a number >= 0")
    events.sort(key=lambda e: e["at"])
    return p


def load(path: Path | str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise PlanError(f"cannot read the plan {path}: {e}") from e
    return validate(data)


def dumps(plan: dict[str, Any]) -> str:
    return json.dumps(plan, indent=2, sort_keys=True)


def decision(plan: dict[str, Any], key: str) -> str:
    """What staff do with the draft(s) of generated mail ``key`` (seeded per mail, so both
    columns, and duplicate rows of one mail, get the same decision)."""
    rng = random.Random(f"chaos-staff:{plan['seed']}:{key}")
    roll = rng.random()
    staff = plan["staff"]
    if roll < staff["reject_rate"]:
        return "reject"
    if roll < staff["reject_rate"] + staff["double_approve_rate"]:
        return "double_approve"
    return "approve"


def counts(plan: dict[str, Any]) -> dict[str, int]:
    """How many events of each fault the plan holds (for the report)."""
    out: dict[str, int] = {}
    for e in plan["events"]:
        if "act" in e:
            name = e["act"]
        elif e["fault"] == "smtp":
            name = f"smtp_{e.get('tag') or e['action'][:3]}"
        elif e["fault"] == "oauth_token":
            name = f"oauth_{e['mode']}"
        else:
            name = e["fault"]
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))


def delivery_sizes(plan: dict[str, Any], total: int) -> list[int]:
    """How many of ``total`` deliveries each wave carries (they add up to ``total``)."""
    sizes = [math.floor(total * float(f)) for _, f in plan["deliveries"]]
    sizes[0] += total - sum(sizes)
    return sizes
