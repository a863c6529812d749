"""The draft prompt: the team's approved replies are the primary material (first, kept
longest when the context is short), the model is asked for the body only, in the customer's
form of address, and the claim check's evidence is this customer's material plus our
replies."""

from __future__ import annotations

from email_rag.pipeline.draft import draft_task, evidence, primary_first

APPROVED = {
    "subject": "Parcel late",
    "snippet": "where is my parcel",
    "score": 0.71,
    "reply": {"draft_id": 7, "text": "We asked the carrier; it takes 2 business days."},
}
OTHER = {
    "subject": "Parcel lost",
    "snippet": "parcel lost",
    "score": 0.93,
    "reply": "Found in the Sent folder: we sent a new parcel.",
    "approved": False,
}


def test_approved_replies_come_first_whatever_their_score():
    assert primary_first([OTHER, APPROVED]) == [APPROVED, OTHER]
    task = draft_task("Paket", "a@b.c", "Wo ist mein Paket?", "de", [OTHER, APPROVED], [])
    user = task.messages(None)[1]["content"]
    first = user.index("[approved reply of our team to a similar mail")
    assert first < user.index("[past case") and user.index("2 business days") < user.index(
        "new parcel"
    )


def test_our_reply_from_the_sent_folder_counts_as_the_teams_reply():
    """The history import links an answered mail to the reply the team sent (its Sent
    folder row): that is a reply staff wrote and sent, primary material like a draft."""
    sent = {**APPROVED, "reply": {"draft_id": None, "email_id": 42, "text": "Sent by us."}}
    assert primary_first([OTHER, sent]) == [sent, OTHER]


def test_a_short_context_drops_the_other_sources_before_the_approved_reply():
    long_other = {**OTHER, "snippet": "x " * 600, "reply": "y " * 600}
    task = draft_task(
        "Paket", "a@b.c", "Wo ist mein Paket?", "de", [APPROVED, long_other], [], context=2300
    )
    assert task.trimmed.get("references_dropped") == 1
    assert "2 business days" in task.messages(None)[1]["content"]


def test_the_model_is_asked_for_the_body_in_the_customers_form_of_address():
    formal = draft_task("Rechnung", "a@b.c", "Können Sie mir bitte helfen?", "de", [], [])
    system = formal.messages(None)[0]["content"]
    assert "Write only the body" in system and 'Address the sender with "Sie"' in system
    informal = draft_task("Factura", "a@b.c", "Hola, ¿puedes ayudarme?", "es", [], [])
    assert 'Address the sender with "tú"' in informal.messages(None)[0]["content"]
    english = draft_task("Invoice", "a@b.c", "Can you help?", "en", [], [])
    assert "Address the sender" not in english.messages(None)[0]["content"]


def test_the_parsed_draft_has_the_greeting_and_sign_off_of_the_frame():
    task = draft_task("Rechnung", "Maria Schmidt <m@b.c>", "Können Sie das prüfen?", "de", [], [])
    draft = task.parse("Hello [Name],\n\nwir prüfen das und melden uns.\n\nBest,\n[Your Name]")
    assert draft == (
        "Guten Tag Maria Schmidt,\n\nwir prüfen das und melden uns.\n\n"
        "Mit freundlichen Grüßen\nIhr Support-Team"
    )


def test_the_claim_evidence_is_this_customers_material_and_our_replies():
    thread = [{"subject": "Refund", "snippet": "please refund", "sent_reply": "Refunded 20 €."}]
    own, shared = evidence("Invoice 2026-318", "body", thread, [{"subject": "Order 5521"}],
                           [APPROVED, OTHER])
    assert "Refunded 20 €." in own and "Order 5521" in own and "2026-318" in own
    assert "2 business days" in shared and "where is my parcel" not in shared


def test_the_opening_is_written_for_the_model_unless_an_approved_reply_leads():
    """Without the team's approved reply to a similar mail the body starts with our opening
    in the mail's language and register; with one, the model starts from its facts; in a
    language the frame does not know, nothing is written for it."""
    german = "Guten Tag, können Sie bitte prüfen, wo mein Paket ist?"
    assert draft_task("Paket", "a@b.c", german, "de", [OTHER], []).prefill == \
        "Vielen Dank für Ihre Nachricht. Unser Team"
    assert draft_task("Paket", "a@b.c", german, "de", [OTHER, APPROVED], []).prefill is None
    assert draft_task("Paket", "a@b.c", "Hej, var är mitt paket?", "other", [], []).prefill \
        is None
