"""The send journal: the relay's 250, kept on local disk before MariaDB records it.

The relay's answer is the only proof that it accepted the reply. The worker writes it
here (one small file per attempt, fsync'ed, renamed into place) the moment the relay
answers, and only then records ``sent`` in MariaDB; the file is removed after that commit.
When MariaDB is lost in between, the job runner waits and runs the job again: the attempt
is still ``attempted``, and the journal says it was accepted - so it ends ``sent``
(verified_by relay_250, accepted_at from the journal) instead of ``unknown``.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| MariaDB lost after 250, before ``sent`` commits | the job runs again after the outage | yes: journal | ``sent`` from the journal |
| worker killed after 250 | stuck reset, the next run on this host | yes: journal | ``sent`` from the journal |
| next run on another host (no journal there) | - | no | Sent-folder reconciliation as before |
| journal write fails (disk full) | - | the answer is still in memory | recorded in MariaDB directly; logged |
| crash after the commit, before the file is removed | - | yes | the next run sees ``sent`` and removes nothing harmful (a stale file is ignored: the attempt is no longer ``attempted``) |
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..adapters.files import write_durably

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Acceptance:
    attempt_id: int
    message_id: str
    answer: str
    accepted_at: datetime  # UTC without tzinfo, as MariaDB stores it


class SendJournal:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, attempt_id: int) -> Path:
        return self.directory / f"attempt-{int(attempt_id)}.json"

    def record(self, acceptance: Acceptance) -> bool:
        """Write the acceptance durably; False (logged) when the disk refuses."""
        data = json.dumps({"attempt_id": acceptance.attempt_id,
                           "message_id": acceptance.message_id, "answer": acceptance.answer,
                           "accepted_at": acceptance.accepted_at.isoformat()}).encode()
        path = self._path(acceptance.attempt_id)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_durably(path, data)
            return True
        except OSError as e:
            log.error("ALARM send journal %s not written (%s): the relay's 250 for %s is only "
                      "in memory until MariaDB records it", path, e, acceptance.message_id)
            return False

    def get(self, attempt_id: int, message_id: str) -> Acceptance | None:
        """The acceptance of this attempt with this Message-ID (a re-armed attempt with a new
        Message-ID does not match an old file)."""
        try:
            d = json.loads(self._path(attempt_id).read_text())
        except (OSError, ValueError):
            return None
        if d.get("message_id") != message_id:
            return None
        return Acceptance(int(d["attempt_id"]), d["message_id"], str(d["answer"]),
                          datetime.fromisoformat(d["accepted_at"]))

    def clear(self, attempt_id: int) -> None:
        try:
            self._path(attempt_id).unlink()
        except FileNotFoundError:
            pass
        except OSError as e:  # harmless: a stale file is ignored once the attempt is settled
            log.warning("send journal entry of attempt %s not removed: %s", attempt_id, e)
