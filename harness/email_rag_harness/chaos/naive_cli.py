"""``python -m email_rag_harness.chaos.naive_cli COMMAND ...``: the ``email-rag`` command line with
the counter-check's services (``NaiveServices``, harness/email_rag_harness/chaos/naive.py).

The chaos harness starts the naive column's processes (workers, scheduler, IDLE
watcher, admin CLI calls) through this module; nothing in the product reads a switch.
"""

from __future__ import annotations

import sys

from email_rag.cli import main

from .naive import NaiveServices

if __name__ == "__main__":
    sys.exit(main(services_class=NaiveServices))
