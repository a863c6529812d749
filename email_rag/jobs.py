"""Queue entries in MariaDB: claim, finish, fail, hand off, reset, retry, resolve.

Failure table of one job attempt:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| duplicate RQ delivery (entry not queued/failed, or not due) | no | yes | nothing to do: claim fails, no-op |
| step raises TransientError / unexpected error | yes, 30/120/600 s | yes (failed, next_run_at) | re-dispatch when due; confirmed steps skipped |
| third failed attempt | no | yes (dead, mail failed) | admin: `failed retry` |
| step raises PermanentError | no | yes (dead at once, mail failed) | admin: `failed retry` after fixing the cause |
| MariaDB lost mid-job | reconnect, wait | yes (entry still processing, ours) | continue in-process once back; not counted as an attempt |
| worker killed mid-step | by cleanup | entry stays processing | cleanup (> stuck_after_seconds) -> failed -> retry cycle |
| Redis lost the RQ job | yes | yes (queued/failed row) | re-dispatch enqueues it again |

Every transition writes an audit event in the same transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .audit import AuditEvent, write_events
from .db import Database, sql
from .errors import TransientError
from .retry import RetryDecision, RetryPolicy
from .states import MAIL_TERMINAL, Actor, JobKind, JobState, MailStatus

log = logging.getLogger(__name__)


class StuckJobError(TransientError):
    """The entry was processing longer than the stuck limit; its worker is presumed dead."""


@dataclass
class JobStore:
    db: Database
    policy: RetryPolicy
    safeguards: bool = True  # settings.safeguards; False only for the chaos counter-check

    # --- claim / finish ---
    def claim(self, job_id: int, worker: str, queue: str | None = None) -> dict[str, Any] | None:
        """Atomically take the entry; None if another worker has it, it is not due, or it
        belongs to another queue than ``queue`` (the one the delivery came on)."""
        with self.db.transaction() as cur:
            # naive (chaos counter-check only): claim without the state/due check
            claim = sql("jobs_claim" if self.safeguards else "jobs_claim_naive")
            if cur.execute(claim, {"id": job_id, "worker": worker, "queue": queue}) != 1:
                return None
            job = cur.fetchone(sql("jobs_get"), {"id": job_id})
            assert job is not None
            write_events(cur, [AuditEvent(
                Actor.WORKER, "job", job_id, "claimed", None, JobState.PROCESSING,
                attempt=job["attempts"], detail={"worker": worker, "kind": job["kind"]})])
        return job

    def still_mine(self, job_id: int, worker: str) -> bool:
        return self.db.fetchone(sql("jobs_still_mine"), {"id": job_id, "worker": worker}) is not None

    def finish(self, job: dict[str, Any], worker: str, detail: dict[str, Any] | None = None) -> bool:
        with self.db.transaction() as cur:
            done = cur.execute(sql("jobs_finish"), {"id": job["id"], "worker": worker}) == 1
            if done:
                write_events(cur, [AuditEvent(
                    Actor.WORKER, "job", job["id"], "state_changed", JobState.PROCESSING,
                    JobState.DONE, attempt=job["attempts"], detail=detail)])
        return done

    def handoff(self, job: dict[str, Any], worker: str, queue: str, reason: str) -> bool:
        with self.db.transaction() as cur:
            moved = cur.execute(sql("jobs_handoff"),
                                {"id": job["id"], "worker": worker, "queue": queue}) == 1
            if moved:
                write_events(cur, [AuditEvent(
                    Actor.WORKER, "job", job["id"], "handed_off", JobState.PROCESSING,
                    JobState.QUEUED, attempt=job["attempts"],
                    detail={"queue": queue, "reason": reason})])
        return moved

    # --- failure ---
    def fail(self, job: dict[str, Any], worker: str, error: BaseException) -> RetryDecision:
        """Record a failed attempt: failed with a retry time, or dead (mail failed)."""
        decision = self.policy.decide(int(job["attempts"]), error)
        text = f"{type(error).__name__}: {error}"[:4000]
        with self.db.transaction() as cur:
            state = JobState.FAILED if decision.retry else JobState.DEAD
            changed = cur.execute(sql("jobs_fail"), {
                "id": job["id"], "worker": worker, "state": state, "error": text,
                "delay": decision.delay if decision.retry else 0})
            if changed != 1:  # no longer ours (reset by cleanup): nothing to record
                return decision
            events = [AuditEvent(
                Actor.WORKER, "job", job["id"],
                "retry_scheduled" if decision.retry else "dead_letter",
                JobState.PROCESSING, state, attempt=job["attempts"],
                detail={"error": text, "reason": decision.reason,
                        "retry_in_s": round(decision.delay, 3) if decision.retry else None})]
            write_events(cur, events)
            if not decision.retry:
                self._mail_failed(cur, job, decision.reason)
        if decision.retry:
            log.warning("job %s attempt %s failed, retry in %.0f s: %s",
                        job["id"], job["attempts"], decision.delay, text)
        else:
            log.error("ALARM dead letter: job %s (%s, email %s) after attempt %s: %s",
                      job["id"], job["kind"], job.get("email_id"), job["attempts"], decision.reason)
        return decision

    def _mail_failed(self, cur: Any, job: dict[str, Any], reason: str) -> None:
        """The mail of a dead entry becomes failed (unless it already rests somewhere final)."""
        if not job.get("email_id"):
            return
        mail = cur.fetchone(sql("emails_get_for_update"), {"id": job["email_id"]})
        if not mail or mail["status"] in MAIL_TERMINAL or mail["status"] == MailStatus.FAILED:
            return
        cur.execute("UPDATE emails SET status = %s, status_reason = %s WHERE id = %s",
                    (MailStatus.FAILED, reason[:4000], job["email_id"]))
        event = AuditEvent(Actor.WORKER, "email", job["email_id"], "state_changed",
                           mail["status"], MailStatus.FAILED, attempt=job["attempts"],
                           detail={"reason": reason, "job_id": job["id"]})
        write_events(cur, [event])

    # --- maintenance ---
    def reset_stuck(self, older_than_s: int, limit: int = 500,
                    alive: Any = None) -> list[dict[str, Any]]:
        """Entries processing longer than ``older_than_s`` go back into the retry cycle;
        ``alive(ids)`` names those whose worker still beats: they are left alone."""
        reset = []
        stuck = self.db.fetchall(sql("jobs_stuck"), {"seconds": older_than_s, "limit": limit})
        beating = alive([int(j["id"]) for j in stuck]) if alive is not None and stuck else set()
        for job in stuck:
            if int(job["id"]) in beating:
                continue  # one short transaction per entry: no range locks held
            with self.db.transaction() as cur:
                err = StuckJobError(
                    f"processing since {job['started_at']} (> {older_than_s} s) on worker "
                    f"{job['worker']}; presumed dead")
                decision = self.policy.decide(int(job["attempts"]), err)
                state = JobState.FAILED if decision.retry else JobState.DEAD
                if cur.execute(sql("jobs_reset_stuck"), {
                        "id": job["id"], "state": state, "error": f"StuckJobError: {err}",
                        "delay": decision.delay if decision.retry else 0,
                        "worker": job["worker"], "started_at": job["started_at"]}) != 1:
                    continue  # finished or re-claimed since the read: not stuck after all
                write_events(cur, [AuditEvent(
                    Actor.SCHEDULER, "job", job["id"], "stuck_reset", JobState.PROCESSING, state,
                    attempt=job["attempts"],
                    detail={"worker": job["worker"], "reason": decision.reason})])
                if not decision.retry:
                    self._mail_failed(cur, job, decision.reason)
                reset.append({**job, "state": state})
        for job in reset:
            log.warning("reset stuck job %s (worker %s) to %s", job["id"], job["worker"], job["state"])
        return reset

    # --- admin ---
    def retry(self, job_id: int, actor: str, note: str = "") -> bool:
        """Admin: a dead/failed entry gets a fresh retry cycle; the mail resumes."""
        with self.db.transaction() as cur:
            job = cur.fetchone(sql("jobs_get_for_update"), {"id": job_id})
            if not job or not self._retryable(cur, job):
                return False
            cur.execute(sql("jobs_retry"), {"id": job_id})
            events = [AuditEvent(actor, "job", job_id, "admin_retry", job["state"],
                                 JobState.QUEUED, attempt=job["attempts"],
                                 detail={"note": note, "last_error": job["last_error"]})]
            if job.get("email_id"):
                mail = cur.fetchone(sql("emails_get_for_update"), {"id": job["email_id"]})
                if mail and mail["status"] in (MailStatus.FAILED, MailStatus.MANUAL):
                    resume = self._resume_status(cur, job)
                    cur.execute("UPDATE emails SET status = %s, status_reason = NULL WHERE id = %s",
                                (resume, job["email_id"]))
                    events.append(AuditEvent(actor, "email", job["email_id"], "state_changed",
                                             mail["status"], resume,
                                             detail={"reason": "admin retry", "job_id": job_id}))
            write_events(cur, events)
        return True

    @staticmethod
    def _retryable(cur: Any, job: dict[str, Any]) -> bool:
        """Dead or failed entries; done entries whose mail waits for a human (manual, failed)."""
        if job["state"] in (JobState.DEAD, JobState.FAILED):
            return True
        if job["state"] == JobState.DONE and job.get("email_id"):
            mail = cur.fetchone(sql("emails_get_for_update"), {"id": job["email_id"]})
            return bool(mail) and mail["status"] in (MailStatus.MANUAL, MailStatus.FAILED)
        return False

    @staticmethod
    def _resume_status(cur: Any, job: dict[str, Any]) -> MailStatus:
        """The status a mail resumes in: approved for a send, else by its confirmed steps."""
        if job["kind"] == JobKind.SEND_DRAFT:
            return MailStatus.APPROVED
        steps = {r["step"] for r in cur.fetchall(sql("steps_confirmed"),
                                                  {"email_id": job["email_id"]})}
        return MailStatus.CLASSIFIED if "classify" in steps else MailStatus.RECEIVED

    def resolve(self, job_id: int, actor: str, note: str) -> bool:
        """Admin: close a failed/dead entry by hand; the mail becomes resolved."""
        with self.db.transaction() as cur:
            job = cur.fetchone(sql("jobs_get_for_update"), {"id": job_id})
            if not job or job["state"] in (JobState.DONE, JobState.PROCESSING):
                return False
            cur.execute(sql("jobs_resolve"), {"id": job_id, "note": note[:500]})
            events = [AuditEvent(actor, "job", job_id, "admin_resolved", job["state"],
                                 JobState.DEAD, detail={"note": note})]
            if job.get("email_id"):
                mail = cur.fetchone(sql("emails_get_for_update"), {"id": job["email_id"]})
                if mail and mail["status"] not in MAIL_TERMINAL:
                    cur.execute("UPDATE emails SET status = %s, status_reason = %s WHERE id = %s",
                                (MailStatus.RESOLVED, note[:4000], job["email_id"]))
                    events.append(AuditEvent(actor, "email", job["email_id"], "state_changed",
                                             mail["status"], MailStatus.RESOLVED,
                                             detail={"note": note, "job_id": job_id}))
            write_events(cur, events)
        return True

    def list(self, states: list[str] | None = None, limit: int = 100) -> list[dict[str, Any]]:
        where, params = "", []
        if states:
            where = "WHERE j.state IN (" + ", ".join(["%s"] * len(states)) + ")"
            params = list(states)
        return self.db.fetchall(
            "SELECT j.id, j.kind, j.email_id, j.draft_id, j.queue, j.state, j.attempts,"
            " j.next_run_at, j.started_at, j.worker, j.last_error, e.status AS mail_status,"
            " e.subject FROM jobs j LEFT JOIN emails e ON e.id = j.email_id "
            f"{where} ORDER BY j.id LIMIT %s", (*params, limit))
