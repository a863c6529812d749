"""``COUNTER_CHECK=COLUMN python -m email_rag_harness.chaos.counter_cli COMMAND ...``: the
``email-rag`` command line with one counter-check column's services
(harness/email_rag_harness/chaos/counter.py); the chaos harness starts that column's
processes through it."""

from __future__ import annotations

import os
import sys

from email_rag.cli import main

from .counter import VARIABLE, services_class

if __name__ == "__main__":
    sys.exit(main(services_class=services_class(os.environ.get(VARIABLE, ""))))
