"""In-memory implementations of the ports in email_rag/core/ports.py, for unit tests of the
decision logic (stores, review, console). Not shipped with the product."""
