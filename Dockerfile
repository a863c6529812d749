# One image for every email-rag process (worker, scheduler, web, CLI).
FROM python:3.11-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libmariadb-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY email_rag ./email_rag
RUN pip install --no-cache-dir .
ENV EMAIL_RAG_AUDIT_SPOOL_PATH=/var/lib/email-rag/audit-spool.jsonl
VOLUME /var/lib/email-rag
ENTRYPOINT ["email-rag"]
CMD ["status"]
