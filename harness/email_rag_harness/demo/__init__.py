"""``email-rag demo`` (``python -m email_rag_harness.demo``): the main job end to end on
this machine, with a private Dovecot, the local SMTP relay and the local model (or the
scripted LLM double with ``--scripted``); the run itself is email_rag_harness.testing.demo."""
