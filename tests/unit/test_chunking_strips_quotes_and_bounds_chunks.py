"""Mail text for embedding: quoted history and signatures stripped, bounded chunks."""

from email_rag.indexing.chunking import MAX_CHUNKS, clean_body, mail_chunks, split_text


def test_english_reply_header_and_quoted_lines_are_stripped():
    body = ("The invoice 4711 is still wrong.\n\n"
            "On Mon, 3 Mar 2025 at 10:00, Support <support@example.com> wrote:\n"
            "> We corrected the invoice.\n> Regards")
    assert clean_body(body) == "The invoice 4711 is still wrong."


def test_reply_header_split_over_two_lines_is_stripped():
    body = ("Still broken.\n"
            "On Mon, 3 Mar 2025 at 10:00, Support Team <support@example.com>\n"
            "wrote:\n> old text")
    assert clean_body(body) == "Still broken."


def test_german_reply_header_is_stripped():
    body = ("Der Drucker druckt weiterhin nicht.\n\n"
            "Am 03.03.2025 um 10:00 schrieb Support <support@example.com>:\n"
            "> Bitte starten Sie ihn neu.")
    assert clean_body(body) == "Der Drucker druckt weiterhin nicht."


def test_outlook_original_message_and_von_block_are_stripped():
    original = ("Bitte um Rückruf.\n\n-----Original Message-----\nFrom: a@b.example\n"
                "Sent: Monday\nSubject: old\n\nold text")
    assert clean_body(original) == "Bitte um Rückruf."
    german = ("Danke, das hat geholfen.\n\n________________________________\n"
              "Von: Support <support@example.com>\nGesendet: Montag, 3. März 2025 10:00\n"
              "An: Kunde\nBetreff: AW: Drucker\n\nAlter Text")
    assert clean_body(german) == "Danke, das hat geholfen."
    assert "Alter Text" not in clean_body(
        "Hallo,\n-----Ursprüngliche Nachricht-----\nAlter Text")


def test_signature_delimiter_and_closing_are_stripped():
    body = "My login fails since today.\n\n-- \nAlice Example\nACME Corp\n+49 123"
    assert clean_body(body) == "My login fails since today."
    body = ("Mein Login klappt seit heute nicht.\n\nMit freundlichen Grüßen\n"
            "Alice Beispiel\nACME GmbH")
    assert clean_body(body) == "Mein Login klappt seit heute nicht."
    body = "Please reset my password.\n\nBest regards,\nBob"
    assert clean_body(body) == "Please reset my password."


def test_closing_words_inside_the_text_are_kept():
    lines = ["Thanks", "for nothing: the problem is back."] + [f"detail line {i}" for i in range(10)]
    assert clean_body("\n".join(lines)).startswith("Thanks\nfor nothing")


def test_a_bare_forward_keeps_its_unquoted_text():
    body = "> Customer wrote that the app crashes on start.\n> Version 2.1"
    assert clean_body(body) == "Customer wrote that the app crashes on start.\nVersion 2.1"


def test_empty_body_gives_empty_text():
    assert clean_body(None) == "" and clean_body("") == ""


def test_split_text_bounds_size_keeps_overlap_and_loses_no_word():
    words = [f"word{i}" for i in range(600)]
    text = " ".join(words)
    chunks = split_text(text, 300, 60)
    assert all(len(c) <= 300 for c in chunks)
    assert len(chunks) > 10
    joined = " ".join(chunks)
    assert all(w in joined for w in words)
    # neighbours share text (the overlap)
    assert all(set(a.split()[-3:]) & set(b.split()) for a, b in zip(chunks, chunks[1:], strict=False))


def test_split_text_prefers_paragraph_boundaries():
    text = ("A" * 150 + ". " + "first paragraph end.\n\n") + "B" * 200
    chunks = split_text(text, 250, 0)
    assert chunks[0].endswith("first paragraph end.")


def test_mail_chunks_start_with_the_subject_and_say_when_cut():
    chunks, cut = mail_chunks("Printer broken", "It does not print.\n\n-- \nAlice")
    assert chunks == ["Printer broken\n\nIt does not print."] and not cut
    many, cut = mail_chunks("S", " ".join(f"w{i}" for i in range(40000)), 300, 0)
    assert cut and len(many) == MAX_CHUNKS
    assert all(c.startswith("S\n\n") for c in many)
    assert mail_chunks("Only a subject", None) == (["Only a subject"], False)
    assert mail_chunks(None, None) == ([], False)
