"""What users are told about a reply's sending: computed from the send attempt's state, never
from the action that was just taken ("SUCCESS is a claim": seed 004).

One function, ``send_outcome(attempt)``, serves the CLI (``drafts approve``, ``drafts
show``, ``sends list``), the web (draft page, flash after approval, timeline) and the
README's wording. "sent" is said only after the relay answered 250, the Message-ID was
found in the Sent folder, or an admin said so (and then it says that it was not verified).

| attempt | verified_by | wording |
|---|---|---|
| none / pending | - | approved — queued to send, not sent yet |
| pending with an error | - | approved — queued to send; the last try was deferred: ... |
| attempted | - | handed to the relay at ..., its answer is not confirmed yet |
| sent | relay_250 | sent — accepted by the relay at ... |
| sent | sent_folder | sent — found in the Sent folder at ... (the relay's answer was lost) |
| sent | admin | marked sent by <admin>, not verified |
| failed | - / admin | not sent — refused by the relay: ... / <admin> gave up: ... |
| unknown | - | unknown — a human decides. Known: ... |
| bounced | bounce | bounced — the reply did not arrive: ... |
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..core.actors import shown
from ..core.catalog import N_
from ..core.records import SendAttempt
from ..core.states import SendStatus, SendVerifiedBy


def utc_text(value: Any) -> str:
    """A stored time (UTC, no tzinfo) as the CLI prints it."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).strftime(
            "%Y-%m-%d %H:%M:%S UTC")
    return str(value or "?")


def local_text(value: Any, zone: Any) -> str:
    """A stored time (UTC, no tzinfo) in a time zone, to the minute (the web's way)."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return aware.astimezone(zone).strftime("%Y-%m-%d %H:%M")
    return str(value or "?")


def _who(actor: Any) -> str:
    return shown(actor, "an admin")


def send_outcome(attempt: SendAttempt | None,
                 at: Callable[[Any], str] = utc_text) -> tuple[str, dict[str, str]]:
    """The reply's sending as a message with its values (the web translates the message);
    ``at`` formats a stored time."""
    if attempt is None:
        return N_("not approved — nothing is sent"), {}
    status, verified = attempt.status, attempt.verified_by
    error = str(attempt.last_error or "")[:300]
    if status == SendStatus.PENDING:
        if error:
            return N_("approved — queued to send, not sent yet; the last try was deferred: "
                      "%(error)s"), {"error": error}
        return N_("approved — queued to send, not sent yet"), {}
    if status == SendStatus.ATTEMPTED:
        return N_("approved — handed to the relay at %(at)s; its answer is not confirmed yet"), {
            "at": at(attempt.attempted_at)}
    if status == SendStatus.SENT:
        if verified == SendVerifiedBy.ADMIN:
            return N_("marked sent by %(who)s, not verified"), {"who": _who(attempt.decided_by)}
        if verified == SendVerifiedBy.SENT_FOLDER:
            return N_("sent — found in the Sent folder at %(at)s (the relay's answer was lost)"), {
                "at": at(attempt.verified_at or attempt.sent_at)}
        return N_("sent — accepted by the relay at %(at)s"), {
            "at": at(attempt.accepted_at or attempt.sent_at)}
    if status == SendStatus.FAILED:
        if verified == SendVerifiedBy.ADMIN:
            return N_("not sent — %(who)s decided to send nothing more"), {
                "who": _who(attempt.decided_by)}
        return N_("not sent — refused by the relay: %(error)s"), {
            "error": str(attempt.smtp_response or error)[:300]}
    if status == SendStatus.UNKNOWN:
        return N_("unknown — a human decides. Known: %(known)s"), {"known": error or "?"}
    if status == SendStatus.BOUNCED:
        return N_("bounced — the reply did not arrive: %(error)s"), {"error": error or "?"}
    return N_("send %(status)s"), {"status": str(status)}


def send_outcome_text(attempt: SendAttempt | None) -> str:
    """The same in English, for the CLI."""
    message, values = send_outcome(attempt)
    return message % values if values else message
