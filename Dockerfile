# One image for every email-rag process (worker, scheduler, web, CLI).
FROM python:3.11-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libmariadb-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY email_rag ./email_rag
RUN pip install --no-cache-dir .
# What MariaDB may not have yet lives on the volume (the send journal: the relay's 250 before
# MariaDB records it; the OAuth journal: a rotated refresh token; the audit spool), and the
# worker, scheduler, idle and poll refuse to start when it does not (runtime/persistence.py)
ENV EMAIL_RAG_PERSISTENT_DIR=/var/lib/email-rag \
    EMAIL_RAG_SEND_JOURNAL_DIR=/var/lib/email-rag/send-journal \
    EMAIL_RAG_OAUTH_JOURNAL_DIR=/var/lib/email-rag/oauth-journal \
    EMAIL_RAG_AUDIT_SPOOL_PATH=/var/lib/email-rag/audit-spool.jsonl
VOLUME /var/lib/email-rag
ENTRYPOINT ["email-rag"]
CMD ["status"]
