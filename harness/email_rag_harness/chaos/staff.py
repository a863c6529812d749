"""Staff in a chaos run: review decisions through the functions the web UI and CLI call.

Every pending (or stale) draft gets the decision the plan gives its generated
mail (``plan.decision``): approve, reject (with a reason), or approve twice -
the second approval comes later, once the first send went out or after a
while, as a colleague with an old browser tab would. The harness records
which drafts were approved (the ground truth for "missing sends").
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from email_rag.core.errors import EmailRagError
from email_rag.db import sql
from email_rag.sending import review

from . import plan as chaos_plan
from .verify import TruthMail

log = logging.getLogger(__name__)

STAFF = "chaos-staff"
SECOND_APPROVER = "chaos-staff-2"
SECOND_AFTER_S = 8.0  # latest second approval of a double-approved draft


@dataclass
class Staff:
    svc: Any  # Services of the harness (direct MariaDB connection)
    plan: dict[str, Any]
    truth: list[TruthMail]
    approved: set[int] = field(default_factory=set)
    actions: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    _second: dict[int, float] = field(default_factory=dict)  # draft id -> first approval time
    _by_mid: dict[str, str] = field(default_factory=dict)
    _by_from: dict[str, str] = field(default_factory=dict)
    # a draft kept aside for a staff member who regenerates it (chaos.admin.staff_regenerate)
    # follow-ups delivered the moment their root's draft is approved: root key -> raw
    race_followups: dict[str, bytes] = field(default_factory=dict)
    deliver: Any = None  # callable(list[bytes]) -> int (the harness delivers into the inbox)
    raced: int = 0
    _reserving: bool = False
    _reserved: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self) -> None:
        with self._lock:
            self._reserving, self._reserved = True, []

    def reserved_drafts(self) -> list[int]:
        with self._lock:
            return list(self._reserved)

    def release(self) -> None:
        with self._lock:
            self._reserving, self._reserved = False, []

    def _keep_aside(self, draft_id: int, status: str) -> bool:
        """True if this draft is kept for the regenerating staff member (not decided now)."""
        with self._lock:
            if draft_id in self._reserved:
                return True
            if self._reserving and not self._reserved and status == "pending_review":
                self._reserved.append(draft_id)
                return True
            return False

    def __post_init__(self) -> None:
        self._by_mid = {t.message_id.lower(): t.key for t in self.truth if t.message_id}
        self._by_from = {t.from_addr.lower(): t.key for t in self.truth if t.from_addr}

    def key_of(self, row: dict[str, Any]) -> str:
        mid = (row.get("message_id") or "").lower()
        return (self._by_mid.get(mid) or self._by_from.get((row.get("from_addr") or "").lower())
                or f"email:{row['email_id']}")

    @property
    def waiting(self) -> int:
        """Second approvals not made yet."""
        return len(self._second)

    def review_round(self) -> None:
        """One pass over the review queue, then any second approvals that are due."""
        db = self.svc.db
        for row in db.fetchall(sql("chaos_pending_drafts")):
            decision = chaos_plan.decision(self.plan, self.key_of(row))
            draft_id = int(row["id"])
            if self._keep_aside(draft_id, row["status"]):
                continue
            if decision == "reject" and row["status"] == "pending_review":
                self._act("reject", draft_id, lambda d=draft_id: review.reject(
                    self.svc, d, STAFF, "chaos run: staff rejected this draft"))
                continue
            result = self._act("approve", draft_id,
                               lambda d=draft_id: review.approve(self.svc, d, STAFF))
            if result is not None and result.action == "approved":
                self.approved.add(draft_id)
                if decision == "double_approve":
                    self._second.setdefault(draft_id, time.monotonic())
                raw = self.race_followups.pop(self.key_of(row), None)
                if raw is not None and self.deliver is not None:
                    self.deliver([raw])  # a newer mail of the thread, right after approval
                    self.raced += 1
                    self.actions["race_followup_delivered"] += 1
        for draft_id, first in list(self._second.items()):
            state = db.fetchone(sql("chaos_draft_send"), {"id": draft_id}) or {}
            if state.get("send_status") in ("sent", "failed", "unknown") or \
                    time.monotonic() - first > SECOND_AFTER_S:
                del self._second[draft_id]
                result = self._act("second_approve", draft_id,
                                   lambda d=draft_id: review.approve(self.svc, d, SECOND_APPROVER))
                if result is not None and result.action == "approved":
                    self.approved.add(draft_id)

    def _act(self, name: str, draft_id: int, fn: Any) -> Any:
        try:
            result = fn()
        except EmailRagError as e:
            self.actions[f"{name}_refused"] += 1
            self.errors.append(f"{name} draft {draft_id}: {type(e).__name__}: {e}")
            return None
        self.actions[f"{name}:{result.action}"] += 1
        return result
