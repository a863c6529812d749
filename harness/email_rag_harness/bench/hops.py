"""Hop count: how many module boundaries one mail crosses, poller to draft and approval to send.

    python -m bench hops [--json]

One mail is delivered to a private Dovecot mailbox, polled by the poller, run by
the job runner (scripted LLM server, hashing embedder, local Qdrant) until its
draft is ready; then the draft is approved by the staff function and the send
job sends it to the local SMTP relay. Each leg runs under ``sys.setprofile``:
a *hop* is a Python call from a function of one product module (email_rag.*)
into a function of another; ``modules`` is how many project
modules the leg touched, ``edges`` how many distinct caller -> callee module
pairs, ``back_edges`` how many of those pairs also occur reversed (A calls B and
B calls A: the path does not read in one direction); ``statements`` and ``commits``
are the MariaDB statements and transactions of the leg (the services' connection).
Figures count calls, not time; for the same code and mail they vary by a few hops
from run to run (the poller's and the runner's paths depend on timing at the edges).

``--statements`` lists every statement of both legs (its named query, or the start of
its text) and every commit, each with where it was sent: the pipeline step, the
checkpoint, or the product function (``StatementLog``): the way to see which step a
statement or commit more than before comes from.

Before any figure: the mail has a pending draft after leg 1, and after leg 2 its
send attempt is ``sent`` and the relay received its Message-ID exactly once.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from types import FrameType
from typing import Any

from email_rag.db import sql
from email_rag.db.queries import all_queries
from email_rag.ingest.poller import Poller
from email_rag.sending.review import approve
from email_rag.wiring.services import Services
from email_rag_harness.testing.dovecot import Dovecot
from email_rag_harness.testing.mails import mail

from .common import CheckFailed, LLMServerProcess, Report, Workspace
from .send import Relay

PROJECT = ("email_rag.",)  # the product; not the harness (email_rag_harness)


class HopCounter:
    """Counts calls that cross from one project module into another (this thread)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.db = (0, 0)  # MariaDB statements and commits of the leg (the services' connection)

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "")
        if callee != caller and callee.startswith(PROJECT) and caller.startswith(PROJECT):
            self.calls[(caller, callee)] += 1

    def __enter__(self) -> HopCounter:
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)

    def figures(self) -> dict[str, Any]:
        edges = set(self.calls)
        modules = {m for e in edges for m in e}
        back = {e for e in edges if (e[1], e[0]) in edges}
        return {"hops": sum(self.calls.values()), "modules": len(modules), "edges": len(edges),
                "statements": self.db[0], "commits": self.db[1],
                "back_edges": len(back) // 2,
                "back_edge_pairs": sorted({tuple(sorted(e)) for e in back}),
                "top_edges": [f"{a} -> {b}: {n}" for (a, b), n in self.calls.most_common(10)]}


STEPS = ("parse", "classify", "index", "retrieve", "draft")


class StatementLog:
    """The statements and commits of the services' connection (``Database.trace``), each
    with where it was sent: ``checkpoint`` (the runner's checkpoint transaction), the step
    (``email_rag.pipeline.<step>``), else the innermost product function outside the
    database layer."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, str]] = []  # (leg, statement name or COMMIT, where)
        self.leg = ""
        self._names = {" ".join(t.split()): n for n, t in all_queries().items()}

    def name(self, query: str) -> str:
        text = " ".join(query.split())
        if text in self._names:
            return self._names[text]
        for known, n in self._names.items():  # a query with list slots, expanded
            head = known.split("{")[0]
            if "{" in known and len(head) > 20 and text.startswith(head):
                return n
        return text[:60]

    def __call__(self, query: str | None) -> None:
        self.lines.append((self.leg, "COMMIT" if query is None else self.name(query), where()))

    def text(self) -> list[str]:
        return [f"{leg:18s} {what:38s} {at}" for leg, what, at in self.lines]


def where() -> str:
    frame = sys._getframe(2)
    product: list[str] = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith(PROJECT) and not module.startswith("email_rag.db."):
            product.append(f"{module.removeprefix('email_rag.')}.{frame.f_code.co_name}")
        frame = frame.f_back
    if "pipeline.runner._checkpoint" in product:
        return "checkpoint"
    for p in product:
        if p.startswith("pipeline.") and p.split(".")[1] in STEPS:
            return f"step {p.split('.')[1]} ({product[0]})"
    return product[0] if product else "bench"


def run(args: Any) -> Report:
    try:
        from email_rag.runtime.job_runner import JobRunner
    except ImportError:  # before issue 13 the job runner was email_rag/worker.py
        from email_rag.worker import JobRunner  # type: ignore[no-redef]

    with Workspace("hops") as ws:
        dovecot = Dovecot().start()
        ws.on_exit(dovecot.stop)
        user = dovecot.add_user()
        llm = LLMServerProcess(0, cwd=ws.tmp)
        ws.on_exit(llm.stop)
        relay = Relay(ws.tmp)
        ws.on_exit(relay.stop)
        db = ws.fresh()
        svc = Services(ws.settings(
            db, mailboxes=[json.loads(user.config.model_dump_json()) | {"password": user.password}],
            llm_base_url=llm.url, llm_timeout=60, smtp_host=relay.host, smtp_port=relay.port,
            smtp_security="plain"))
        ws.on_exit(svc.close)
        runner = JobRunner(svc, "bench-hops", vector_owner=True)
        runner.warm_up()
        user.append(mail(1, subject="Drucker druckt nicht", body="Mein Drucker druckt nicht."))
        listing = StatementLog()
        if getattr(args, "statements", False):
            svc.db.trace = listing
            listing.leg = "poller -> draft"

        db_before = (svc.db.statements, svc.db.commits)
        with HopCounter() as leg1:
            Poller(svc).poll()
            job = db.fetchone(sql("bench_hops_first_job"))
            if job is None:
                raise CheckFailed("the poller queued no job for the mail")
            for _ in range(6):  # follow hand-offs between queues, as the fleet would
                if runner.run(int(job["id"])) != "handed_off":
                    break
        leg1.db = (svc.db.statements - db_before[0], svc.db.commits - db_before[1])
        draft = db.fetchone(sql("bench_hops_pending_draft"))
        if draft is None:
            raise CheckFailed("no pending draft after the mail's job ran")

        listing.leg = "approval -> send"
        db_before = (svc.db.statements, svc.db.commits)
        with HopCounter() as leg2:
            result = approve(svc, int(draft["id"]), "bench")
            send_job = int(result.job_id or 0)
            runner.run(send_job)
        leg2.db = (svc.db.statements - db_before[0], svc.db.commits - db_before[1])
        svc.db.trace = None
        attempt = db.fetchone(sql("sends_by_draft"), {"draft_id": draft["id"]})
        if attempt is None or attempt["status"] != "sent":
            raise CheckFailed(f"the send attempt is {attempt and attempt['status']}, not sent")
        if relay.counts()[attempt["message_id"]] != 1:
            raise CheckFailed("the relay did not receive the reply exactly once")

    f1, f2 = leg1.figures(), leg2.figures()
    rows = [{"leg": "poller -> draft", **{k: f1[k] for k in ("hops", "modules", "edges",
                                                              "back_edges", "statements", "commits")}},
            {"leg": "approval -> send", **{k: f2[k] for k in ("hops", "modules", "edges",
                                                               "back_edges", "statements", "commits")}}]
    return Report(
        "hops", f"poller -> draft: {f1['hops']} hops over {f1['modules']} modules; "
        f"approval -> send: {f2['hops']} hops over {f2['modules']} modules",
        ["leg", "hops", "modules", "edges", "back_edges", "statements", "commits"], rows,
        {"poller_to_draft": f1, "approval_to_send": f2,
         **({"statement_list": [list(line) for line in listing.lines]} if listing.lines else {})},
        checks=["a pending draft after leg 1", "the reply sent once after leg 2"],
        notes=["back-edge pairs (both directions called): "
               + "; ".join(f"{a} <-> {b}" for a, b in f1["back_edge_pairs"] + f2["back_edge_pairs"]),
               *(["statements (leg, named query or COMMIT, where):", *listing.text()]
                 if listing.lines else [])])
