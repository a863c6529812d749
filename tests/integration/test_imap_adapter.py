"""The IMAP adapter against the private Dovecot: batches, PEEK, APPEND, SEARCH, errors."""

import pytest
from email_rag_harness.testing.mails import mail
from pydantic import SecretStr

from email_rag.adapters.imap import ImapMailbox, sent_folder
from email_rag.core.errors import ImapAuthError, ImapError
from tests.integration.ingest_helpers import closed_port, silent_server, with_port


def test_fetch_is_batched_by_count_and_bytes_and_does_not_mark_seen(mailbox):
    mailbox.deliver([mail(i, size=3000) for i in range(25)])
    with mailbox.imap() as imap:
        batches = list(imap.fetch_new("INBOX", 0, batch_size=10))
        assert [len(b.mails) for b in batches] == [10, 10, 5]
        assert [b.last_uid for b in batches] == [10, 20, 25]
        assert all(m.size == len(m.raw) and not m.headers_only for b in batches for m in b.mails)
        by_bytes = list(imap.fetch_new("INBOX", 0, batch_size=10, batch_bytes=7000))
        assert max(b.nbytes for b in by_bytes) <= 7000 and sum(len(b.mails) for b in by_bytes) == 25
        assert by_bytes[-1].last_uid == 25
        assert list(imap.fetch_new("INBOX", 25)) == []
        assert [m.uid for b in imap.fetch_new("INBOX", 20) for m in b.mails] == [21, 22, 23, 24, 25]
        assert imap.uids_where("INBOX", "SEEN") == []  # BODY.PEEK[] leaves \\Seen alone


def test_mails_above_the_limit_are_fetched_headers_only(mailbox):
    mailbox.deliver([mail(1), mail(2, size=50_000), mail(3)])
    with mailbox.imap() as imap:
        [batch] = list(imap.fetch_new("INBOX", 0, max_mail_bytes=20_000))
    small1, big, small3 = batch.mails
    assert not small1.headers_only and not small3.headers_only
    assert big.headers_only and big.size > 50_000 and len(big.raw) < 1000
    assert big.raw.endswith(b"\r\n\r\n") and b"Subject: Anfrage 2" in big.raw


def test_append_and_search_by_message_id_for_send_reconciliation(mailbox):
    with mailbox.imap() as imap:
        imap.create_folder("Sent")
        uid = imap.append("Sent", mail(7, message_id="<reply-7@email-rag.invalid>"))
        assert uid == 1
        assert imap.find_message_id("Sent", "<reply-7@email-rag.invalid>") == [1]
        assert imap.find_message_id("Sent", "<reply-8@email-rag.invalid>") == []


def test_sent_folder_as_the_sending_side_uses_it(mailbox):
    folder = sent_folder(mailbox.config, timeout=5)
    assert folder.contains("<r1@email-rag.invalid>") is False  # no Sent folder yet
    folder.append(mail(1, message_id="<r1@email-rag.invalid>"))
    assert folder.contains("<r1@email-rag.invalid>") is True
    with mailbox.imap() as imap:
        assert imap.uids_where("Sent", "SEEN") == [1]


def test_connection_refused_is_an_imap_error(mailbox):
    with pytest.raises(ImapError, match="connect") as e:
        ImapMailbox(with_port(mailbox.config, closed_port()), timeout=2).connect()
    assert not isinstance(e.value, ImapAuthError)


def test_wrong_password_is_an_auth_error_without_the_password(mailbox):
    bad = mailbox.config.model_copy(update={"password": SecretStr("wrong-Secret-123")})
    with pytest.raises(ImapAuthError) as e:
        ImapMailbox(bad, timeout=5).connect()
    assert "wrong-Secret-123" not in str(e.value) and mailbox.username in str(e.value)


def test_silent_server_times_out_quickly(mailbox):
    with silent_server() as port, pytest.raises(ImapError, match="timed out"):
        ImapMailbox(with_port(mailbox.config, port), timeout=0.3).connect()


def test_missing_folder_is_an_imap_error(mailbox):
    with mailbox.imap() as imap, pytest.raises(ImapError, match="Nope"):
        imap.select("Nope")
