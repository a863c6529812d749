"""A real small local model behind an OpenAI-compatible server (optional).

Start one (see docs/llm-endpoints.md), then e.g.::

    EMAIL_RAG_TEST_LOCAL_LLM_URL=http://127.0.0.1:8091/v1 pytest -m optional tests/integration/test_local_llm.py

Optional: EMAIL_RAG_TEST_LOCAL_LLM_MODEL (default "gemma"),
EMAIL_RAG_TEST_LOCAL_LLM_FORMAT (default "json_object": llama-cpp-python's server
refuses "json_schema"), EMAIL_RAG_TEST_LOCAL_LLM_TIMEOUT (default 30 s).
The model's answers are poor (Gemma 3 270M base): the test proves the real
path (HTTP, JSON mode with a schema, real latency), not the quality: every
answer must be valid or handled by the policy.
"""

from __future__ import annotations

import os

import pytest

from email_rag.adapters.llm import LLMClient
from email_rag.classification.values import Classification
from email_rag.llm.policy import PolicyLimits, TaskOutcome
from tests.llm_support import BILLING, INJECTION, NEWSLETTER, attempts, classify

# read at import: the autouse fixture clears EMAIL_RAG_* variables before each test
URL = os.environ.get("EMAIL_RAG_TEST_LOCAL_LLM_URL", "")
MODEL = os.environ.get("EMAIL_RAG_TEST_LOCAL_LLM_MODEL", "gemma")
FORMAT = os.environ.get("EMAIL_RAG_TEST_LOCAL_LLM_FORMAT", "json_object")
TIMEOUT = float(os.environ.get("EMAIL_RAG_TEST_LOCAL_LLM_TIMEOUT", "30"))

MAILS = [
    BILLING,
    NEWSLETTER,
    INJECTION,
    ("Login error", "Hello, I cannot log in since yesterday, the app shows error 500. Please help."),
    ("Ma commande", "Bonjour, je n'ai pas reçu ma commande 8812. Merci de vérifier la livraison."),
    ("Pedido", "Hola, mi pedido 42 llegó roto. ¿Pueden enviarme uno nuevo? Gracias."),
]

pytestmark = [
    pytest.mark.optional,
    pytest.mark.skipif(not URL, reason="no local model: set EMAIL_RAG_TEST_LOCAL_LLM_URL to an "
                       "OpenAI-compatible endpoint (docs/llm-endpoints.md)"),
]


@pytest.mark.parametrize("mail", MAILS, ids=[m[0] for m in MAILS])
def test_local_model_answers_are_valid_or_handled_by_the_policy(mail):
    llm = LLMClient(URL, "not-needed", MODEL, TIMEOUT, FORMAT)
    try:
        r = classify(llm, mail, limits=PolicyLimits(rate_limit_retries=1, max_retry_after=5))
    finally:
        llm.close()
    assert r.outcome in (TaskOutcome.OK, TaskOutcome.DEFAULTED, TaskOutcome.MANUAL)
    if r.outcome is not TaskOutcome.MANUAL:
        Classification.model_validate(r.value.model_dump())
    steps = attempts(r)
    assert 1 <= len(steps) <= 2 and all(e.detail["duration_ms"] > 0 for e in r.events
                                        if e.event == "llm_attempt")
    print(f"{mail[0]!r}: {r.outcome} {steps} {r.value}")
