"""``email-rag sample-mailbox`` (``python -m email_rag_harness.sample_mailbox``): a private
Dovecot with sample support mails, for trying ``poll`` (test credentials only)."""
