"""``python -m email_rag_harness.sample_mailbox`` (``email-rag sample-mailbox`` hands over to it)."""

import sys

from email_rag.cli import main

if __name__ == "__main__":
    sys.exit(main(["sample-mailbox", *sys.argv[1:]],
                  commands=["email_rag_harness.sample_mailbox.command"]))
