"""One identity per mailbox, end to end: two mailboxes reply through their own SMTP servers
(TLS, verified with the test CA) with their own From address; the Sent folder is the one the
server marks \\Sent (SPECIAL-USE), whatever its name; a provider that files submitted mail
itself gets no second copy. Real Dovecot, aiosmtpd, MariaDB, Redis, worker code."""

from __future__ import annotations

import email

import pytest
from pydantic import SecretStr

from email_rag.adapters.imap import ImapMailbox
from email_rag.core.settings import MailboxConfig, SmtpIdentity
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending import review
from tests.factories import make_draft, make_email, make_mailbox
from tests.integration.ingest_helpers import services_for
from tests.mailtls import TestCA, TlsDovecot, TlsSmtpServer

SENT = "Gesendete Elemente"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    ca = TestCA(tmp_path_factory.mktemp("pki"))
    return ca, ca.issue(["127.0.0.1"])


@pytest.fixture(scope="module")
def dovecot(pki):
    with TlsDovecot(pki[1], sent_name=SENT) as d:
        d.add_user("support@example.com", "pw-support")
        d.add_user("sales@example.com", "pw-sales")
        yield d


def mailbox(dovecot, pki, name: str, smtp_port: int, smtp_security: str,
            **kw) -> MailboxConfig:
    ca = str(pki[0].ca_file)
    return MailboxConfig(
        name=name, host="127.0.0.1", port=dovecot.tls_port, security="tls", ca_file=ca,
        username=f"{name}@example.com", password=SecretStr(f"pw-{name}"),
        address=f"{name}@example.com",
        smtp=SmtpIdentity(host="127.0.0.1", port=smtp_port, security=smtp_security,
                          ca_file=ca), **kw)


def in_sent(config: MailboxConfig) -> list[bytes]:
    with ImapMailbox(config, 10) as imap:
        uids = imap.uids_where(SENT, "ALL")
        if not uids:
            return []
        data = imap._call("FETCH", lambda c: c.fetch(uids, ["BODY.PEEK[]"]))
        return [bytes(v[b"BODY[]"]) for v in data.values()]


def approve_and_send(svc, db, name: str) -> str:
    mail = make_email(db, make_mailbox(db, name), subject=f"Question for {name}",
                      thread_key=name[0] * 64)
    draft = make_draft(db, mail)
    result = review.approve(svc, draft, "anna")
    job = db.fetchone("SELECT id FROM jobs WHERE draft_id = %s", (draft,))
    assert JobRunner(svc, "w1", pipeline=[]).run(job["id"]) == "done"
    return result.message_id


def test_two_mailboxes_reply_through_their_own_smtp_and_file_in_the_special_use_sent(
        settings, db, dovecot, pki):
    with TlsSmtpServer(pki[1], "starttls") as first, TlsSmtpServer(pki[1], "tls") as second:
        support = mailbox(dovecot, pki, "support", first.port, "starttls")
        sales = mailbox(dovecot, pki, "sales", second.port, "tls",
                        provider_files_sent=True)
        svc = services_for(settings, support, sales, smtp_port=9)  # the global relay: dead
        try:
            support_id = approve_and_send(svc, db, "support")
            sales_id = approve_and_send(svc, db, "sales")
        finally:
            svc.close()
    assert [(r[0], r[1]) for r in first.received] == [("support@example.com",
                                                       ["alice@customer.example"])]
    assert [r[0] for r in second.received] == ["sales@example.com"]
    assert email.message_from_bytes(first.received[0][2])["Message-ID"] == support_id
    assert email.message_from_bytes(second.received[0][2])["From"].endswith(
        "<sales@example.com>")
    # support: our copy went to the folder the server marks \Sent (no folder named "Sent")
    filed = in_sent(support)
    assert [email.message_from_bytes(m)["Message-ID"] for m in filed] == [support_id]
    with ImapMailbox(support, 10) as imap:
        assert not imap.folder_exists("Sent")
    # sales: its provider files submitted mail itself: no second copy from us
    assert in_sent(sales) == [] and sales_id


def test_reconciliation_searches_the_special_use_sent_folder(settings, db, dovecot, pki):
    support = mailbox(dovecot, pki, "support", 9, "starttls")
    message_id = "<reconcile-1@email-rag.invalid>"
    with ImapMailbox(support, 10) as imap:
        imap.append(SENT, f"Message-ID: {message_id}\r\nSubject: x\r\n\r\nbody\r\n".encode())
    svc = services_for(settings, support)
    try:
        folder = svc.sent_folder("support")
        assert folder.contains(message_id)
        assert folder.folder == SENT
        assert not folder.contains("<never-sent@email-rag.invalid>")
        override = svc.settings.mailbox("support").model_copy(update={"sent_folder": "INBOX"})
        from email_rag.adapters.imap import ImapSentFolder

        configured = ImapSentFolder(override, 10)
        assert not configured.contains(message_id) and configured.folder == "INBOX"
        configured.close()
    finally:
        svc.close()


def test_one_mail_under_two_gmail_labels_is_ingested_once(settings, db, dovecot, pki):
    """Gmail shows a labelled mail in every label's folder; polling two of them must not
    store it twice."""
    support = mailbox(dovecot, pki, "support", 9, "starttls").model_copy(
        update={"folders": ["INBOX", "Labels/Work"]})
    raw = (b"Message-ID: <labelled-1@customer.example>\r\nFrom: alice@customer.example\r\n"
           b"To: support@example.com\r\nSubject: Labelled\r\n\r\nHello.\r\n")
    with ImapMailbox(support, 10) as imap:
        imap.create_folder("Labels/Work")
        imap.append("INBOX", raw)
        imap.append("Labels/Work", raw)
    svc = services_for(settings, support)
    try:
        result = svc.poller().poll().mailboxes[0]
    finally:
        svc.close()
    assert result.status == "ok"
    rows = db.fetchall("SELECT message_id, folder FROM emails")
    assert [r["message_id"] for r in rows] == ["<labelled-1@customer.example>"]
    assert result.total("duplicate") == 1
