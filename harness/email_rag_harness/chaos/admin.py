"""Admins and staff acting during a chaos run, through the interfaces people use.

Every admin action runs the real CLI in a subprocess (``python -m email_rag ...``
with the run's settings), so what is tested is what an admin types; a staff
Regenerate calls the function the web UI's button calls. An act waits until
there is something to act on (up to ``wait_s``), acts, and records what it did;
nothing to act on within the wait is recorded as skipped.

| act | what the admin / staff member does |
|---|---|
| ``admin_console`` | two admins on one failure list: the first takes a snapshot (``failed list``), a second admin resolves the first item, then the first admin - from the stale snapshot - retries every item, the resolved one included |
| ``admin_retry_refused_sends`` | ``failed retry`` of the queue entries of sends the relay refused (5xx) |
| ``admin_cli_retry_failed`` | ``failed retry`` of every item ``failed list`` shows (unknown sends, manual mails included) |
| ``admin_decide_unknown_sends`` | ``sends resolve`` of every unknown send, decided from the relay's own record (accepted -> ``--mark-sent``, never received -> ``--resend``), as an admin reads the relay's log |
| ``staff_regenerate`` | Regenerate on a draft waiting for review |
| ``privacy_forget`` | an admin erases one customer (the admin page's code, ``erasure_requests.request``: queued for the vector worker, which owns the local Qdrant folder) once every generated mail of that customer is stored and at rest, then waits for the erasure to be done |

The verifier then checks that no act stranded, reopened or double-sent a mail, and that
nothing of an erased customer remains (``Admin.erased``; the harness searches every store).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from email_rag.core.errors import EmailRagError
from email_rag.db import slot_params, sql

from .fleet import ROOT

log = logging.getLogger(__name__)

ACTS = ("admin_console", "admin_retry_refused_sends", "admin_cli_retry_failed",
        "admin_decide_unknown_sends", "staff_regenerate", "privacy_forget")
ADMIN = "chaos-admin"
SECOND_ADMIN = "chaos-admin-2"


@dataclass
class Admin:
    env: dict[str, str]  # the run's settings (EMAIL_RAG_*), as every process gets them
    run_db: Callable[[], Any]  # a fresh connection to the run's database
    # a fresh Services for the staff's Regenerate: acts run in their own threads, and a
    # connection shared with the harness's main loop crashed a CI run (see
    # core.errors.ConnectionSharedError)
    new_services: Callable[[], Any]
    relay_drafts: Callable[[], set[int]]  # drafts whose reply the relay accepted
    stop: Any  # threading.Event of the run
    staff: Any  # chaos.staff.Staff (a draft kept for the staff member who regenerates it)
    entry: str = "email_rag"  # the CLI module of the column (chaos.harness.ENTRY)
    actions: dict[str, int] = field(default_factory=dict)
    cli_errors: list[str] = field(default_factory=list)
    # the customers erased by privacy_forget: address, their mails' ids and corpus keys,
    # their drafts' ids and send attempts (draft -> attempt; the verifier expects none of it
    # to remain, and still counts each reply's send marks by its attempt's audit events)
    erased: list[dict[str, Any]] = field(default_factory=list)
    # acts waiting for something to act on do not keep the run from settling; an act that
    # found its object is "acting" until it returns (the run does not settle under it)
    _acting: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def acting(self) -> bool:
        with self._lock:
            return bool(self._acting)

    def done_acting(self) -> None:
        with self._lock:
            self._acting.discard(threading.get_ident())

    # --- plumbing ---
    def cli(self, *args: str, timeout: float = 60.0, stdin: str | None = None) -> dict[str, Any]:
        """Run ``email-rag ARGS --json`` as an admin would; the parsed JSON (or an error)."""
        env = {**os.environ, **self.env,
               "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get(
                   "PYTHONPATH")])])}
        try:
            proc = subprocess.run([sys.executable, "-m", self.entry, *args, "--json"],
                                  capture_output=True, text=True, env=env, timeout=timeout,
                                  input=stdin)
        except subprocess.TimeoutExpired:
            self.cli_errors.append(f"{' '.join(args)}: timed out after {timeout:.0f} s")
            return {"ok": False, "exit_code": None, "data": {}}
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            self.cli_errors.append(f"{' '.join(args)}: exit {proc.returncode}, no JSON: "
                                   f"{proc.stderr[-300:]}")
            return {"ok": False, "exit_code": proc.returncode, "data": {}}
        self.actions[f"cli {args[0]} {args[1]} exit {out.get('exit_code')}"] = \
            self.actions.get(f"cli {args[0]} {args[1]} exit {out.get('exit_code')}", 0) + 1
        return out

    def _rows(self, name: str) -> list[dict[str, Any]]:
        db = self.run_db()
        try:
            return db.fetchall(sql(name))
        except EmailRagError:
            return []  # MariaDB may be down by plan: nothing to act on yet
        finally:
            db.close()

    def _wait_for(self, find: Callable[[], list[Any]], wait_s: float) -> list[Any]:
        deadline = time.monotonic() + wait_s
        while True:
            found = find()
            if found:
                with self._lock:
                    self._acting.add(threading.get_ident())
            if found or time.monotonic() >= deadline or self.stop.is_set():
                return found
            self.stop.wait(0.5)

    def _failed_items(self) -> list[dict[str, Any]]:
        return list(self.cli("failed", "list").get("data", {}).get("items") or [])

    # --- acts: each returns (result, detail) ---
    def admin_console(self, e: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        snapshot = self._wait_for(self._failed_items, float(e.get("wait_s", 30)))
        if not snapshot:
            return "skipped: nothing in the failure list", {}
        first = snapshot[0]
        resolved = self.cli("failed", "resolve", *_target(first), "--by", SECOND_ADMIN,
                            "--note", "chaos: closed by a second admin")
        self.stop.wait(float(e.get("stale_s", 1.0)))
        retried = [(_label(item), self.cli("failed", "retry", str(_job_id(item)), "--by", ADMIN,
                                           "--note", "chaos: retried from a stale console")
                    .get("exit_code")) for item in snapshot[:5] if _job_id(item) is not None]
        return "done", {"resolved_first": [_label(first), resolved.get("exit_code")],
                        "retried_from_stale_snapshot": retried}

    def admin_retry_refused_sends(self, e: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        rows = self._wait_for(lambda: self._rows("chaos_refused_send_jobs"),
                              float(e.get("wait_s", 30)))
        if not rows:
            return "skipped: no refused send with a dead entry", {}
        done = [(int(r["job_id"]), self.cli("failed", "retry", str(r["job_id"]), "--by", ADMIN,
                                            "--note", "chaos: retry of a refused send")
                 .get("exit_code")) for r in rows[:3]]
        return "done", {"retried": done}

    def admin_cli_retry_failed(self, e: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        items = self._wait_for(self._failed_items, float(e.get("wait_s", 30)))
        items = [i for i in items if _job_id(i) is not None]
        if not items:
            return "skipped: nothing with a queue entry in the failure list", {}
        done = [(_label(item), self.cli("failed", "retry", str(_job_id(item)), "--by", ADMIN,
                                        "--note", "chaos: retry everything listed")
                 .get("exit_code")) for item in items[:5]]
        return "done", {"retried": done}

    def admin_decide_unknown_sends(self, e: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        def unknown() -> list[dict[str, Any]]:
            return list(self.cli("sends", "list", "--status", "unknown").get("data", {})
                        .get("sends") or [])

        rows = self._wait_for(unknown, float(e.get("wait_s", 60)))
        if not rows:
            return "skipped: no unknown send", {}
        received = self.relay_drafts()
        decided = []
        for r in rows:
            how = "--mark-sent" if int(r["draft_id"]) in received else "--resend"
            # the relay's own record is the admin's check: a resend overrides the evidence
            # of delivery the send decision warns about (the body was handed over)
            extra = ["--despite-evidence"] if how == "--resend" else []
            out = self.cli("sends", "resolve", str(r["id"]), how, *extra, "--by", ADMIN,
                           "--note", "chaos: decided from the relay's record")
            decided.append((int(r["id"]), how, out.get("exit_code")))
        return "done", {"decided": decided}

    def staff_regenerate(self, e: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        from email_rag.sending.regenerate import regenerate

        # the staff member takes the next draft that comes in (the other staff leave it alone
        # until this act is done with it), then asks for a new one
        self.staff.reserve()
        try:
            drafts = self._wait_for(self.staff.reserved_drafts, float(e.get("wait_s", 30)))
            if not drafts:
                return "skipped: no draft came in for review", {}
            draft_id = drafts[0]
            svc = self.new_services()
            try:
                result = regenerate(svc, draft_id, "chaos-staff", "chaos: regenerate")
            except EmailRagError as err:
                return f"refused: {type(err).__name__}: {err}", {"draft": draft_id}
            finally:
                svc.close()
            return "done", {"draft": draft_id,
                            "outcome": getattr(result, "action", str(result))}
        finally:
            self.staff.release()

    def privacy_forget(self, e: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        from email_rag.privacy import erasure_requests, personal_data

        # a customer with an answered case (drafts, a send, its journal) if one comes within
        # two thirds of the wait, else any
        wait = float(e.get("wait_s", 150))
        answered = time.monotonic() + wait * 2 / 3
        found = self._wait_for(lambda: self._forgettable(time.monotonic() < answered), wait)
        if not found:
            return "skipped: no customer with every mail stored and at rest", {}
        address, keys = found[0]
        deadline = time.monotonic() + float(e.get("wait_s", 150))
        while True:  # MariaDB may be down by plan: the admin submits again
            svc = self.new_services()
            try:
                ids = personal_data.mail_ids(svc, address)
                drafts = [int(r["id"]) for r in svc.db.fetchall(
                    sql("privacy_drafts", ids=len(ids)), slot_params(ids=ids))] if ids else []
                attempts = {int(r["draft_id"]): int(r["id"]) for r in svc.db.fetchall(
                    sql("privacy_send_attempts", ids=len(drafts)), slot_params(ids=drafts))
                } if drafts else {}
                asked = erasure_requests.request(svc, address, "chaos: erasure request", ADMIN)
                break
            except EmailRagError as err:
                if time.monotonic() >= deadline or self.stop.is_set():
                    return (f"refused: {type(err).__name__}: {err}",
                            {"address_hash": _hash(address)})
            finally:
                svc.close()
            self.stop.wait(1.0)
        self.erased.append({"address": address, "email_ids": ids, "keys": keys,
                            "drafts": drafts, "attempts": attempts})
        # the admin watches the list; an entry that gave up (dead: a store was down for all
        # its tries) is asked again, as the admin presses Erase again
        again = 0
        deadline = time.monotonic() + float(e.get("wait_s", 150))
        state: dict[str, Any] = {}
        while (state := self._erasure_state(asked.address_hash)).get("pending") and \
                time.monotonic() < deadline and not self.stop.is_set():
            if state.get("job_state") == "dead":
                again += 1
                svc = self.new_services()
                try:
                    erasure_requests.request(svc, address, "chaos: erasure asked again", ADMIN)
                except EmailRagError:
                    pass  # MariaDB may be down by plan: the next look asks again
                finally:
                    svc.close()
            self.stop.wait(1.0)
        return "done", {"mails": len(ids), "drafts": len(drafts), "queued": asked.queued,
                        "asked_again": again, "erasure": state.get("state"),
                        "address_hash": asked.address_hash[:12]}

    def _forgettable(self, answered: bool = False) -> list[tuple[str, list[str]]]:
        """Customers every generated mail of whom is stored, at rest and held by no open
        entry (their drafts are decided or waiting): (address, corpus keys), fewest first;
        ``answered``: only customers with a mail answered (``sent``)."""
        from .verify import AT_REST

        by_addr: dict[str, list[str]] = {}
        for t in self.staff.truth:
            if t.from_addr and "@" in t.from_addr:
                by_addr.setdefault(t.from_addr.lower(), []).append(t.key)
        db = self.run_db()
        try:
            rows = db.fetchall(sql("chaos_forget_candidates"))
        except EmailRagError:
            return []
        finally:
            db.close()
        stored: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            stored.setdefault(str(r["address"]), []).append(r)
        out = []
        for addr, keys in sorted(by_addr.items(), key=lambda kv: (len(kv[1]), kv[0])):
            mails = stored.get(addr, [])
            if len(mails) >= len(keys) and all(
                    str(m["status"]) in AT_REST and not m["open_jobs"] and not m["in_flight"]
                    for m in mails) and (not answered or any(
                        str(m["status"]) == "sent" for m in mails)):
                out.append((addr, keys))
        return out[:1]

    def _erasure_state(self, digest: str) -> dict[str, Any]:
        db = self.run_db()
        try:
            return db.fetchone(sql("chaos_erasure_state"), {"hash": digest}) or {}
        except EmailRagError:
            return {"pending": 1}  # MariaDB may be down by plan: look again
        finally:
            db.close()


def _hash(address: str) -> str:
    import hashlib

    return hashlib.sha256(address.encode()).hexdigest()[:12]


def _job_id(item: dict[str, Any]) -> int | None:
    """The queue entry of a `failed list` item (None: a mail without one, e.g. too large)."""
    value = item.get("job_id", item.get("id"))
    return int(value) if value is not None else None


def _target(item: dict[str, Any]) -> list[str]:
    """`failed resolve` arguments for an item: its entry, or the mail when it has none."""
    job = _job_id(item)
    return [str(job)] if job is not None else ["--mail", str(item["email_id"])]


def _label(item: dict[str, Any]) -> str:
    job = _job_id(item)
    return f"job {job}" if job is not None else f"mail {item.get('email_id')}"
