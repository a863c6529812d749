"""What of an erased mail's audit detail stays readable (``redact.erase_personal``)."""

from __future__ import annotations

from email_rag.core.redact import ERASED, erase_personal


def test_texts_that_may_quote_the_mail_are_erased_and_the_facts_stay():
    detail = {"step": "draft", "job_id": 7, "attempt": 2, "size": 1200, "flagged": True,
              "reason": "From names 2 sender addresses (a@x.example, b@y.example)",
              "error": "SMTP 550 <a@x.example> rejected", "filename": "Alice ID.pdf",
              "message_id": "<1@x.example>", "to": "user:anna", "from": None,
              "changes": {"category": ["billing", "technical"], "summary": ["a", "b"]},
              "stores": {"vectors": "ok"}, "flags": ["mentions Alice"]}
    erased = erase_personal(detail)
    assert erased == {"step": "draft", "job_id": 7, "attempt": 2, "size": 1200, "flagged": True,
                      "reason": ERASED, "error": ERASED, "filename": ERASED,
                      "message_id": ERASED, "to": "user:anna", "from": None,
                      "changes": {"category": ["billing", "technical"],
                                  "summary": [ERASED, ERASED]},
                      "stores": {"vectors": "ok"}, "flags": [ERASED]}
    assert erase_personal(erased) == erased  # idempotent: a re-run changes nothing


def test_a_customer_text_that_looks_like_a_staff_name_is_erased():
    assert erase_personal({"note": "user: alice@x.example"}) == {"note": ERASED}
    assert erase_personal({"note": "user:alice@x.example"}) == {"note": ERASED}
    assert erase_personal("plain text detail") == ERASED
