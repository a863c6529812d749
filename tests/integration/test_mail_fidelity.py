"""Mail fidelity through the real path: APPEND to Dovecot -> the poller -> the job runner
with the real pipeline (scripted LLM over HTTP, local Qdrant) -> the stored rows.

Each test is a defect of issue 15 ("Mail fidelity"); each failed on the code before it.
"""

from __future__ import annotations

import json
from email.message import EmailMessage

import pytest
from email_rag_harness.testing import documents

from tests.integration.realpath import RealPath, head, llm, path  # noqa: F401 (fixtures)


# --- charsets ---
def test_latin1_label_on_windows_1252_text_decodes_as_windows_1252(path):
    """GIVEN a part labelled iso-8859-1 whose bytes are windows-1252 (curly quotes, euro)
    WHEN it goes through the real path THEN the text has the quotes and the euro sign and
    no C1 control characters (what mail clients show)."""
    body = "Das \u201cAngebot\u201d f\u00fcr 20\u20ac bitte pr\u00fcfen, Rechnung 4711.\r\n"
    [row] = path.run(head("cp1252", "text/plain; charset=iso-8859-1") + body.encode("cp1252"))
    assert "Das \u201cAngebot\u201d f\u00fcr 20\u20ac" in row["body_text"]
    assert not any("\x80" <= c <= "\x9f" for c in row["body_text"])
    assert row["parse_status"] == "ok" and row["status"] == "draft_ready"


def test_one_invalid_byte_in_a_utf8_part_is_replaced_not_the_whole_part(path):
    """GIVEN a UTF-8 part with German and Cyrillic text and one invalid byte
    THEN the text stays UTF-8 (U+FFFD for the byte), parse status partial with the reason."""
    body = "Gr\u00fc\u00dfe aus K\u00f6ln, \u041f\u0440\u0438\u0432\u0435\u0442! ".encode() + \
        b"\xff" + b" Rechnung 4711.\r\n"
    [row] = path.run(head("badutf8") + body)
    assert "Gr\u00fc\u00dfe aus K\u00f6ln, \u041f\u0440\u0438\u0432\u0435\u0442! \ufffd" in row["body_text"]
    assert row["parse_status"] == "partial"
    assert "utf-8" in row["parse_error"] and "1 byte" in row["parse_error"]


@pytest.mark.parametrize(("label", "text", "codec"), [
    ("gb2312", "\u8bf7\u67e5\u6536\u53d1\u7968 \u9555", "gbk"),       # 镕: GBK, not GB2312
    ("ks_c_5601-1987", "\uc548\ub155\ud558\uc138\uc694 \ub620", "cp949"),  # 똠: cp949 only
    ("shift_jis", "\u8acb\u6c42\u66f8 \u2460\u2461", "cp932"),          # ①②: cp932 only
])
def test_legacy_labels_are_decoded_with_their_superset_codec(path, label, text, codec):
    [row] = path.run(head(f"cjk-{codec}", f"text/plain; charset={label}")
                     + (text + " invoice\r\n").encode(codec))
    assert text in row["body_text"]
    assert row["parse_status"] == "ok", row["parse_error"]


def test_encoded_words_in_addresses_and_attachment_names_are_decoded(path):
    """GIVEN an encoded-word display name containing a comma, and attachments named with raw
    UTF-8 bytes and with RFC 2231 THEN the name and both file names are decoded."""
    mail = (
        b"From: =?utf-8?q?Dubois,_Chlo=C3=A9?= <chloe@example.org>\r\n"
        b"To: =?utf-8?q?B=C3=BCro?= <support@example.com>\r\nSubject: Rechnung 12\r\n"
        b"Message-ID: <ew@example.org>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n'
        b"--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nRechnung anbei.\r\n"
        b"--b1\r\nContent-Type: application/octet-stream\r\n"
        b'Content-Disposition: attachment; filename="\xc3\x9cbersicht.bin"\r\n\r\nxx\r\n'
        b"--b1\r\nContent-Type: application/octet-stream\r\n"
        b"Content-Disposition: attachment; filename*=UTF-8''Gr%C3%B6%C3%9Fe.bin\r\n\r\nyy\r\n"
        b"--b1--\r\n")
    [row] = path.run(mail)
    assert (row["from_name"], row["from_addr"]) == ("Dubois, Chlo\u00e9", "chloe@example.org")
    names = [a["filename"] for a in json.loads(row["attachments"])]
    assert names == ["\u00dcbersicht.bin", "Gr\u00f6\u00dfe.bin"]


def test_invalid_base64_body_is_partial_with_a_reason(path):
    body = b"SGFsbG8sIGRpZSBSZWNobnVuZyA0NzExIGlzdCBmYWxzY2gu!!!*** broken\r\nnot=base64\r\n"
    [row] = path.run(head("b64", cte="base64") + body)
    assert row["parse_status"] == "partial" and "base64" in row["parse_error"]
    assert "Hallo, die Rechnung 4711 ist falsch." in row["body_text"]


def test_invalid_quoted_printable_is_partial_with_a_reason(path):
    body = b"Die Rechnung 4711 ist =ZZ falsch, Betrag 20=E2=82=AC.\r\n"
    [row] = path.run(head("qp", cte="quoted-printable") + body)
    assert row["parse_status"] == "partial" and "quoted-printable" in row["parse_error"]
    assert "20\u20ac" in row["body_text"]


# --- addresses ---
def test_an_address_in_the_display_name_is_never_the_address(path):
    """GIVEN From: alice@example.com <bob@example.com> THEN the sender is bob, the reply
    goes to bob (the draft and the approval say so), never to alice."""
    [row] = path.run(head("disp", sender="alice@example.com <bob@example.com>"))
    assert row["from_addr"] == "bob@example.com"
    assert row["reply_addr"] == "bob@example.com" and row["status"] == "draft_ready"


def test_two_from_addresses_get_no_draft_and_wait_for_a_human(path):
    [row] = path.run(head("twofrom", sender="anna@example.org, ben@example.org"))
    assert row["status"] == "manual" and path.drafts(row["id"]) == []
    assert "2 sender addresses" in row["status_reason"]
    assert row["reply_addr"] is None


def test_reply_goes_to_a_plausible_reply_to_and_the_rule_is_stored(path):
    """GIVEN a web-form mail (From a no-reply sender, Reply-To the customer)
    THEN the reply address is the customer's and the rule says why."""
    [row] = path.run(head("form", sender="Webformular <noreply@shop.example>",
                          extra="Reply-To: Carla Kunde <carla@example.org>\r\n"))
    assert row["reply_addr"] == "carla@example.org"
    assert "Reply-To" in row["reply_rule"]
    assert row["status"] == "draft_ready"


# --- duplicates ---
def test_a_different_mail_reusing_a_message_id_is_kept_for_a_human(path):
    """GIVEN two different mails with the same Message-ID (a sender with constant ids) and a
    redelivery of the first THEN both mails are stored, the second waits for a human with
    the reason, and the redelivery is a duplicate."""
    first = head("same") + b"Rechnung 1 ist falsch.\r\n"
    second = head("same") + b"Rechnung 2 ist auch falsch.\r\n"
    rows = path.run(first, second, first)
    assert len(rows) == 2
    assert rows[0]["status"] == "draft_ready"
    assert rows[1]["status"] == "manual" and "Message-ID" in rows[1]["status_reason"]
    assert f"#{rows[0]['id']}" in rows[1]["status_reason"]
    assert "Rechnung 2" in bytes(rows[1]["raw"]).decode()


# --- bounded work ---
def many_parts(n: int) -> bytes:
    parts = b"".join(b"--p\r\nContent-Type: application/x-part\r\n\r\n%d\r\n" % i
                     for i in range(n))
    return head("parts", 'multipart/mixed; boundary="p"', cte="7bit") + parts + b"--p--\r\n"


def test_classify_and_draft_never_reparse_raw_mime(path, llm):
    """GIVEN a mail of thousands of tiny non-text parts (no text part)
    THEN the parse step stops at the part limit (partial, with the reason) and the LLM gets
    the parse result - never raw MIME headers or the undecoded body."""
    [row] = path.run(many_parts(3000))
    assert row["parse_status"] == "partial" and "parts" in row["parse_error"]
    for text in path.llm_inputs("classify") + path.llm_inputs("draft"):
        assert "Content-Type" not in text and "--p" not in text


# --- attachments as content ---
def attachment_mail() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Kunde <kunde@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Unterlagen"
    msg["Message-ID"] = "<attach@example.org>"
    msg.set_content("Siehe Anhang.\n")
    inner = EmailMessage()
    inner["From"] = "Lieferant <l@example.net>"
    inner["Subject"] = "Lieferschein 88"
    inner.set_content("Der Lieferschein 88 fehlt im Paket.\n")
    msg.add_attachment(inner)
    msg.add_attachment(documents.pdf(["Rechnung 4711", "Betrag 99,00 EUR doppelt abgebucht"]),
                       maintype="application", subtype="pdf", filename="rechnung.pdf")
    msg.add_attachment(documents.docx(["Bestellung 555: Lieferadresse bitte aendern"]),
                       maintype="application",
                       subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                       filename="brief.docx")
    msg.add_attachment("Artikel;Menge\nSchraube;12\n", subtype="csv", filename="liste.csv")
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


def test_attachments_are_content_marked_untrusted_for_the_llm_and_the_index(path, llm):
    [row] = path.run(attachment_mail())
    text = row["attachment_text"]
    for expected in ("Der Lieferschein 88 fehlt", "Betrag 99,00 EUR doppelt abgebucht",
                     "Lieferadresse bitte aendern", "Schraube;12"):
        assert expected in text
    [classify] = path.llm_inputs("classify")
    assert "attachment content" in classify and "Betrag 99,00 EUR" in classify
    assert row["category"] == "billing"  # only the PDF says what the mail is about
    points = path.svc.vectors.client.scroll(path.svc.settings.qdrant_collection, limit=100)[0]
    sources = {p.payload.get("source") for p in points}
    assert sources == {"body", "attachment"}


# --- the draft page: reply rule, attachments and their download, over real HTTP ---
@pytest.fixture
def web(path, tmp_path):
    """The real ``email-rag web`` on a free port, on this test's database."""
    import httpx
    from email_rag_harness.testing.dovecot import free_port

    from tests.helpers import spawn, stop, wait_for
    from tests.webutil import make_user

    make_user(path.db, "anna", "staff")
    port = free_port()
    proc = spawn("web", "--host", "127.0.0.1", "--port", str(port), log=tmp_path / "web.log",
                 env_extra={"EMAIL_RAG_WEB_SECRET_KEY": "fidelity"})
    base = f"http://127.0.0.1:{port}"

    def up():
        try:
            return httpx.get(base + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, 120, what="email-rag web")  # a subprocess starting on a busy machine
        yield base
    finally:
        stop(proc)


def test_draft_page_shows_reply_rule_and_attachments_with_a_safe_download(path, web):
    """GIVEN a web-form mail with attachments, drafted through the real path
    WHEN staff open the draft page over HTTP THEN it names the reply address and its rule and
    lists each attachment (name, type, size); a download is the exact bytes as a
    generic attachment with nosniff, never inline; without a login there is no file."""
    import hashlib

    import httpx

    from tests.webutil import login

    msg = EmailMessage()
    msg["From"] = "Webformular <noreply@shop.example>"
    msg["Reply-To"] = "Carla Kunde <carla@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Rechnung 4711 doppelt abgebucht"
    msg["Message-ID"] = "<webform@example.org>"
    msg.set_content("Bitte pruefen Sie die Rechnung im Anhang.\n")
    pdf = documents.pdf(["Rechnung 4711"])
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="rechnung.pdf")
    msg.add_attachment(b"<html><script>alert(1)</script></html>", maintype="text",
                       subtype="html", filename="<b>evil</b>.html")
    [row] = path.run(msg.as_bytes(policy=msg.policy.clone(linesep="\r\n")))
    [draft] = path.drafts(row["id"])
    anonymous = httpx.get(f"{web}/drafts/{draft['id']}/attachments/1", follow_redirects=False)
    assert anonymous.status_code in (302, 303, 401) and anonymous.content != pdf
    with httpx.Client(base_url=web) as c:
        login(c)
        page = c.get(f"/drafts/{draft['id']}").text
        assert "carla@example.org" in page and "Reply-To: the sender" in page
        assert "rechnung.pdf" in page and "application/pdf" in page
        assert "&lt;b&gt;evil&lt;/b&gt;.html" in page and "<b>evil</b>" not in page
        r = c.get(f"/drafts/{draft['id']}/attachments/1")
        assert r.status_code == 200 and r.content == pdf
        assert hashlib.sha256(r.content).hexdigest() == json.loads(row["attachments"])[0]["sha256"]
        assert r.headers["content-type"] == "application/octet-stream"
        assert r.headers["content-disposition"].startswith('attachment; filename="rechnung.pdf"')
        assert r.headers["x-content-type-options"] == "nosniff"
        evil = c.get(f"/drafts/{draft['id']}/attachments/2")
        assert evil.headers["content-type"] == "application/octet-stream"
        assert evil.headers["content-disposition"].startswith("attachment;")
        assert c.get(f"/drafts/{draft['id']}/attachments/9").status_code == 404
    assert "attachment_downloaded" in path.events(row["id"])


# --- a UID the server lists without a body ---
@pytest.fixture
def hiding(settings, mailbox, llm):
    from email_rag_harness.testing.imap_proxy import ImapHidingProxy

    from tests.integration.ingest_helpers import with_port

    with ImapHidingProxy(mailbox.host, mailbox.port) as proxy:
        via = with_port(mailbox.config, proxy.port)
        p = RealPath(settings, via, llm, missing_uid_polls=3)
        p.mailbox = mailbox  # deliveries go straight to Dovecot
        yield p, proxy
        p.close()


def mailbox_events(path, event):
    return [json.loads(r["detail"]) for r in path.db.fetchall(
        "SELECT detail FROM audit_log WHERE entity_type = 'mailbox' AND event = ? ORDER BY id",
        (event,))]


def cursor(path):
    return path.db.fetchone("SELECT last_uid FROM mailbox_cursors")["last_uid"]


def test_a_listed_uid_without_a_body_is_fetched_again_later(hiding):
    """GIVEN three mails and a server that lists UID 2 but returns no body for it (twice)
    THEN the cursor stays below UID 2, each miss is audited, and once the server returns it
    the mail is stored like any other - nothing lost."""
    path, proxy = hiding
    proxy.hide = {2}
    path.deliver(*(head(f"hiccup-{i}") + b"Rechnung %d\r\n" % i for i in (1, 2, 3)))
    for _ in range(2):
        path.poll()
        assert cursor(path) == 1
    assert [e["misses"] for e in mailbox_events(path, "uid_missing")] == [1, 2]
    assert path.db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 2
    proxy.hide = set()
    result = path.poll()
    assert result.totals["new"] == 1 and cursor(path) == 3
    [back] = path.db.fetchall("SELECT * FROM emails WHERE uid = 2")
    assert back["message_id"] == "<hiccup-2@example.org>" and back["status"] == "received"
    assert [e["uid"] for e in mailbox_events(path, "uid_recovered")] == [2]
    assert path.db.fetchone("SELECT COUNT(*) AS n FROM missing_uids")["n"] == 0


def test_a_uid_that_stays_without_a_body_becomes_a_mail_for_a_human(hiding):
    path, proxy = hiding
    proxy.hide = {1}
    path.deliver(head("never") + b"Rechnung\r\n", head("after") + b"Rechnung 2\r\n")
    for _ in range(3):
        path.poll()
    assert cursor(path) == 2
    row = path.db.fetchone("SELECT * FROM emails WHERE uid = 1")
    assert row["status"] == "manual" and "returned no body in 3 polls" in row["status_reason"]
    assert path.db.fetchone("SELECT COUNT(*) AS n FROM jobs WHERE email_id = ?",
                            (row["id"],))["n"] == 0
    assert [e["uid"] for e in mailbox_events(path, "uid_given_up")] == [1]
    assert "received" in path.events(row["id"])


# --- loop guard ---
def calendar_invite(method: str) -> bytes:
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\n"
           f"METHOD:{method}\r\nBEGIN:VEVENT\r\nUID:meet-1@example.org\r\n"
           "SUMMARY:Rechnung besprechen\r\nDTSTART:20261201T100000Z\r\nEND:VEVENT\r\n"
           "END:VCALENDAR\r\n")
    return (head(f"cal-{method}", 'multipart/alternative; boundary="c"', cte="7bit",
                  subject="Einladung: Rechnung besprechen")
            + b"--c\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nRechnung besprechen?\r\n"
            + f"--c\r\nContent-Type: text/calendar; charset=utf-8; method={method}\r\n"
              f"Content-Transfer-Encoding: base64\r\n\r\n".encode()
            + __import__("base64").encodebytes(ics.encode()).replace(b"\n", b"\r\n")
            + b"--c--\r\n")


@pytest.mark.parametrize(("name", "mail", "reason"), [
    ("out of office (Exchange, no Auto-Submitted)",
     head("oof", subject="Automatische Antwort: Rechnung 4711",
          extra="X-Auto-Response-Suppress: All\r\n") + b"Ich bin bis Montag nicht im Buero.\r\n",
     "x-auto-response-suppress:all"),
    ("mailing list", head("list", extra="List-Id: <kunden.lists.example.org>\r\n"
                                        "List-Unsubscribe: <mailto:leave@lists.example.org>\r\n")
     + b"Rechnung 4711 im Verteiler.\r\n", "mailing_list:list-id"),
    ("calendar invitation", calendar_invite("REQUEST"), "calendar:request"),
    ("calendar answer", calendar_invite("REPLY"), "calendar:reply"),
    ("calendar cancellation", calendar_invite("CANCEL"), "calendar:cancel"),
])
def test_automatic_mail_is_recorded_with_the_reason_and_gets_no_draft(path, llm, name, mail,
                                                                      reason):
    [row] = path.run(mail)
    assert (row["status"], row["auto_reason"]) == ("no_reply", reason), name
    assert path.drafts(row["id"]) == [] and path.llm_inputs("draft") == []
    assert f"loop guard: {reason}" in row["status_reason"]


def test_list_headers_may_be_switched_off_for_a_support_address_that_is_a_group(
        settings, mailbox, llm):
    p = RealPath(settings, mailbox, llm, loop_guard_list_headers=False)
    try:
        [row] = p.run(head("group", extra="List-Id: <support.groups.example.com>\r\n")
                      + b"Rechnung 4711 doppelt abgebucht.\r\n")
        assert row["auto_reason"] is None and row["status"] == "draft_ready"
    finally:
        p.close()


def test_the_approved_reply_is_sent_to_the_address_the_rule_chose(settings, mailbox, llm):
    """GIVEN a web-form mail (From noreply@, Reply-To the customer) drafted through the real
    path WHEN staff approve it and the send job runs against the SMTP relay THEN the relay
    receives one message, addressed (envelope and To) to the customer - not to the no-reply
    sender."""
    from email import message_from_bytes

    from email_rag_harness.testing.smtp_server import FaultSmtpServer

    from email_rag.sending import review
    from tests.helpers import run_job

    with FaultSmtpServer() as relay:
        path = RealPath(settings, mailbox, llm, smtp_port=relay.port, smtp_timeout=3.0,
                        reconcile_sent_folder=False)
        try:
            [row] = path.run(head("send-form", sender="Webformular <noreply@shop.example>",
                                  extra="Reply-To: Carla Kunde <carla@example.org>\r\n"))
            [draft] = path.drafts(row["id"])
            result = review.approve(path.svc, draft["id"], "anna")
            assert run_job(path.runner, result.job_id) == "done"
            [got] = relay.received
            assert got.rcpt_tos == ["carla@example.org"]
            assert "carla@example.org" in message_from_bytes(got.data)["To"]
            assert path.mail(row["id"])["status"] == "sent"
        finally:
            path.close()
