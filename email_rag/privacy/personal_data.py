"""What email-rag holds about one person, for an access request (GDPR Art. 15).

``export(svc, address, out)`` writes one zip archive: ``index.html`` (what the archive
holds, a person can read it in any browser), and per mail a folder ``mails/ID/`` with
``mail.txt`` (headers, the parsed text, the classification, the drafts and replies with
staff's edits, the team's internal notes on the mail, the send attempts and the audit events naming the mail), ``source.eml``
(the raw mail as received) and ``attachments/`` (each attachment's bytes, cut out of the
raw mail). A person is an address: the parsed address columns (from, reply-to, to, cc),
compared lower-cased; a display name never matches. Mails are read in batches, so the
archive of a person with thousands of mails does not hold them all in memory.

The export is audited as a ``person`` entity whose id is the address's hash
(``address_hash``): the audit log never holds the plain address.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| MariaDB down | yes | yes: nothing is written but a partial temporary file, removed | run again |
| the archive's folder is not writable | no | yes: OSError, nothing written | run again with another --out |
| no mail names the address | - | yes: an archive with an index saying so | - |
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.actors import person
from ..core.errors import BadInputError, StoreUnavailableError
from ..core.records import Draft, Mail, SendAttempt
from ..db import slot_params, sql
from ..db.audit import AuditEntry, AuditEvent
from ..mail.addresses import valid_address
from ..mail.mime import find_part
from . import erasure

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

BATCH = 200  # mails read per round trip


def normalise(address: str) -> str:
    """The address as the parsed columns compare it: trimmed, ``<>`` removed, lower-cased."""
    text = (address or "").strip().strip("<>").strip().lower()
    if not valid_address(text):
        raise BadInputError("give one plain e-mail address (name@domain), without a name")
    return text


def address_hash(address: str) -> str:
    """sha256 hex of the normalised address: how the audit log and the erasure list name
    a person."""
    return hashlib.sha256(normalise(address).encode()).hexdigest()


@dataclass(frozen=True)
class StoredMail:
    """One mail of the person with everything that hangs off it."""

    mail: Mail
    mailbox: str
    raw: bytes
    body_html: str | None
    drafts: list[Draft] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)
    sends: list[SendAttempt] = field(default_factory=list)
    events: list[AuditEntry] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)  # the team's internal notes


@dataclass
class ExportResult:
    address_hash: str
    out: str
    mails: int = 0
    attachments: int = 0
    drafts: int = 0
    send_attempts: int = 0
    audit_events: int = 0


def mail_ids(svc: ServiceContext, address: str) -> list[int]:
    rows = svc.db.fetchall(sql("privacy_mail_ids"), {"address": normalise(address)})
    return [int(r["id"]) for r in rows]


def _batches(ids: Sequence[int], size: int = BATCH) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start:start + size])


def read_mails(svc: ServiceContext, ids: list[int]) -> list[StoredMail]:
    """The mails ``ids`` (one batch) with their drafts, edits, send attempts and events."""
    if not ids:
        return []
    db = svc.db
    rows = db.fetchall(sql("privacy_mails", ids=len(ids)), slot_params(ids=ids))
    drafts = Draft.from_rows(db.fetchall(sql("privacy_drafts", ids=len(ids)),
                                         slot_params(ids=ids)))
    draft_ids = [d.id for d in drafts]
    edits: list[dict[str, Any]] = []
    sends: list[SendAttempt] = []
    if draft_ids:
        edits = db.fetchall(sql("privacy_draft_edits", ids=len(draft_ids)),
                            slot_params(ids=draft_ids))
        sends = SendAttempt.from_rows(db.fetchall(
            sql("privacy_send_attempts", ids=len(draft_ids)), slot_params(ids=draft_ids)))
    events = _events(svc, ids, draft_ids, [s.id for s in sends])
    notes = db.fetchall(sql("privacy_mail_notes", ids=len(ids)), slot_params(ids=ids))
    out = []
    for row in rows:
        mail = Mail.from_row(row)
        own = [d for d in drafts if d.email_id == mail.id]
        own_ids = {d.id for d in own}
        own_sends = [s for s in sends if s.draft_id in own_ids]
        send_ids = {s.id for s in own_sends}
        out.append(StoredMail(
            mail=mail, mailbox=str(row.get("mailbox") or ""), raw=bytes(row.get("raw") or b""),
            body_html=row.get("body_html"), drafts=own,
            edits=[e for e in edits if e["draft_id"] in own_ids], sends=own_sends,
            events=[e for e in events if _names(e, mail.id, own_ids, send_ids)],
            notes=[n for n in notes if n["email_id"] == mail.id]))
    return out


def _events(svc: ServiceContext, mails: list[int], drafts: list[int],
            sends: list[int]) -> list[AuditEntry]:
    def keys(ids: list[int]) -> list[str]:
        return [str(i) for i in ids] or ["-"]  # "-" names no entity: the slot is never empty

    m, d, s = keys(mails), keys(drafts), keys(sends)
    rows = svc.db.fetchall(sql("privacy_audit_events", mails=len(m), drafts=len(d),
                               sends=len(s)), slot_params(mails=m, drafts=d, sends=s))
    return AuditEntry.from_rows(rows)


def _names(e: AuditEntry, email_id: int, drafts: set[int], sends: set[int]) -> bool:
    if e.entity_type == "email":
        return e.entity_id == str(email_id)
    ids = drafts if e.entity_type == "draft" else sends
    return e.entity_id.isdigit() and int(e.entity_id) in ids


def attachments(stored: StoredMail) -> list[tuple[str, bytes]]:
    """Each attachment of the mail as (file name, bytes), cut out of the raw mail by its
    recorded MIME path; one the raw mail no longer yields is left out."""
    infos = json.loads(stored.mail.attachments or "[]")
    out = []
    for n, info in enumerate(infos, 1):
        part = find_part(stored.raw, str(info.get("part") or "")) if stored.raw else None
        if part is None or part.is_multipart():
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        name = Path(str(info.get("filename") or "")).name or f"attachment-{n}"
        out.append((f"{n:02d}-{name}", data))
    return out


def _when(value: Any) -> str:
    return value.isoformat(sep=" ", timespec="seconds") if isinstance(value, datetime) else ""


def mail_text(stored: StoredMail, files: list[str]) -> str:
    """``mail.txt``: one mail and what was done with it, as plain text."""
    m = stored.mail
    lines = [
        f"Mail {m.id} in mailbox {stored.mailbox}",
        f"From: {m.from_name or ''} <{m.from_addr or ''}>",
        f"To: {m.to_addrs or ''}",
        f"Cc: {m.cc_addrs or ''}",
        f"Reply to: {m.reply_addr or ''}",
        f"Subject: {m.subject or ''}",
        f"Sent: {_when(m.sent_at)}",
        f"Received: {_when(m.received_at)}",
        f"Message-ID: {m.message_id or ''}",
        f"Status: {m.status}" + (f" ({m.status_reason})" if m.status_reason else ""),
        "",
        "== Classification",
        f"Category: {m.category or ''}",
        f"Priority: {m.priority or ''}",
        f"Language: {m.language or ''}",
        f"Needs a reply: {'' if m.needs_reply is None else bool(m.needs_reply)}",
        f"Summary: {m.summary or ''}",
        "",
        "== Text",
        m.body_text or "",
        "",
        "== Attachments",
        *([f"{f} (in attachments/)" for f in files] or ["none"]),
    ]
    if m.attachment_text:
        lines += ["", "== Text read from the attachments", m.attachment_text]
    for d in stored.drafts:
        lines += ["", f"== Reply draft {d.id} (version {d.version}, {d.status})",
                  f"Subject: {d.subject or ''}", f"Created: {_when(d.created_at)}",
                  f"Approved by: {d.approved_by or ''} {_when(d.approved_at)}".rstrip(),
                  "", d.body_draft]
        if d.body_final is not None and d.body_final != d.body_draft:
            lines += ["", "-- as approved and sent:", d.body_final]
        for e in stored.edits:
            if e["draft_id"] == d.id:
                lines += ["", f"-- edit saved by {e['user_name']} at {_when(e['saved_at'])}:",
                          e["body"]]
    for n in stored.notes:
        lines += ["", f"== Internal note by {n['author']} at {_when(n['created_at'])}",
                  n["body"]]
    for s in stored.sends:
        lines += ["", f"== Send attempt {s.id} (draft {s.draft_id}): {s.status}",
                  f"Recipients: {s.recipients or ''}", f"Sent: {_when(s.sent_at)}"]
    lines += ["", "== What happened (audit log)"]
    for e in stored.events:
        change = f" {e.from_state or ''} -> {e.to_state or ''}" if e.to_state else ""
        detail = f" {json.dumps(e.detail, ensure_ascii=False)}" if e.detail else ""
        lines.append(f"{_when(e.at)} {e.entity_type} {e.entity_id} {e.event}{change} "
                     f"by {e.actor}{detail}")
    return "\n".join(lines) + "\n"


def export(svc: ServiceContext, address: str, out: Path | str,
           by: str = "cli:privacy") -> ExportResult:
    """Write everything stored about ``address`` to the zip ``out`` (replaced whole: a
    temporary file renamed at the end, so a failed export leaves no half archive)."""
    addr = normalise(address)
    out = Path(out)
    result = ExportResult(address_hash(addr), str(out))
    ids = mail_ids(svc, addr)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    rows: list[str] = []
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for batch in _batches(ids):
                for stored in read_mails(svc, batch):
                    files = _write_mail(z, stored)
                    result.mails += 1
                    result.attachments += len(files)
                    result.drafts += len(stored.drafts)
                    result.send_attempts += len(stored.sends)
                    result.audit_events += len(stored.events)
                    rows.append(_index_row(stored, files))
            z.writestr("index.html", _index(addr, result, rows))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    svc.audit.record(AuditEvent(person(by), "person", result.address_hash, "privacy_exported",
                                detail={"mails": result.mails,
                                        "attachments": result.attachments}))
    return result


def _write_mail(z: zipfile.ZipFile, stored: StoredMail) -> list[str]:
    folder = f"mails/{stored.mail.id}"
    found = attachments(stored)
    for name, data in found:
        z.writestr(f"{folder}/attachments/{name}", data)
    files = [name for name, _ in found]
    z.writestr(f"{folder}/mail.txt", mail_text(stored, files))
    if stored.raw:
        z.writestr(f"{folder}/source.eml", stored.raw)
    if stored.body_html:
        z.writestr(f"{folder}/body.html", stored.body_html)
    return files


def _index_row(stored: StoredMail, files: list[str]) -> str:
    m, e = stored.mail, html.escape
    link = f"mails/{m.id}/mail.txt"
    return (f"<tr><td><a href=\"{link}\">{m.id}</a></td><td>{e(_when(m.received_at))}</td>"
            f"<td>{e(m.from_addr or '')}</td><td>{e(m.subject or '')}</td>"
            f"<td>{e(m.category or '')}</td><td>{len(stored.drafts)}</td>"
            f"<td>{e(', '.join(files))}</td><td>{len(stored.events)}</td></tr>")


def _index(address: str, result: ExportResult, rows: list[str]) -> str:
    e = html.escape
    made = datetime.now(UTC).isoformat(timespec="seconds")
    table = ("<table border=1 cellpadding=4><tr><th>Mail</th><th>Received</th><th>From</th>"
             "<th>Subject</th><th>Category</th><th>Drafts</th><th>Attachments</th>"
             "<th>Audit events</th></tr>" + "".join(rows) + "</table>") if rows else (
        "<p>No stored mail is from or to this address.</p>")
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Data stored about "
            f"{e(address)}</title></head><body><h1>Data stored about {e(address)}</h1>"
            f"<p>Made {e(made)}: {result.mails} mail(s), {result.attachments} attachment(s), "
            f"{result.drafts} reply draft(s), {result.send_attempts} send attempt(s), "
            f"{result.audit_events} audit event(s).</p><p>Each mail has a folder "
            "<code>mails/ID/</code>: <code>mail.txt</code> (the mail, its classification, "
            "the replies and what happened to it), <code>source.eml</code> (the mail as "
            "received) and <code>attachments/</code>.</p>" + table + "</body></html>\n")


# --- erasure (GDPR Art. 17) -------------------------------------------------------------

ERASE_BATCH = 50  # mails deleted per transaction
FORGET = "forget"  # the erasure marks' cause


@dataclass
class ForgetResult:
    address_hash: str
    state: str  # planned | done | partial
    plan: dict[str, int] = field(default_factory=dict)
    erased: int = 0
    busy: int = 0  # mails a worker is processing right now: left for the next run
    error: str | None = None
    remaining: dict[str, int] = field(default_factory=dict)  # the verification's findings


def plan(svc: ServiceContext, ids: list[int]) -> dict[str, int]:
    """What forget would delete, per store (MariaDB rows per table, vector points)."""
    counts = erasure.row_counts(svc.db, ids)
    try:
        counts["vector_points"] = sum(svc.vectors.count(i) for i in ids)
    except StoreUnavailableError:
        counts["vector_points"] = -1  # unknown: the vector store is down
    return counts


def forget(svc: ServiceContext, address: str, reason: str, by: str = "cli:privacy",
           dry_run: bool = False) -> ForgetResult:
    """Delete every mail from or to ``address`` and what was derived from it, in batches,
    through ``erasure.erase_batch`` (vector points, graph documents with the person's
    vertex, send journal files, then the MariaDB rows in one transaction per batch). A store
    that is down stops the erasure with the batch's mails still in MariaDB and findable by
    the address; running forget again finishes it (each phase is idempotent).
    The audit log keeps its events, their detail's personal text erased in place
    (``erasure.erase_audit_detail``); the erasure is audited under the address's hash. The erasure list
    (``privacy_erasures``) holds only the hash."""
    addr = normalise(address)
    digest = address_hash(addr)
    reason = " ".join((reason or "").split())[:500]
    if not reason:
        raise BadInputError("give the reason for the erasure (--reason): it is kept")
    actor = person(by)
    found = mail_ids(svc, addr)
    result = ForgetResult(digest, "planned", plan(svc, found))
    held = erasure.busy(svc.db, found)
    result.busy = len(held)
    if dry_run:
        return result
    ids = [i for i in found if i not in held]
    svc.db.execute(sql("privacy_erasure_start"), {"hash": digest, "reason": reason, "by": actor})
    svc.audit.record(AuditEvent(actor, "person", digest, "privacy_forget_started",
                                detail={"mails": len(ids)}))
    try:
        for batch in _batches(ids, ERASE_BATCH):
            done = erasure.erase_batch(svc, batch, FORGET, person=addr)
            result.erased += len(done.erased)
            result.busy += len(done.busy)
    except StoreUnavailableError as e:
        result.error = f"a store is down: {e}"
    if result.busy and not result.error:
        result.error = (f"{result.busy} mail(s) are being processed by a worker or have a "
                        "reply in flight right now and were left: run forget again when "
                        "their jobs are done")
    result.state = "partial" if result.error else "done"
    svc.db.execute(sql("privacy_erasure_progress"), {
        "hash": digest, "mails": result.erased, "state": result.state,
        "error": result.error})
    svc.audit.record(AuditEvent(actor, "person", digest, f"privacy_forget_{result.state}",
                                detail={"mails": result.erased,
                                        "left": len(found) - result.erased}))
    if result.state == "done":
        result.remaining = verify(svc, addr, found)
        svc.db.execute(sql("privacy_erasure_verified"), {"hash": digest, "found": ", ".join(
            f"{k} {v}" for k, v in result.remaining.items()) or None})
    return result


def verify(svc: ServiceContext, address: str, erased: Sequence[int] = ()) -> dict[str, int]:
    """What still matches the person, per store: mails in MariaDB found by the address
    (the FULLTEXT index lives on those rows), vector points of the erased mails, audit
    events whose detail names the address, mails the graph still has sent by the person.
    Empty = nothing remains."""
    addr = normalise(address)
    found = {
        "mariadb_mails": len(mail_ids(svc, addr)),
        "vector_points": sum(svc.vectors.count(i) for i in erased),
        "audit_details": int((svc.db.fetchone(sql("privacy_audit_naming"),
                                              {"pattern": f"%{addr}%"}) or {}).get("n") or 0),
    }
    if svc.graph is not None:
        found["graph_mails"] = len(svc.graph.sender_history(addr, limit=10))
    return {k: v for k, v in found.items() if v}
