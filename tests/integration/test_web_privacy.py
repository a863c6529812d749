"""The admin's page for a person's data (issue 29): export and erasure in the web UI, the
same code as ``email-rag privacy export|forget``; with a local Qdrant folder the erasure
is carried out by the vector worker (real MariaDB, local Qdrant, the web app over HTTP)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from email_rag.adapters.vectors import QdrantStore
from email_rag.cli import main
from email_rag.core.index_ports import ChunkPayload, VectorPoint
from email_rag.core.settings import get_settings
from email_rag.db.audit import events_for
from email_rag.privacy.personal_data import address_hash
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_mailbox

ALICE = "alice@customer.example"


@pytest.fixture
def people(db):
    box = make_mailbox(db)
    first = make_email(db, box, subject="Invoice 4711 is wrong", from_addr=ALICE,
                       from_name="Alice Example", body="Invoice 4711 charges twice.")
    draft = make_draft(db, first, body="Dear Alice,\n\nwe refund it.\n")
    other = make_email(db, box, subject="Carol's router", from_addr="carol@other.example")
    return {"box": box, "first": first, "draft": draft, "other": other}


def _points(settings, ids_by_box: dict[int, int], write: bool = False) -> dict[int, int]:
    store = QdrantStore.from_settings(settings)
    try:
        if write:
            for email_id, box in ids_by_box.items():
                store.replace_mail(email_id, [VectorPoint(
                    email_id, 0, [float(email_id)] + [0.5] * (store.dim - 1),
                    ChunkPayload(email_id, box, 0, text="chunk"))])
        return {i: store.count(i) for i in ids_by_box}
    finally:
        store.close()


def test_staff_get_no_privacy_page_and_every_post_needs_the_csrf_token(client, people, db):
    anna, root = client("anna"), client("root")
    assert anna.get("/admin/privacy").status_code == 403
    assert 'href="/admin/privacy"' in root.get("/").text  # in the admin's navigation
    assert 'href="/admin/privacy"' not in anna.get("/").text
    for path, data in (("/admin/privacy/export", {"address": ALICE}),
                       ("/admin/privacy/forget", {"address": ALICE, "reason": "Art. 17",
                                                  "confirmed": "1"})):
        r = anna.post(path, data={"csrf_token": anna.csrf, **data}, follow_redirects=False)
        assert r.status_code == 403
        r = root.post(path, data=data, follow_redirects=False)  # no token
        assert r.status_code == 403 and "Form expired" in r.text
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 2
    assert db.fetchone("SELECT COUNT(*) AS n FROM privacy_requests")["n"] == 0


def test_the_export_download_is_the_archive_of_the_command(client, people, tmp_path, capsys):
    root = client("root")
    assert "Export" in root.get("/admin/privacy").text
    r = root.post("/admin/privacy/export", data={"csrf_token": root.csrf,
                                                 "address": " Alice@Customer.example "})
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert "attachment" in r.headers["content-disposition"]
    assert "alice" not in r.headers["content-disposition"].lower()
    assert main(["privacy", "export", ALICE, "--out", str(tmp_path / "cli.zip")]) == 0
    with zipfile.ZipFile(io.BytesIO(r.content)) as web, zipfile.ZipFile(tmp_path / "cli.zip") as cli:
        assert sorted(web.namelist()) == sorted(cli.namelist())
        first = people["first"]
        assert f"mails/{first}/mail.txt" in web.namelist()
        assert not [n for n in web.namelist() if n.startswith(f"mails/{people['other']}/")]
        for name in web.namelist():
            if name != "index.html":  # the index says when it was made
                assert web.read(name) == cli.read(name), name
    exported = [e["actor"] for e in events_for(
        Services(get_settings()).db, "person", address_hash(ALICE))]
    assert exported == ["user:root", "cli:privacy"]


def test_a_name_instead_of_an_address_exports_nothing(client, people):
    root = client("root")
    r = root.post("/admin/privacy/export", data={"csrf_token": root.csrf,
                                                 "address": "Alice Example"})
    assert "Nothing exported" in r.text and "plain e-mail address" in r.text


def test_forget_asks_for_a_reason_then_shows_what_goes_and_deletes_only_when_confirmed(
        client, people, db):
    root = client("root")
    r = root.post("/admin/privacy/forget", data={"csrf_token": root.csrf, "address": ALICE,
                                                 "reason": "  "})
    assert "Nothing erased" in r.text and "reason" in r.text
    r = root.post("/admin/privacy/forget", data={"csrf_token": root.csrf, "address": ALICE,
                                                 "reason": "Art. 17 request"})
    assert r.status_code == 200 and "Erase for good" in r.text
    plan = dict(zip(*[iter([c.strip() for c in _cells(r.text, "forget-plan")])] * 2,
                    strict=True))
    assert plan["mails"] == "1" and plan["reply drafts"] == "1"
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 2  # nothing deleted yet
    assert db.fetchone("SELECT COUNT(*) AS n FROM privacy_requests")["n"] == 0


def _cells(html: str, table_id: str) -> list[str]:
    import re

    table = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1]
    return re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)


def test_a_confirmed_forget_with_local_qdrant_is_queued_and_the_vector_worker_erases(
        client, app, people, db, settings):
    """GIVEN a local Qdrant folder (only the vector worker may open it) WHEN an admin
    confirms the erasure THEN the web process queues it (the request and one entry on the
    vector queue, no vector store opened) AND the vector worker's run erases the person
    everywhere, deletes the request (the address with it) and keeps another person."""
    first, other, box = people["first"], people["other"], people["box"]
    assert _points(settings, {first: box, other: box}, write=True) == {first: 1, other: 1}
    root = client("root")
    form = {"csrf_token": root.csrf, "address": ALICE, "reason": "Art. 17 request",
            "confirmed": "1"}
    r = root.post("/admin/privacy/forget", data=form)
    assert "Erasure queued" in r.text
    [job] = db.fetchall("SELECT id, kind, queue, state FROM jobs")
    assert (job["kind"], job["queue"], job["state"]) == ("privacy_forget", "email-rag-vectors",
                                                         "queued")
    [req] = db.fetchall("SELECT address_hash, address, requested_by FROM privacy_requests")
    assert req == {"address_hash": address_hash(ALICE), "address": ALICE,
                   "requested_by": "user:root"}
    assert "vectors" not in vars(app.state.pool.get())  # the web opened no vector store
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 2
    assert "queued" in root.get("/admin/privacy").text
    # asked again while queued: one entry
    root.post("/admin/privacy/forget", data=form)
    assert db.fetchone("SELECT COUNT(*) AS n FROM jobs")["n"] == 1

    worker = Services(get_settings())
    try:
        assert JobRunner(worker, "w-vec", vector_owner=True).run(job["id"]) == "done"
    finally:
        worker.close()
    assert [r["id"] for r in db.fetchall("SELECT id FROM emails")] == [other]
    assert _points(settings, {first: box, other: box}) == {first: 0, other: 1}
    assert db.fetchone("SELECT COUNT(*) AS n FROM privacy_requests")["n"] == 0
    row = db.fetchone("SELECT state, mails_erased, requested_by, last_error "
                      "FROM privacy_erasures")
    assert row == {"state": "done", "mails_erased": 1, "requested_by": "user:root",
                   "last_error": None}
    page = root.get("/admin/privacy").text
    assert address_hash(ALICE)[:12] in page and ALICE not in page
    everything = json.dumps(db.fetchall("SELECT * FROM audit_log"), default=str).lower()
    assert "alice" not in everything


def test_a_queued_forget_with_the_vector_store_down_is_retried_until_it_is_done(
        client, people, db, settings, monkeypatch):
    from email_rag_harness.testing.hang import closed_port

    root = client("root")
    root.post("/admin/privacy/forget", data={"csrf_token": root.csrf, "address": ALICE,
                                             "reason": "Art. 17", "confirmed": "1"})
    [job] = db.fetchall("SELECT id FROM jobs")
    monkeypatch.setenv("EMAIL_RAG_QDRANT_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("EMAIL_RAG_QDRANT_TIMEOUT", "1")
    monkeypatch.setenv("EMAIL_RAG_QUEUE_NAME", "email-rag-vectors")  # the entry's queue
    get_settings.cache_clear()
    worker = Services(get_settings())
    try:
        assert JobRunner(worker, "w-vec", vector_owner=True).run(job["id"]) == "failed"
    finally:
        worker.close()
    assert db.fetchone("SELECT state FROM privacy_erasures")["state"] == "partial"
    assert db.fetchone("SELECT COUNT(*) AS n FROM privacy_requests")["n"] == 1
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 2

    monkeypatch.delenv("EMAIL_RAG_QDRANT_URL")
    monkeypatch.delenv("EMAIL_RAG_QUEUE_NAME")
    get_settings.cache_clear()
    db.execute("UPDATE jobs SET next_run_at = UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE")
    worker = Services(get_settings())
    try:
        assert JobRunner(worker, "w-vec", vector_owner=True).run(job["id"]) == "done"
    finally:
        worker.close()
    assert db.fetchone("SELECT state FROM privacy_erasures")["state"] == "done"
    assert [r["id"] for r in db.fetchall("SELECT id FROM emails")] == [people["other"]]
