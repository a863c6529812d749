#!/usr/bin/env bash
# The main job, end to end on this machine with the local defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/email-rag demo "$@"
