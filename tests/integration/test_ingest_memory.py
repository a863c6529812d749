"""Memory stays flat in mailbox size: one batch in memory, never the mailbox.

How it is measured (and why not with RSS): a real poll of a 10,000-mail
folder (12.5 MB) against the real Dovecot, MariaDB and Redis, with every
fetched mail object and every prepared row object counted while alive
(``weakref.finalize``). Holding the mailbox would keep 10,000 of them alive;
streaming keeps at most the batch being stored plus the one being fetched.
Peak RSS was tried first and discarded: a fresh interpreter's import peak
(~69 MB) hides a 12.5 MB mailbox completely, so it could not fail. The
benchmark reports the peak RSS anyway (``email-rag bench ingest``: a 1,000- and a
10,000-mail folder, each polled by ``email-rag poll --once`` in a subprocess). Marked slow (~5 s here), still in the default run.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import pytest
from email_rag_harness.testing.mails import bulk_mails

from email_rag.adapters import imap as imap_module
from email_rag.ingest import store as store_module
from email_rag.ingest.poller import Poller
from tests.integration.ingest_helpers import services_for


@dataclass
class Live:
    now: int = 0
    peak: int = 0
    total: int = 0

    def born(self, obj: object) -> None:
        self.now += 1
        self.total += 1
        self.peak = max(self.peak, self.now)
        weakref.finalize(obj, self.died)

    def died(self) -> None:
        self.now -= 1


@pytest.mark.slow
def test_a_10000_mail_folder_is_synced_one_batch_at_a_time(settings, db, mailbox, monkeypatch):
    fetched, prepared = Live(), Live()

    class CountedFetched(imap_module.FetchedMail):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            fetched.born(self)

    class CountedPrepared(store_module.PreparedMail):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            prepared.born(self)

    monkeypatch.setattr(imap_module, "FetchedMail", CountedFetched)
    monkeypatch.setattr(store_module, "PreparedMail", CountedPrepared)
    mailbox.deliver(bulk_mails(10_000, size=1250, tag=mailbox.name))
    svc = services_for(settings, mailbox, imap_fetch_batch=200)
    try:
        result = Poller(svc).poll()
    finally:
        svc.close()
    folder = result.mailboxes[0].folders[0]
    assert (folder.new, folder.enqueued, folder.batches) == (10_000, 10_000, 50)
    assert fetched.total == prepared.total == 10_000
    assert fetched.peak <= 2 * 200 and prepared.peak <= 2 * 200, (fetched.peak, prepared.peak)
    assert db.fetchone("SELECT COUNT(*) n FROM emails")["n"] == 10_000
