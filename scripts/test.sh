#!/usr/bin/env bash
# The test command: installs what is missing, then runs the whole suite against
# the real MariaDB and Redis on this machine. pytest's exit code passes through
# (5 = no tests collected is a failure, not a pass).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest "$@"
