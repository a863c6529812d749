"""``python -m email_rag_harness.demo``: the demo (``email-rag demo`` hands over to it)."""

import sys

from email_rag.cli import main

if __name__ == "__main__":
    sys.exit(main(["demo", *sys.argv[1:]], commands=["email_rag_harness.demo.command"]))
