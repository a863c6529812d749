"""Answers staff already gave, proposed as knowledge: a sent reply becomes a candidate.

When a reply is recorded as sent (sending/sender.py, right after the send's own transaction;
``collect`` catches up any it missed: idempotent on the draft), its case - the customer's
question and our sent answer - is stored as a ``pending`` candidate with personal data removed
(``remove_personal``: the sender's name and the greeting's name become ``{customer_name}``,
labelled order numbers ``{order_number}``, e-mail addresses, phone numbers, IBANs and other
long numbers a marker, quoted text and everything after the closing formula cut). An admin
approves it (it becomes an article, origin ``case``, of the mailbox), edits it first, or drops
it: nothing enters the knowledge without that yes. Each step is one transaction with its audit
event (``knowledge_candidate_proposed`` / ``_edited`` / ``_approved`` / ``_dropped``: id and
title, never the text).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| proposing fails (MariaDB lost after the send) | no: logged, the send is not touched | yes: no candidate | ``collect`` (``email-rag knowledge candidates list`` runs it) |
| proposed twice (a reconciled send, a catch-up) | - | yes: one candidate per draft (unique key) | - |
| approve/edit/drop of a candidate decided meanwhile | no: refused | yes: nothing written | - |
| the embedder down at approval | no: the article's passages found by words only | yes | an edit of the article embeds it |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from ..core.errors import BadInputError
from ..core.index_ports import Embedder
from ..core.rows import FromRow, set_field
from ..db import Database, sql
from ..db.audit import AuditEvent, write_events
from .articles import ArticleStore, Origin
from .documents import language_of

MAX_QUESTION = 4000
MAX_ANSWER = 6000

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
_ORDER_LABEL = (r"order|bestellung|bestellnummer|bestell-?nr\.?|auftrag|auftragsnummer|commande|"
                r"pedido|ordine|bestelling")
_OTHER_LABEL = (r"customer|kunde|kunden|kundennummer|kunden-?nr\.?|client|cliente|invoice|"
                r"rechnung|rechnungsnummer|facture|factura|ticket|tracking|sendungsnummer|"
                r"contract|vertrag|account|konto")
_LABELLED = re.compile(
    rf"(?<![\w-])(?P<label>(?:{_ORDER_LABEL}|{_OTHER_LABEL})"
    r"(?:\s*(?:no\.?|nr\.?|number|nummer|n°|num\.?|id))?\s*[:#]?\s*)"
    r"(?P<ref>[A-Z0-9](?:[A-Z0-9/-]{0,30}[A-Z0-9])?)(?![\w-])", re.IGNORECASE)
_ORDER = re.compile(rf"^(?:{_ORDER_LABEL})", re.IGNORECASE)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PHONE = re.compile(r"(?<![\w+])(?:\+|00)?\d[\d ()/-]{5,}\d(?![\w])")
_LONG_NUMBER = re.compile(r"(?<![\w-])(?=[A-Z0-9-]*\d{6})[A-Z0-9-]{6,}(?![\w-])", re.IGNORECASE)
_GREETING = re.compile(
    r"^(?P<g>(?:dear|hi|hello|hallo|hey|guten tag|liebe[rs]?|sehr geehrte[rs]?"
    r"(?:\s+(?:frau|herr|damen und herren))?|bonjour|hola|estimad[oa]s?|buongiorno|ciao)"
    r"(?:\s+(?:mr\.?|mrs\.?|ms\.?|frau|herr|madame|monsieur|señora?))?)\s+(?P<who>[^\n,!]{1,60})"
    r"(?P<end>[,!]?)\s*$", re.IGNORECASE | re.MULTILINE)
_CLOSING = re.compile(
    r"^\s*(?:best regards|kind regards|regards|best wishes|many thanks|thanks|thank you|"
    r"viele grüße|beste grüße|freundliche grüße|mit freundlichen grüßen|liebe grüße|"
    r"cordialement|bien à vous|saludos|un saludo|atentamente|cordiali saluti|"
    r"met vriendelijke groet)\b.*$", re.IGNORECASE | re.MULTILINE)
_NOBODY = frozenset({"zusammen", "allerseits", "all", "everyone", "team", "there", "support",
                     "tout le monde", "à tous", "a todos", "a tutti"})  # a greeting of no name
_REPLY_PREFIX = re.compile(r"^(?:\s*(?:re|aw|fw|fwd|wg|tr|rv)\s*:\s*)+", re.IGNORECASE)


class CandidateStatus(StrEnum):
    PENDING = "pending"  # waits for an admin
    APPROVED = "approved"  # became an article (article_id); terminal
    DROPPED = "dropped"  # not knowledge; terminal


@dataclass(frozen=True)
class Candidate(FromRow):
    id: int
    mailbox_id: int
    status: CandidateStatus
    title: str
    question: str
    answer: str
    language: str | None = None
    email_id: int | None = None
    draft_id: int | None = None
    article_id: int | None = None
    decided_by: str | None = None
    created_at: datetime | None = None
    decided_at: datetime | None = None

    def __post_init__(self) -> None:
        set_field(self, "status", CandidateStatus(self.status))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "mailbox_id": self.mailbox_id, "status": str(self.status),
                "title": self.title, "question": self.question, "answer": self.answer,
                "language": self.language, "article_id": self.article_id,
                "decided_by": self.decided_by}

    def article_text(self) -> str:
        return f"## Question\n\n{self.question}\n\n## Answer\n\n{self.answer}"


def _names(from_name: str | None) -> list[str]:
    """The sender's name and its words (longest first) as they may appear in the text."""
    name = " ".join((from_name or "").replace('"', " ").split())
    if not name or "@" in name:
        return []
    parts = [p.strip(",.") for p in name.split() if len(p.strip(",.")) >= 2]
    return sorted({name, *parts}, key=len, reverse=True)


def remove_personal(text: str, from_name: str | None = None) -> str:
    """``text`` without the personal data a case may carry (see the module's docstring)."""
    lines = [ln for ln in (text or "").replace("\r\n", "\n").split("\n")
             if not ln.lstrip().startswith(">")]
    text = "\n".join(lines)
    closing = _CLOSING.search(text)
    if closing:
        text = text[:closing.start()]
    text = _EMAIL.sub("[e-mail]", text)
    text = _IBAN.sub("[IBAN]", text)
    text = _LABELLED.sub(lambda m: m.group("label") + (
        "{order_number}" if _ORDER.match(m.group("label"))
        else "[number]") if sum(c.isdigit() for c in m.group("ref")) >= 3 else m.group(0), text)
    text = _PHONE.sub(lambda m: m.group(0) if _ISO_DATE.match(m.group(0).strip())
                      or sum(c.isdigit() for c in m.group(0)) < 7 else "[phone]", text)
    text = _LONG_NUMBER.sub("[number]", text)
    text = _GREETING.sub(lambda m: m.group(0) if m.group("who").strip().lower() in _NOBODY
                         else f"{m.group('g')} {{customer_name}}{m.group('end')}", text)
    for name in _names(from_name):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "{customer_name}", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def title_of(subject: str | None, question: str, from_name: str | None) -> str:
    title = remove_personal(_REPLY_PREFIX.sub("", subject or ""), from_name)
    title = " ".join(title.split()) or " ".join(question.split())[:80]
    return title[:300] or "Case"


class Candidates:
    """The candidates on ``db``; ``embedder`` (the product's) embeds an approved one."""

    def __init__(self, db: Database, embedder: Embedder | None = None) -> None:
        self.db = db
        self.embedder = embedder

    @property
    def store(self) -> ArticleStore:
        if self.embedder is None:
            raise BadInputError("approving a candidate needs the embedder")
        return ArticleStore(self.db, self.embedder)

    def propose(self, draft_id: int, actor: str) -> int | None:
        """The case of a sent reply as a pending candidate; its id, None when there is
        nothing to propose (not sent, no text) or it was proposed before."""
        with self.db.transaction() as cur:
            row = cur.fetchone(sql("knowledge_candidate_source"), {"draft_id": draft_id})
            if row is None:
                return None
            name = row["from_name"]
            question = remove_personal(str(row["body_text"] or ""), name)[:MAX_QUESTION]
            answer = remove_personal(str(row["answer"] or ""), name)[:MAX_ANSWER]
            if not question or not answer:
                return None
            title = title_of(row["subject"], question, name)
            if not cur.execute(sql("knowledge_candidate_insert"), {
                    "mailbox_id": row["mailbox_id"], "email_id": row["email_id"],
                    "draft_id": draft_id, "title": title, "question": question,
                    "answer": answer,
                    "language": row["draft_language"] or row["language"] or language_of(answer)}):
                return None
            candidate_id = cur.lastrowid
            write_events(cur, [_event(actor, candidate_id, "knowledge_candidate_proposed", title,
                                      draft_id=draft_id)])
        return candidate_id

    def collect(self, actor: str, limit: int = 500) -> int:
        """Propose the sent replies that have no candidate yet; how many were proposed."""
        rows = self.db.fetchall(sql("knowledge_candidates_missing"), {"limit": limit})
        return sum(1 for r in rows if self.propose(int(r["id"]), actor) is not None)

    def list(self, status: CandidateStatus = CandidateStatus.PENDING,
             limit: int = 200) -> list[Candidate]:
        return Candidate.from_rows(self.db.fetchall(sql("knowledge_candidates_list"),
                                                    {"status": str(status), "limit": limit}))

    def get(self, candidate_id: int) -> Candidate:
        with self.db.transaction() as cur:
            return self._lock(cur, candidate_id, pending=False)

    def edit(self, candidate_id: int, title: str, question: str, answer: str,
             actor: str) -> None:
        title, question, answer = (" ".join((title or "").split()), (question or "").strip(),
                                   (answer or "").strip())
        if not title or not question or not answer:
            raise BadInputError("A candidate needs a title, a question and an answer.")
        with self.db.transaction() as cur:
            self._lock(cur, candidate_id)
            cur.execute(sql("knowledge_candidate_edit"), {
                "id": candidate_id, "title": title[:300], "question": question[:MAX_QUESTION],
                "answer": answer[:MAX_ANSWER]})
            write_events(cur, [_event(actor, candidate_id, "knowledge_candidate_edited", title)])

    def approve(self, candidate_id: int, actor: str) -> int:
        """The candidate becomes an article of its mailbox (origin ``case``); its id."""
        current = self.get(candidate_id)
        prepared = self.store.prepare(current.title, current.article_text(), current.language,
                                      embed="optional")
        with self.db.transaction() as cur:
            locked = self._lock(cur, candidate_id)
            if (locked.title, locked.question, locked.answer) != (
                    current.title, current.question, current.answer):
                raise BadInputError("The candidate was edited meanwhile; nothing was approved. "
                                    "Look at it again.")
            article_id = self.store.create_in(cur, prepared, mailbox_id=locked.mailbox_id,
                                              origin=Origin.CASE, actor=actor,
                                              source_key=f"candidate:{candidate_id}")
            self._decide(cur, locked, CandidateStatus.APPROVED, article_id, actor)
        return article_id

    def drop(self, candidate_id: int, actor: str) -> None:
        with self.db.transaction() as cur:
            self._decide(cur, self._lock(cur, candidate_id), CandidateStatus.DROPPED, None,
                         actor)

    def _lock(self, cur: Any, candidate_id: int, pending: bool = True) -> Candidate:
        row = cur.fetchone(sql("knowledge_candidate_lock"), {"id": candidate_id})
        if row is None:
            raise BadInputError(f"There is no knowledge candidate {candidate_id}.")
        candidate = Candidate.from_row(row)
        if pending and candidate.status != CandidateStatus.PENDING:
            raise BadInputError(f"Knowledge candidate {candidate_id} was {candidate.status} "
                                "already; nothing was changed.")
        return candidate

    def _decide(self, cur: Any, candidate: Candidate, to: CandidateStatus,
                article_id: int | None, actor: str) -> None:
        cur.execute(sql("knowledge_candidate_decide"), {
            "id": candidate.id, "to": str(to), "article_id": article_id, "by": actor})
        write_events(cur, [_event(actor, candidate.id, f"knowledge_candidate_{to}",
                                  candidate.title, article_id=article_id,
                                  from_state=str(CandidateStatus.PENDING), to_state=str(to))])


def _event(actor: str, candidate_id: int, event: str, title: str, draft_id: int | None = None,
           article_id: int | None = None, **states: str) -> AuditEvent:
    detail: dict[str, str | int] = {"title": title}
    if draft_id is not None:
        detail["draft_id"] = draft_id
    if article_id is not None:
        detail["article_id"] = article_id
    return AuditEvent(actor, "knowledge_candidate", candidate_id, event, **states, detail=detail)
