"""The poll loop outlives a failed cycle and stops on request (loop control only)."""

import threading
from types import SimpleNamespace

from email_rag.cli import poll
from email_rag.core.errors import DatabaseUnavailableError
from email_rag.ingest.poller import FolderResult, MailboxResult, PollResult


class ScriptedPoller:
    """First cycle: MariaDB is down; second: one new mail, then stop is requested."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop, self.calls = stop, 0

    def poll(self, names, force=False):
        self.calls += 1
        if self.calls == 1:
            raise DatabaseUnavailableError("MariaDB error 2003: cannot connect")
        self.stop.set()
        return PollResult([MailboxResult("support", folders=[FolderResult("INBOX", new=1)])])


def test_a_failed_cycle_does_not_end_the_loop():
    stop = threading.Event()
    poller = ScriptedPoller(stop)
    svc = SimpleNamespace(settings=SimpleNamespace(poll_interval_seconds=0))
    outcome = poll._loop(poller, SimpleNamespace(mailbox=None, force=False), svc, stop)
    assert poller.calls == 2
    assert outcome.exit_code == 0 and outcome.data["cycles"] == 2
    assert outcome.data["cumulative"]["new"] == 1
