"""``python -m email_rag_harness.chaos``: the chaos run (``email-rag chaos`` hands over to it)."""

import sys

from .command import main

if __name__ == "__main__":
    sys.exit(main())
