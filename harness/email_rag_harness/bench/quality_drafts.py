"""`email-rag bench quality --drafts`: the product's drafts on a labelled set, judged by the
facts a correct answer holds (issue 41; the set's format: bench/labelled/README.md).

    email-rag bench quality --drafts [--set PATH] [--only m01,m02] [--llm local|scripted]
                            [--json] [--keep] [--verbose]
    email-rag bench quality --compare A.json B.json

A run, in a fresh workspace (database, claimed Redis db, temp folder, private Dovecot):

1. the history: each case's mail into INBOX (dated before the mailbox's cut-off) and the
   team's reply into Sent (Message-ID, In-Reply-To, References), ``email-rag poll --once``
   (the product's history import) and burst workers until every history mail is indexed;
2. the knowledge: ``email-rag knowledge import <set>/knowledge --json`` when the product has
   the command ("knowledge import not available" otherwise: the run goes on);
3. the saved replies through the product's saved replies (email_rag.review.answers);
4. the new mails into INBOX, ``email-rag poll --once``, burst workers until every mail has
   reached a final state or the wait's bound (reported, with the mails still open);
5. per mail, read from the database: ``emails.status``; the newest draft's ``body_draft``,
   ``status``, ``check_flags`` and ``sources`` (JSON); the seconds of its LLM attempts
   (audit ``llm_attempt`` ``duration_ms``, the product's query ``llm_time_per_mail``);
6. the judge (bench/draft_judge.py) per mail and per group.

``run_set(set_path, llm, only, keep)`` returns the whole result as a dict (what ``--json``
prints): ``bench llm`` (issue 42) calls it per runtime configuration.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| the set breaks its format | after fixing it | yes: SetError lists every problem, nothing started | - |
| ``--only`` names an unknown mail | after fixing it | yes: SetError, nothing started | - |
| the product has no ``knowledge import`` | - | yes: step "not available" in the result | the run goes on |
| knowledge import fails | run again | yes: its exit code and message in the result | the run goes on |
| the history is not indexed / a mail not final within the bound | run again (slow machine) | yes: counts and ids in the result | the judge reads what is there |
| a labelled mail is not in the database after the poll | no: the pipeline lost it | yes: CheckFailed, no figures | - |
| Ctrl-C, a crash | run again | yes: the workspace is removed (``--keep``: kept, named) | - |
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from email_rag.core.settings import ENV_PREFIX, Settings
from email_rag.db import sql
from email_rag_harness.testing.labelled import SAVED_PREFIX, LabelledSet, load_set
from email_rag_harness.testing.team import (
    HISTORY_DOMAIN,
    NEW_DOMAIN,
    new_raws,
    poll,
    prepare,
    workers_until,
)

from . import draft_judge
from .common import CheckFailed, Report, Target, Workspace, machine

DEFAULT_SET = Path(__file__).resolve().parent / "labelled" / "kaffeewerk"
FINAL = frozenset({"draft_ready", "no_reply", "no_reply_suggested", "manual", "failed",
                   "rejected", "resolved", "sent"})
# the bound of the wait for the mails (seconds per mail, plus a start): the local model
# writes a draft in 20-130 s on this machine (docs/local-llm.md); the double in ms
WAIT_PER_MAIL = {"local": 300.0, "configured": 300.0, "scripted": 10.0}
WAIT_START = 180.0
def _set_plan(llm_env: dict[str, str], plan: dict[str, Any]) -> None:
    base = llm_env["EMAIL_RAG_LLM_BASE_URL"].rsplit("/v1", 1)[0]
    req = urllib.request.Request(base + "/_control/plan", data=json.dumps(plan).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


# --- reading what the product stored ---
def _source_names(raw: Any, history_of: dict[int, str],
                  articles: dict[int, str] | None = None) -> list[str]:
    """Short names of what a draft's sources JSON lists, as the set names them: a history
    case's id when the source is one of its mails (``origin`` mail:<id>), an article's
    ``knowledge/<file>`` or ``saved_replies.json#<title>`` (``origin`` knowledge:<id>:<n>,
    ``articles``), else a path / title / id as stored."""
    articles = articles or {}
    try:
        data = json.loads(raw) if isinstance(raw, str | bytes) else raw
    except ValueError:
        return ["(unreadable sources)"]
    items = data.get("sources", []) if isinstance(data, dict) else (data or [])
    names = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        origin = str(item.get("origin") or "")
        if origin.startswith("knowledge:") and origin.split(":")[1].isdigit() \
                and int(origin.split(":")[1]) in articles:
            names.append(articles[int(origin.split(":")[1])])
            continue
        ids = [item.get("email_id"), (item.get("reply") or {}).get("email_id")
               if isinstance(item.get("reply"), dict) else None,
               origin.removeprefix("mail:") if origin.startswith("mail:") else None]
        case = next((history_of[int(i)] for i in ids if i is not None
                     and str(i).isdigit() and int(i) in history_of), None)
        if case:
            names.append(case)
            continue
        for key in ("path", "article_path", "article", "saved_reply", "title", "id", "email_id"):
            if item.get(key):
                names.append(str(item[key]))
                break
    return names


def _source_text(raw: Any) -> str:
    """The text of the sources a draft was given (each source's ``text`` in its sources
    JSON): what the judge's "in sources" counts facts in."""
    try:
        data = json.loads(raw) if isinstance(raw, str | bytes) else raw
    except ValueError:
        return ""
    items = data.get("sources", []) if isinstance(data, dict) else []
    return "\n".join(str(i.get("text") or "") for i in items if isinstance(i, dict))


def _read(db: Any, s: LabelledSet) -> tuple[dict[str, draft_judge.DraftSeen], dict[str, str]]:
    history_of: dict[int, str] = {}
    by_message: dict[str, dict[str, Any]] = {}
    for row in db.fetchall(sql("bench_drafts_mails")):
        mid = str(row["message_id"] or "")
        if HISTORY_DOMAIN in mid:
            history_of[int(row["id"])] = mid.strip("<>").split("@")[0].removesuffix("-reply")
        elif NEW_DOMAIN in mid:
            by_message[mid.strip("<>").split("@")[0]] = row
    articles = {}
    for a in db.fetchall(sql("bench_drafts_articles")):
        articles[int(a["id"])] = (f"{SAVED_PREFIX}{a['title']}" if a["origin"] == "saved_reply"
                                  else f"knowledge/{Path(str(a['source_key'] or a['title'])).name}")
    seconds: dict[int, float] = {}
    for t in db.fetchall(sql("llm_time_per_mail")):
        key = int(t["email_id"])
        seconds[key] = seconds.get(key, 0.0) + float(t["seconds"] or 0)
    seen = {}
    for mail_id, row in by_message.items():
        seen[mail_id] = draft_judge.DraftSeen(
            mail_status=row["status"], body=row["body_draft"], draft_status=row["draft_status"],
            flags=row["check_flags"], sources=_source_names(row["sources"], history_of, articles)
            if row["sources"] else [], model_seconds=seconds.get(int(row["id"]), 0.0),
            source_text=_source_text(row["sources"]) if row["sources"] else "")
    statuses = {k: str(v["status"]) for k, v in by_message.items()}
    return seen, statuses


def _attempts(db: Any, s: LabelledSet) -> dict[str, list[dict[str, Any]]]:
    """Per labelled mail, its LLM attempts as the product audited them (``llm_attempt``: task,
    outcome, duration, the server's timings): what ``bench llm`` counts."""
    ids = {}
    for row in db.fetchall(sql("bench_drafts_mails")):
        mid = str(row["message_id"] or "")
        if NEW_DOMAIN in mid:
            ids[int(row["id"])] = mid.strip("<>").split("@")[0]
    out: dict[str, list[dict[str, Any]]] = {m: [] for m in ids.values()}
    for row in db.fetchall(sql("bench_drafts_llm_attempts")):
        if int(row["entity_id"]) in ids:
            detail = row["detail"]
            out[ids[int(row["entity_id"])]].append(
                json.loads(detail) if isinstance(detail, str | bytes) else detail)
    return out


@contextmanager
def _progress(database: str, s: LabelledSet, total: int, say: Any, every: float = 60.0
              ) -> Iterator[None]:
    """A line every ``every`` s while the workers draft: how many mails are final (its own
    connection: the run's is not shared across threads)."""
    from email_rag.db import Database

    from .common import MARIADB

    stop = threading.Event()
    started = time.monotonic()

    def report() -> None:
        db = Database(**MARIADB, database=database)
        try:
            while not stop.wait(every):
                done = sum(v in FINAL for v in _read(db, s)[1].values())
                say(f"mails: {done} of {total} final after {time.monotonic() - started:.0f} s")
        finally:
            db.close()

    thread = threading.Thread(target=report, daemon=True, name="drafts-progress")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


# --- the run ---
def _llm(stack: ExitStack, llm: str, work: Path, endpoint: tuple[str, str] | None = None
         ) -> tuple[dict[str, str], str]:
    if endpoint is not None:  # a server the caller started (bench llm's configurations)
        return ({ENV_PREFIX + "LLM_BASE_URL": endpoint[0], ENV_PREFIX + "LLM_MODEL": endpoint[1]},
                f"{endpoint[1]} at {endpoint[0]}")
    if llm == "configured":  # the workspace's environment drops EMAIL_RAG_*: keep the LLM's
        s = Settings()
        return ({k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX + "LLM_")},
                f"configured {s.llm_model} at {s.llm_base_url}")
    from email_rag_harness.testing.demo import _llm_endpoint

    return _llm_endpoint(stack, llm == "scripted", work)


def run_set(set_path: str | Path | None = None, llm: str = "local", only: list[str] | None = None,
            keep: bool = False, *, say: Any = None, db_prefix: str = "erag_bench_",
            scripted_plan: dict[str, Any] | None = None,
            embedding_backend: str | None = None, code: Path | None = None,
            endpoint: tuple[str, str] | None = None) -> dict[str, Any]:
    """One run of the labelled set ``set_path`` (default: kaffeewerk) with ``llm`` (local,
    configured, scripted); ``only``: these mail ids; ``keep``: leave the database and the
    temp folder (named in the result). ``scripted_plan``: the scripted double's fault plan
    (tests script drafts with it); ``embedding_backend``: default hashing with the double,
    the configured one otherwise. Returns the result dict (module docstring)."""
    say = say or (lambda text: print(f"[bench drafts] {text}", file=sys.stderr, flush=True))
    s = load_set(Path(set_path or DEFAULT_SET).resolve())  # the processes run elsewhere
    mails = s.only(only)
    embedder = embedding_backend or ("hashing" if llm == "scripted" else Settings().embedding_backend)
    started = time.monotonic()
    steps: dict[str, Any] = {}
    with Workspace("drafts", prefix=db_prefix, keep=keep) as ws, ExitStack() as stack:
        from email_rag_harness.testing.dovecot import Dovecot, mailboxes_json

        dovecot = stack.enter_context(Dovecot())
        user = dovecot.add_user(s.mailbox)
        user.create_folder("Sent")
        llm_env, endpoint_text = _llm(stack, llm, ws.tmp, endpoint)
        if scripted_plan is not None and llm == "scripted":
            _set_plan(llm_env, scripted_plan)
        db = ws.database()
        stack.callback(db.close)
        now = datetime.now(UTC).replace(microsecond=0)
        box = user.config.model_copy(update={"history_cutoff": now - timedelta(minutes=10)})
        extra: dict[str, Any] = {"history_import": True, "embedding_backend": embedder}
        if llm != "scripted":
            extra["llm_max_concurrent"] = Settings().llm_max_concurrent
        env = {**ws.env(db, **extra), "EMAIL_RAG_MAILBOXES": mailboxes_json([box]), **llm_env}
        if code is not None:  # another version of the product runs the processes
            env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")])
        settings = ws.settings(db, mailboxes=[box], **extra)
        say(f"{s.name}: {len(mails)} mails, {len(s.history)} history cases; LLM {endpoint_text}; "
            f"embeddings {embedder}; database {db.database}")

        steps.update(prepare(s, user, env, ws.tmp, db, settings, box.name, say))

        user.deliver(new_raws(mails, s.mailbox, datetime.now(UTC).replace(microsecond=0)))
        steps["mails_poll"] = poll(env, ws.tmp)
        bound = WAIT_START + WAIT_PER_MAIL.get(llm, 300.0) * len(mails)

        def final() -> bool:
            statuses = _read(db, s)[1]
            return len(statuses) >= len(mails) and all(v in FINAL for v in statuses.values())

        with _progress(db.database, s, len(mails), say):
            ok, secs = workers_until(env, ws.tmp, final, bound)
        seen, statuses = _read(db, s)
        missing = [m.id for m in mails if m.id not in seen]
        if missing:
            raise CheckFailed(f"labelled mail(s) {', '.join(missing)} not stored by the poll")
        open_ = sorted(k for k, v in statuses.items() if v not in FINAL)
        steps["mails"] = {"final": not open_, "not_final": open_, "bound_s": round(bound),
                          "seconds": round(secs, 1)}
        say(f"mails: {len(mails) - len(open_)} of {len(mails)} final after {secs:.0f} s")
        judgements = [draft_judge.judge(m, seen[m.id]) for m in mails]
        attempts = _attempts(db, s)
        kept = {"database": db.database, "folder": str(ws.tmp)} if keep else None
    return {"set": s.name, "set_path": str(s.path), "date": datetime.now(UTC).isoformat(
        timespec="seconds"), "machine": machine(), "endpoint": endpoint_text, "llm": llm,
        "code": str(code) if code else None, "llm_attempts": attempts,
        "embedding_backend": embedder, "steps": steps,
        "seconds": round(time.monotonic() - started, 1),
        "groups": draft_judge.summarise(judgements),
        "mails": [{**j.as_dict(), "draft": seen[j.id].body} for j in judgements], "kept": kept,
        "columns_read": ["emails.status", "emails.message_id", "drafts.body_draft",
                         "drafts.status", "drafts.check_flags", "drafts.sources",
                         "audit_log llm_attempt duration_ms (llm_time_per_mail)"]}


def targets(groups: dict[str, dict[str, Any]]) -> list[Target]:
    """Issue 41's "Done when", as far as one run measures it."""
    answered = [groups[g] for g in ("past_reply", "article") if g in groups]
    n = sum(g["mails"] for g in answered)
    out = []
    if n:
        out += [Target("past_reply + article: mean fact recall >= 0.85",
                       round(sum(g["mean_fact_recall"] * g["mails"] for g in answered) / n, 3),
                       0.85),
                Target("past_reply + article: share of drafts with every fact >= 0.70",
                       round(sum(g["all_facts_share"] * g["mails"] for g in answered) / n, 3),
                       0.70)]
    out += [Target("drafts stating a fact the set marks wrong = 0",
                   sum(g["drafts_with_wrong_fact"] for g in groups.values()), 0, False),
            Target("drafts repeating the customer's mail (echo > 0.4) = 0",
                   sum(g["echo_drafts"] for g in groups.values()), 0, False),
            Target("drafts not in the customer's language = 0",
                   sum(g["wrong_language"] for g in groups.values()), 0, False)]
    if "no_source" in groups:
        ns = groups["no_source"]
        out += [Target("no_source: drafts that ask or defer >= 0.90", ns["ask_defer_share"], 0.9),
                Target("no_source: drafts promising a refund, date or amount = 0",
                       ns["drafts_with_promise"], 0, False)]
    if "no_reply" in groups:
        out.append(Target("no_reply: share of mails drafted = 0",
                          groups["no_reply"]["drafted_share"], 0, False))
    return out


def report(result: dict[str, Any], verbose: bool = False) -> Report:
    from email_rag.cli.output import table

    groups = result["groups"]
    steps = result["steps"]
    notes = [f"set {result['set']} ({len(result['mails'])} mails), LLM {result['endpoint']}, "
             f"embeddings {result['embedding_backend']}; run took {result['seconds']} s",
             f"history: {steps['history']}",
             f"knowledge: {steps['knowledge'].get('detail') or steps['knowledge']}",
             f"saved replies: {steps['saved_replies']}; mails: {steps['mails']}",
             "recall and all-facts count a mail without a draft as 0; ask/defer, echo, wrong "
             "facts, promises and language are counted over the drafts"]
    if result["llm"] == "scripted":
        notes.append("scripted test double: canned drafts, the figures test the bench, not a model")
    if result.get("kept"):
        notes.append(f"kept: {result['kept']}")
    if verbose:
        notes.append(table(draft_judge.mail_rows(result["mails"]), draft_judge.MAIL_COLUMNS))
    answered = [groups[g] for g in ("past_reply", "article") if g in groups]
    recall = [g["mean_fact_recall"] for g in answered]
    summary = (f"drafts on {result['set']}: " + ", ".join(
        f"{g} recall {f['mean_fact_recall']}" for g, f in groups.items()
        if f["mean_fact_recall"] is not None) + (f"; no_source ask/defer "
        f"{groups['no_source']['ask_defer_share']}" if "no_source" in groups else "")
        + f" ({result['endpoint']})") if recall or groups else f"drafts on {result['set']}"
    checks = [f"every one of the {len(result['mails'])} labelled mails stored by the poll and "
              "read back from the database"]
    return Report("quality", summary, draft_judge.COLUMNS, draft_judge.group_rows(groups),
                  result, targets(groups), checks, notes)


def run(args: Any) -> Report:
    if getattr(args, "compare", None):
        a, b = (_load_result(Path(p)) for p in args.compare)
        head, rows = draft_judge.compare(a, b)
        return Report("quality", head, ["group", "measure", "A", "B"], rows,
                      {"compare": [str(p) for p in args.compare], "rows_compared": len(rows)})
    only = [x.strip() for x in (args.only or "").split(",") if x.strip()] or None
    result = run_set(args.set or DEFAULT_SET, args.llm or "local", only, bool(args.keep))
    return report(result, bool(getattr(args, "verbose", False)))


def _load_result(path: Path) -> dict[str, Any]:
    """A saved ``--json`` output (the CLI's {"ok", "data": {...}} or the bare result)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get("data", data) if isinstance(data, dict) else {}

