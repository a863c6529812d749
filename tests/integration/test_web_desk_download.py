"""Attachment downloads streamed from MariaDB (real MariaDB): a 10 MiB attachment comes out
byte-identical with every header of a safe download, is read in 1 MiB pieces of the stored
mail (never the whole mail, nor the whole file, in memory) and only by staff of its
mailbox."""

from __future__ import annotations

import hashlib
import secrets
import threading
import tracemalloc
from email.message import EmailMessage

import pytest

from email_rag.auth import users
from email_rag.mail import parts
from email_rag.mail.mime import parse_mail
from email_rag.sending import review
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_mailbox

PEOPLE = {"anna": "staff", "otto": "staff", "root": "admin"}

SIZE = 10 * 1024 * 1024


@pytest.fixture
def big(db):
    """A draft whose mail carries a 10 MiB attachment (base64 in the stored mail) with a
    hostile file name; anna works the mailbox, otto another one."""
    blob = secrets.token_bytes(SIZE)
    msg = EmailMessage()
    msg["From"] = "Carla Kunde <carla@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Grosse Datei"
    msg.set_content("Anbei die Datei.")
    msg.add_attachment(
        blob, maintype="application", subtype="octet-stream", filename='Rechnung"\u202efdp.exe'
    )
    raw = msg.as_bytes()
    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    assert sales
    users.set_mailbox(db, "anna", "support", True, "test")
    users.set_mailbox(db, "otto", "sales", True, "test")
    email = make_email(
        db, support, subject="Grosse Datei", raw=raw, attachments=parse_mail(raw).attachments_json()
    )
    return make_draft(db, email), blob, email


def test_a_10_mib_attachment_downloads_byte_identical_with_safe_headers(client, db, big):
    """GIVEN a draft whose mail carries a 10 MiB attachment WHEN anna downloads it THEN the
    bytes are the attachment's, the download is an octet-stream attachment with a safe
    file name (no quote, no bidi override in the ASCII name), nosniff and no-store, of the
    right length, audited under user:anna."""
    draft, blob, email = big
    with client("anna").stream("GET", f"/drafts/{draft}/attachments/1") as r:
        assert r.status_code == 200
        digest, size = hashlib.sha256(), 0
        for piece in r.iter_bytes():
            digest.update(piece)
            size += len(piece)
    assert (size, digest.hexdigest()) == (SIZE, hashlib.sha256(blob).hexdigest())
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-length"] == str(SIZE)
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "no-store" in r.headers["cache-control"]
    disposition = r.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="Rechnung_')
    assert "\u202e" not in disposition and "%E2%80%AE" in disposition
    event = db.fetchone(
        "SELECT actor, detail FROM audit_log WHERE event = "
        "'attachment_downloaded' AND entity_id = %s",
        (str(email),),
    )
    assert event["actor"] == "user:anna" and f'"size": {SIZE}' in event["detail"]


def test_only_staff_of_the_mailbox_download_it(client, big):
    """GIVEN the draft in anna's mailbox WHEN otto (another mailbox) or an anonymous client
    asks for the attachment THEN otto gets 404 (he does not learn it exists), the anonymous
    client the login page; root (admin) gets the file; a missing attachment is 404."""
    draft, blob, _ = big
    assert client("otto").get(f"/drafts/{draft}/attachments/1").status_code == 404
    anonymous = client("anna")
    anonymous.cookies.clear()
    r = anonymous.get(f"/drafts/{draft}/attachments/1", follow_redirects=False)
    assert r.status_code in (302, 303) and "/login" in r.headers["location"]
    assert client("anna").get(f"/drafts/{draft}/attachments/2").status_code == 404
    with client("root").stream("GET", f"/drafts/{draft}/attachments/1") as r:
        assert r.status_code == 200
        assert hashlib.sha256(b"".join(r.iter_bytes())).digest() == hashlib.sha256(blob).digest()


def _peak_of(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_download_reads_the_stored_mail_in_1_mib_pieces(settings, db, big, monkeypatch):
    """GIVEN the 10 MiB attachment (13.7 MB of base64 in the stored mail) WHEN the download
    is prepared and sent THEN every read of the stored mail is a slice of at most 1 MiB,
    and the peak of Python memory stays below 8 MiB (a few pieces and their copies; the
    file is 10 MiB, the mail 13.7 MB), while reading the same attachment whole (the
    fallback for parts the piece reader does not follow) peaks above 20 MiB."""
    draft, blob, _ = big
    svc = Services(settings)
    slices: list[int] = []
    run_sql = type(svc.db).fetchone

    def counted(self, query, params=None):
        if "SUBSTRING(raw" in query:
            slices.append(params["length"])
        return run_sql(self, query, params)

    monkeypatch.setattr(type(svc.db), "fetchone", counted)
    digest = hashlib.sha256()

    def streamed() -> None:
        got = review.download(lambda: svc, draft, 1, "anna", threading.BoundedSemaphore(1))
        assert got.streamed and got.size == SIZE
        for piece in got.pieces():
            digest.update(piece)

    try:
        streamed_peak = _peak_of(streamed)
        whole_peak = _peak_of(lambda: review.attachment(svc, draft, 1, "anna"))
    finally:
        svc.close()
    assert digest.hexdigest() == hashlib.sha256(blob).hexdigest()
    assert slices and max(slices) <= parts.PIECE == 1024 * 1024
    assert streamed_peak < 8 * 1024 * 1024, streamed_peak
    assert whole_peak > 20 * 1024 * 1024, whole_peak
