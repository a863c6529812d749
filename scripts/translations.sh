#!/usr/bin/env bash
# Extract the web UI's marked texts (email_rag/web/babel.cfg) and merge them into the German
# catalog (email_rag/web/locale/de/LC_MESSAGES/messages.po); lists the texts to translate.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" - <<'PY'
from email_rag.web import i18n
todo = i18n.update()
print(i18n.catalog_path("de"), len(todo), "text(s) to translate")
for msgid in todo:
    print("  " + msgid)
PY
