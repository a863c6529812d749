"""Issue 29: what is stored about one person, exported for an access request (real MariaDB)."""

from __future__ import annotations

import json
import zipfile
from email.message import EmailMessage

from email_rag_harness.testing.hang import closed_port

from email_rag.adapters.graph import EDGES, person_key
from email_rag.adapters.vectors import QdrantStore
from email_rag.cli import main
from email_rag.core.index_ports import ChunkPayload, MailToIndex, VectorPoint
from email_rag.core.settings import get_settings
from email_rag.db.audit import AuditEvent, AuditLog, events_for
from email_rag.indexing.indexer import Indexer
from email_rag.mail.mime import parse_mail
from email_rag.privacy.personal_data import address_hash
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.index_helpers import ArangoRecorder

PDF = b"%PDF-1.4 invoice 4711 of Alice\n"


def _with_attachment(sender: str) -> tuple[bytes, str]:
    msg = EmailMessage()
    msg["Message-ID"] = "<inv-4711@customer.example>"
    msg["From"] = f"Alice Example <{sender}>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Invoice 4711 is wrong"
    msg.set_content("Invoice 4711 charges twice.")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="invoice.pdf")
    raw = bytes(msg)
    return raw, parse_mail(raw).attachments_json()


def _people(db, tmp_path):
    box = make_mailbox(db)
    raw, atts = _with_attachment("Alice@Customer.example")
    first = make_email(db, box, subject="Invoice 4711 is wrong", body="Invoice 4711 charges twice.",
                       from_addr="Alice@Customer.example", from_name="Alice Example", raw=raw,
                       attachments=atts, message_id="<inv-4711@customer.example>",
                       category="billing", summary="double charge on 4711")
    second = make_email(db, box, subject="Our answer on 4711", body="We refunded it.",
                        from_addr="support@example.com", direction="out",
                        to_addrs="bob@partner.example, alice@customer.example")
    # another person, whose display name is Alice's address: never matched by name
    other = make_email(db, box, subject="Carol's router", body="Carol's router is down.",
                       from_addr="carol@other.example", from_name="alice@customer.example")
    draft = make_draft(db, first, body="Dear Alice,\n\nwe refund invoice 4711.\n")
    other_draft = make_draft(db, other, body="Dear Carol,\n\nreboot the router.\n")
    log = AuditLog(db, tmp_path / "spool.jsonl")
    log.record(AuditEvent("worker", "email", first, "state_changed", "received", "classified"),
               AuditEvent("user:anna", "draft", draft, "approved", "pending_review", "approved"),
               AuditEvent("worker", "email", second, "imported"),
               AuditEvent("worker", "email", other, "state_changed", "received", "classified",
                          detail={"note": "carol-only-event"}),
               AuditEvent("user:anna", "draft", other_draft, "approved"))
    return first, second, other, draft


def test_export_holds_each_thing_of_the_person_and_nothing_of_another(env, db, tmp_path,
                                                                       capsys):
    first, second, other, draft = _people(db, tmp_path)
    out = tmp_path / "alice.zip"
    capsys.readouterr()
    code = main(["privacy", "export", " ALICE@customer.EXAMPLE ", "--out", str(out), "--json"])
    data = json.loads(capsys.readouterr().out)["data"]
    assert code == 0
    assert (data["mails"], data["attachments"], data["drafts"], data["audit_events"]) == (
        2, 1, 1, 3)

    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        assert {"index.html", f"mails/{first}/mail.txt", f"mails/{first}/source.eml",
                f"mails/{first}/attachments/01-invoice.pdf", f"mails/{second}/mail.txt",
                f"mails/{second}/source.eml"} <= names
        assert not [n for n in names if n.startswith(f"mails/{other}/")]
        assert z.read(f"mails/{first}/attachments/01-invoice.pdf") == PDF
        text = z.read(f"mails/{first}/mail.txt").decode()
        for expected in ("Invoice 4711 charges twice.", "billing", "double charge on 4711",
                         f"Reply draft {draft}", "we refund invoice 4711.",
                         "state_changed received -> classified", f"draft {draft} approved"):
            assert expected in text
        assert b"invoice.pdf" in z.read(f"mails/{first}/source.eml")
        assert "We refunded it." in z.read(f"mails/{second}/mail.txt").decode()
        index = z.read("index.html").decode()
        assert f'href="mails/{first}/mail.txt"' in index and "2 mail(s)" in index
        everything = b"".join(z.read(n) for n in names)
    for foreign in (b"Carol", b"carol", b"reboot the router", b"carol-only-event"):
        assert foreign not in everything

    # audited under the address's hash: the audit log never holds the plain address
    [event] = events_for(db, "person", address_hash("alice@customer.example"))
    assert event["event"] == "privacy_exported"
    assert "alice" not in json.dumps(event, default=str).lower()


def test_export_of_an_unknown_address_is_an_index_saying_so(env, db, tmp_path, capsys):
    _people(db, tmp_path)
    out = tmp_path / "nobody.zip"
    assert main(["privacy", "export", "nobody@nowhere.example", "--out", str(out)]) == 0
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == ["index.html"]
        assert "No stored mail" in z.read("index.html").decode()


def test_export_refuses_a_name_instead_of_an_address(env, db, tmp_path):
    assert main(["privacy", "export", "Alice Example", "--out", str(tmp_path / "x.zip")]) != 0
    assert not (tmp_path / "x.zip").exists()


# --- forget ------------------------------------------------------------------------------

def _index(settings, ids_by_mailbox: dict[int, int]) -> None:
    """Points in the test's local Qdrant folder for these mails (2 chunks each)."""
    store = QdrantStore.from_settings(settings)
    try:
        for email_id, box in ids_by_mailbox.items():
            store.replace_mail(email_id, [
                VectorPoint(email_id, c, [float(email_id), float(c) + 1.0] + [0.5] * (
                    store.dim - 2), ChunkPayload(email_id, box, c, text=f"chunk {c}"))
                for c in range(2)])
    finally:
        store.close()


def _points(settings, email_id: int) -> int:
    store = QdrantStore.from_settings(settings)
    try:
        return store.count(email_id)
    finally:
        store.close()


def _forget(capsys, *args) -> tuple[int, dict]:
    get_settings.cache_clear()
    capsys.readouterr()
    code = main(["privacy", "forget", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)["data"]


def test_forget_erases_the_person_everywhere_and_leaves_another_untouched(env, db, settings,
                                                                          tmp_path, capsys):
    first, second, other, draft = _people(db, tmp_path)
    box = db.fetchone("SELECT mailbox_id FROM emails WHERE id = %s", (first,))["mailbox_id"]
    _index(settings, {first: box, second: box, other: box})

    code, planned = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request",
                            "--dry-run")
    assert code == 0 and planned["state"] == "planned"
    assert planned["plan"] == {"mails": 2, "drafts": 1, "send_attempts": 0, "draft_edits": 0,
                               "labelled_examples": 0, "jobs": 0, "vector_points": 4}
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 3  # dry run: nothing gone

    code, done = _forget(capsys, "Alice@Customer.Example", "--reason", "Art. 17 request")
    assert code == 0, done
    assert (done["state"], done["erased"], done["remaining"]) == ("done", 2, {})

    # the verification, again from outside: MariaDB, local Qdrant
    left = db.fetchall("SELECT id FROM emails WHERE LOWER(from_addr) LIKE '%%alice%%' OR "
                       "LOWER(to_addrs) LIKE '%%alice%%' OR body_text LIKE '%%4711%%'")
    assert left == []
    assert db.fetchall("SELECT id FROM drafts WHERE email_id IN (%s, %s)", (first, second)) == []
    assert _points(settings, first) == _points(settings, second) == 0
    # another person's mail, draft and points are untouched
    assert db.fetchone("SELECT subject FROM emails WHERE id = %s", (other,))["subject"] == (
        "Carol's router")
    assert db.fetchone("SELECT COUNT(*) AS n FROM drafts WHERE email_id = %s", (other,))["n"] == 1
    assert _points(settings, other) == 2
    # the audit trail still answers "what happened to mail N", without the person's data
    assert [e["event"] for e in events_for(db, "email", first)] == ["state_changed"]
    assert [e["event"] for e in events_for(db, "draft", draft)] == ["approved"]
    # the erasure list holds the hash, never the address
    [row] = db.fetchall("SELECT * FROM privacy_erasures")
    assert row["address_hash"] == address_hash("alice@customer.example")
    assert row["state"] == "done" and row["mails_erased"] == 2
    assert "alice" not in json.dumps(row, default=str).lower()

    # running it again is a no-op
    code, again = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 0 and again["erased"] == 0 and again["plan"]["mails"] == 0
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 1
    assert _points(settings, other) == 2


def test_forget_with_the_vector_store_down_is_partial_and_finished_by_running_again(
        env, db, settings, tmp_path, capsys, monkeypatch):
    first, second, other, _ = _people(db, tmp_path)
    box = db.fetchone("SELECT mailbox_id FROM emails WHERE id = %s", (first,))["mailbox_id"]
    _index(settings, {first: box, second: box, other: box})

    monkeypatch.setenv("EMAIL_RAG_QDRANT_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("EMAIL_RAG_QDRANT_TIMEOUT", "1")
    code, partial = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 2 and partial["state"] == "partial" and partial["erased"] == 0
    # nothing half-deleted: the mails are still findable by the address for the retry
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 3
    assert db.fetchone("SELECT state FROM privacy_erasures")["state"] == "partial"

    monkeypatch.delenv("EMAIL_RAG_QDRANT_URL")
    code, done = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 0 and (done["state"], done["erased"], done["remaining"]) == ("done", 2, {})
    assert _points(settings, first) == _points(settings, second) == 0
    assert _points(settings, other) == 2
    assert db.fetchone("SELECT state FROM privacy_erasures")["state"] == "done"


def test_forget_erases_the_graph_documents_through_the_graph_adapter(env, db, settings,
                                                                    tmp_path, capsys,
                                                                    monkeypatch):
    """The graph adapter's test double (ArangoRecorder, NOT ArangoDB: no server can run
    here) holds what indexing wrote; forget deletes the person's mails, replies, edges and
    person vertex, and nothing of another person."""
    first, second, other, _ = _people(db, tmp_path)
    recorder = ArangoRecorder()
    try:
        monkeypatch.setenv("EMAIL_RAG_ARANGO_URL", recorder.url)
        get_settings.cache_clear()
        svc = Services(get_settings())
        try:
            for row in db.fetchall("SELECT * FROM emails ORDER BY id"):
                svc.graph.upsert_mail(Indexer(svc).graph_mail(MailToIndex.from_row(row)))
        finally:
            svc.close()
        alice = person_key("alice@customer.example")
        assert set(recorder.collections["mails"]) == {f"m{first}", f"m{second}", f"m{other}"}
        assert alice in recorder.collections["people"]

        code, done = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
        assert code == 0 and (done["state"], done["remaining"]) == ("done", {}), done
        assert set(recorder.collections["mails"]) == {f"m{other}"}
        assert alice not in recorder.collections["people"]
        assert person_key("carol@other.example") in recorder.collections["people"]
        edges = [e for name in EDGES for e in recorder.collections[name].values()]
        assert edges and all(f"m{other}" in e["_from"] + e["_to"] for e in edges)
        docs = [d for c in recorder.collections.values() for d in c.values()]
        assert not [d for d in docs if "alice@customer.example" in (d.get("address"),
                                                                    d.get("from_addr"))]
    finally:
        recorder.close()


def _search(capsys, text: str) -> list[int]:
    get_settings.cache_clear()
    capsys.readouterr()
    assert main(["search", text, "--json"]) == 0
    return [r["email_id"] for r in json.loads(capsys.readouterr().out)["data"]["results"]]


def test_after_forget_email_rag_search_finds_nothing_of_the_person(env, db, tmp_path, capsys,
                                                                   monkeypatch):
    """Indexed for real (the test-only hashing embedder, local Qdrant, the lexical index):
    `email-rag search` finds the person's mails before the erasure, none after, and
    still finds another person's."""
    monkeypatch.setenv("EMAIL_RAG_EMBEDDING_BACKEND", "hashing")
    first, second, other, _ = _people(db, tmp_path)
    get_settings.cache_clear()
    svc = Services(get_settings())
    try:
        for row in db.fetchall("SELECT * FROM emails ORDER BY id"):
            assert Indexer(svc).index(row).missing == []
    finally:
        svc.close()
    assert first in _search(capsys, "invoice 4711 charges twice")
    assert other in _search(capsys, "router is down")

    code, done = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 0 and done["state"] == "done" and done["remaining"] == {}, done
    for text in ("invoice 4711 charges twice", "We refunded it", "Alice"):
        assert not {first, second} & set(_search(capsys, text))
    assert other in _search(capsys, "router is down")


def test_export_to_a_folder_that_does_not_exist_is_an_error_and_writes_nothing(env, db,
                                                                               tmp_path):
    _people(db, tmp_path)
    out = tmp_path / "missing" / "alice.zip"
    assert main(["privacy", "export", "alice@customer.example", "--out", str(out)]) == 1
    assert not out.parent.exists()


def test_forget_leaves_a_mail_a_worker_is_processing_for_the_next_run(env, db, tmp_path,
                                                                      capsys):
    first, second, other, _ = _people(db, tmp_path)
    job = make_job(db, first, state="processing")
    code, partial = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 2 and (partial["state"], partial["erased"], partial["busy"]) == (
        "partial", 1, 1)
    assert [r["id"] for r in db.fetchall("SELECT id FROM emails ORDER BY id")] == [first, other]

    db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (job,))
    code, done = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 0 and (done["state"], done["erased"], done["remaining"]) == ("done", 1, {})
    assert [r["id"] for r in db.fetchall("SELECT id FROM emails")] == [other]
    assert db.fetchone("SELECT state, mails_erased FROM privacy_erasures") == {
        "state": "done", "mails_erased": 2}


def _audit_text(db) -> str:
    rows = db.fetchall("SELECT actor, entity_id, event, from_state, to_state, detail "
                       "FROM audit_log")
    return json.dumps(rows, default=str, ensure_ascii=False).lower()


def test_after_forget_the_audit_keeps_each_event_of_the_person_without_their_data(
        env, db, tmp_path, capsys):
    """The person's data that today's writers put into audit detail (the reply rule's reason
    naming the sender addresses, the downloaded attachment's file name, a staff member's
    reject reason quoting the mail, a send error naming the recipient) is unreadable after
    forget, in MariaDB and in the spool; every event stays with what happened, when and by
    whom, so the trail still answers "what happened to mail N"; another person's events
    keep their detail."""
    from email_rag.core.states import Actor
    from email_rag.mail.addresses import choose_reply
    from email_rag.sending.review import attachment, reject

    box = make_mailbox(db)
    msg = EmailMessage()
    msg["Message-ID"] = "<id-card@customer.example>"
    msg["From"] = "Alice Example <alice@customer.example>, alice.private@home.example"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Passport renewal for Alice Example"
    msg.set_content("Please find my ID card attached.")
    msg.add_attachment(PDF, maintype="application", subtype="pdf",
                       filename="Alice Example ID card.pdf")
    raw = bytes(msg)
    first = make_email(db, box, subject="Passport renewal for Alice Example",
                       body="Please find my ID card attached.", from_name="Alice Example",
                       from_addr="alice@customer.example", raw=raw,
                       attachments=parse_mail(raw).attachments_json(),
                       message_id="<id-card@customer.example>")
    other = make_email(db, box, subject="Carol's router", from_addr="carol@other.example")
    draft = make_draft(db, first, body="Dear Alice,\n\nwe renew it.\n")
    job = make_job(db, first)
    rule = choose_reply(["alice@customer.example", "alice.private@home.example"], []).rule
    assert "alice@customer.example" in rule  # the reason names the sender addresses
    svc = Services(get_settings())
    try:
        svc.audit.record(
            AuditEvent(Actor.POLLER, "email", first, "received", None, "manual",
                       detail={"mailbox": "support", "uid": 7, "reason": rule}),
            AuditEvent(Actor.WORKER, "job", job, "retry_scheduled", "processing", "queued",
                       attempt=1, detail={"error": "SMTP 550 5.1.1 <alice@customer.example>:"
                                          " Recipient address rejected", "reason": "transient",
                                          "retry_in_s": 2.0}),
            AuditEvent(Actor.POLLER, "email", other, "received", None, "manual",
                       detail={"reason": "From carol@other.example is a no-reply address"}))
        attachment(svc, draft, 1, "anna")
        reject(svc, draft, "anna", "Alice Example phoned: Passport renewal for Alice Example "
                                   "is done, alice.private@home.example confirmed")
        # an event of the mail still in the spool (MariaDB was down when it was written)
        AuditLog(db, svc.settings.audit_spool_path).spool([AuditEvent(
            Actor.WORKER, "email", first, "step_failed",
            detail={"step": "parse", "error": "header block unreadable: Alice Example"})])
    finally:
        svc.close()
    before = [(e["event"], e["actor"], e["from_state"], e["to_state"], e["at"])
              for e in events_for(db, "email", first)]
    text = _audit_text(db)
    for personal in ("alice@customer.example", "alice example id card.pdf", "passport renewal"):
        assert personal in text  # today's writers put it there

    code, done = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 0 and done["state"] == "done" and done["remaining"] == {}, done

    text = _audit_text(db)
    for personal in ("alice@customer.example", "alice.private@home.example", "alice example",
                     "passport renewal", "id card"):
        assert personal not in text, personal
    assert AuditLog(db, get_settings().audit_spool_path).spooled_count() == 0
    # what happened to mail N, when and by whom: every event kept
    after = [(e["event"], e["actor"], e["from_state"], e["to_state"], e["at"])
             for e in events_for(db, "email", first)]
    assert after[:len(before)] == before and [e[0] for e in after][-1] == "step_failed"
    assert [e["event"] for e in events_for(db, "draft", draft)] == ["rejected"]
    [retry] = events_for(db, "job", job)
    assert json.loads(retry["detail"])["retry_in_s"] == 2.0 and retry["attempt"] == 1
    [downloaded] = [e for e in events_for(db, "email", first)
                    if e["event"] == "attachment_downloaded"]
    assert json.loads(downloaded["detail"])["size"] == len(PDF)
    # another person's event is untouched
    [carol] = events_for(db, "email", other)
    assert "carol@other.example" in carol["detail"]


def test_mail_from_an_erased_address_arriving_later_is_a_new_case(env, db, settings, tmp_path,
                                                                  capsys):
    """GIVEN Alice was erased WHEN she writes again - a new mail, and her old mail sent once
    more (same Message-ID) - THEN both are stored as new mail with their queue entries, as
    any mail: nothing of the erasure blocks, dedups or marks them, and the erasure list
    still holds only the hash."""
    from email_rag.ingest.store import (
        BatchTarget,
        FetchedMail,
        PrepareOptions,
        prepare,
        store_batch,
    )

    first, _second, _other, _draft = _people(db, tmp_path)
    box = db.fetchone("SELECT mailbox_id FROM emails WHERE id = %s", (first,))["mailbox_id"]
    name = db.fetchone("SELECT name FROM mailboxes WHERE id = %s", (box,))["name"]
    code, done = _forget(capsys, "alice@customer.example", "--reason", "Art. 17 request")
    assert code == 0 and done["state"] == "done"

    resent, _ = _with_attachment("alice@customer.example")
    new = (b"From: Alice Example <alice@customer.example>\r\nTo: support@example.com\r\n"
           b"Subject: Invoice 4712\r\nMessage-ID: <inv-4712@customer.example>\r\n"
           b"Date: Fri, 04 Dec 2026 10:00:00 +0000\r\n\r\nInvoice 4712 is wrong too.\r\n")
    opts = PrepareOptions("email-rag.invalid")
    prepared = [prepare(FetchedMail(uid, raw, len(raw)), opts)
                for uid, raw in ((101, resent), (102, new))]
    result = store_batch(db, BatchTarget(box, name, "INBOX", 1, settings.queue_name),
                         prepared, 102)
    assert len(result.new) == 2 and result.duplicates == []
    rows = db.fetchall("SELECT e.id, e.message_id, e.status, j.kind, j.state FROM emails e "
                       "JOIN jobs j ON j.email_id = e.id WHERE LOWER(e.from_addr) = "
                       "'alice@customer.example' ORDER BY e.id")
    assert [(r["message_id"], r["status"], r["kind"]) for r in rows] == [
        ("<inv-4711@customer.example>", "received", "process_email"),
        ("<inv-4712@customer.example>", "received", "process_email")]
    assert all(r["id"] > first for r in rows)  # new rows, not the erased ones back
    [erasure] = db.fetchall("SELECT * FROM privacy_erasures")
    assert erasure["state"] == "done"
    assert "alice" not in json.dumps(erasure, default=str).lower()
