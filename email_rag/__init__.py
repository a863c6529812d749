"""email-rag: support mailbox processing with a resilience layer."""

__version__ = "0.1.0"
