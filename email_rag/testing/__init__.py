"""Test doubles that ship with email-rag (for tests, the chaos harness and offline use).

``llm_server``: a SCRIPTED OpenAI-compatible HTTP server (deterministic rules,
fault plan). It is not a language model.
"""
