"""The Sent folder keeps one IMAP connection between calls (real Dovecot).

Failure table of the kept connection:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| connection still good | - | yes | NOOP, then the command on it |
| connection died between calls (server timeout, restart) | NOOP fails: a new connection, once | yes: nothing was sent on the dead one | the command runs on the new connection |
| error during a command | no (an APPEND must not be repeated blindly) | the caller decides (copy: audited best effort; reconcile: job retry) | the next call opens a new connection |
"""

from __future__ import annotations

import pytest
from email_rag_harness.testing.mails import mail

from email_rag.adapters.imap import sent_folder
from email_rag.core.errors import ImapError


def test_one_connection_serves_many_calls_and_a_dead_one_is_replaced(mailbox):
    """GIVEN the Sent folder of a real mailbox WHEN replies are looked up and filed one after
    another THEN one connection serves them all; WHEN that connection died in between THEN
    the next call opens a new one and answers correctly."""
    folder = sent_folder(mailbox.config, timeout=5)
    try:
        assert folder.contains("<r1@email-rag.invalid>") is False  # no Sent folder yet
        first = folder._imap
        folder.append(mail(1, message_id="<r1@email-rag.invalid>"))
        assert folder.contains("<r1@email-rag.invalid>") is True
        folder.append(mail(2, message_id="<r2@email-rag.invalid>"))
        assert folder._imap is first  # the same connection all along

        first._client.shutdown()  # the server side went away between two calls
        assert folder.contains("<r2@email-rag.invalid>") is True
        assert folder._imap is not first
        with mailbox.imap() as imap:
            assert imap.find_message_id("Sent", "<r1@email-rag.invalid>") == [1]
            assert imap.find_message_id("Sent", "<r2@email-rag.invalid>") == [2]
    finally:
        folder.close()


def test_an_error_during_a_command_is_raised_not_repeated(mailbox):
    """GIVEN a kept connection WHEN a command fails on it THEN the error is raised (nothing
    is repeated) and the connection is dropped, so the next call starts clean."""
    folder = sent_folder(mailbox.config, timeout=5)
    try:
        folder.append(mail(1, message_id="<r1@email-rag.invalid>"))
        with mailbox.imap() as imap:  # someone removes the folder behind our back
            imap.delete_folder("Sent")
        with pytest.raises(ImapError):
            folder.append(mail(2, message_id="<r2@email-rag.invalid>"))
        assert folder._imap is None
        assert folder.contains("<r2@email-rag.invalid>") is False  # folder gone: holds nothing
        folder.append(mail(3, message_id="<r3@email-rag.invalid>"))  # re-created
        assert folder.contains("<r3@email-rag.invalid>") is True
    finally:
        folder.close()
