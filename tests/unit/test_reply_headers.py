"""The headers of our outgoing reply: the customer's Subject goes out without the bidi
controls that would make it read differently from what staff saw."""

from __future__ import annotations

import pytest

from email_rag.sending.compose import build_reply, reply_subject

CONTROLS = ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
            "\u2069")


@pytest.mark.parametrize("subject, expected", [
    ("Rechnung\u202efdp.exe", "Re: Rechnungfdp.exe"),
    ("\u202eTXT.exe Auftrag 77", "Re: TXT.exe Auftrag 77"),
    ("Re: \u2067Bestellung\u2069 12", "Re: Bestellung 12"),
    ("\u202eRe: x", "Re: x"),  # no "Re: Re:" once the control is gone
    ("שלום \u200fעולם", "Re: שלום \u200fעולם"),  # right-to-left text and marks are kept
])
def test_reply_subject_drops_bidi_overrides_embeddings_and_isolates(subject, expected):
    assert reply_subject(subject) == expected


def test_the_outgoing_message_carries_no_bidi_control_in_its_subject():
    msg = build_reply(message_id="<r1@support.example>", from_addr="support@example.com",
                      from_name="Support", to_addr="alice@customer.example",
                      subject="Rechnung\u202efdp.exe", body="Hallo", in_reply_to=None,
                      original_references=None, draft_id=1)
    assert str(msg["Subject"]) == "Re: Rechnungfdp.exe"
    assert not any(c in msg.as_string() for c in CONTROLS)
