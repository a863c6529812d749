"""The send_draft job: one approved draft leaves exactly once, or a human decides.

Guarantees, per step:
- approve -> send attempt: exactly-once (row lock, one attempt per draft, Message-ID fixed
  before the first try).
- SMTP hand-off: the attempt is marked ``attempted`` (committed) BEFORE the relay is
  contacted. A known refusal (4xx before/after DATA, connection refused) puts it back
  to ``pending``: nothing left, a retry is safe. A permanent 5xx ends it ``failed``.
- relay answered 250: the answer is written to the send journal (local disk, fsync;
  email_rag/sending/journal.py) before MariaDB records ``sent`` (verified_by relay_250). A
  MariaDB outage in between does not throw the acceptance away: the job runs again after
  the outage and finishes the write from the journal.
- outcome unknown (timeout after DATA, worker killed between send and marking): the
  attempt is still ``attempted``. Before ANY resend it is reconciled: the Message-ID is
  searched in the mailbox's Sent folder (where the relay or our post-send copy files it).
  Found -> ``sent`` (verified_by sent_folder). Not found -> wait
  ``reconcile_again_after_seconds`` (audited ``reconcile_wait``: a relay may file its copy
  late) and search once more; still not found, or reconciliation switched off ->
  ``unknown``: an admin decides; it is never resent blindly (at-most-once where the relay
  keeps no queryable record). A failing search is a transient error: retried, then dead,
  still never resent.
- Sent-folder copy after a confirmed send: checked before appending (at most one copy).

What a send does with a try whose outcome it did not see is the ``Unconfirmed`` policy
the service is built with; the guarantees above are its default, ``RECONCILE``.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| relay 4xx / connection refused / dropped before DATA | yes (job cycle: 4 attempts, EMAIL_RAG_MAX_ATTEMPTS) | yes: not sent | draft stays approved; sent on the next attempt |
| relay 5xx | no | yes: refused | draft failed with the server's answer, mail failed |
| timeout after DATA | no blind retry | no | reconcile (twice, a wait between): sent or unknown |
| MariaDB lost after the relay's 250 | the job, after the outage | yes: send journal | ``sent`` (relay_250) from the journal |
| worker killed after the relay accepted | no blind retry | no | next run reconciles |
| newer inbound mail in the thread before sending | no | yes | draft stale, staff take a new look |
| Sent-folder search fails | yes (job cycle) | no | reconcile again later; never resent blindly |
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..core.audit_event import AuditEvent, utcnow
from ..core.errors import (
    PermanentError,
    SmtpOutcomeUnknownError,
    SmtpPermanentError,
    SmtpTransientError,
    TransitionRefused,
)
from ..core.jsonvalue import JsonObject
from ..core.ports import MailSender, SentFolder
from ..core.records import InboundRef, Job, ReplyMail, SendAttempt, SendContext
from ..core.states import Actor, DraftStatus, MailStatus, SendStatus, SendVerifiedBy
from ..knowledge.candidates import Candidates
from .compose import build_forward, build_reply
from .journal import Acceptance, SendJournal
from .rules import reply_choice

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)


def is_forward(draft: Any) -> bool:
    """A forward of the mail to an address (``sending.forward``), not a reply to it."""
    return getattr(draft, "source", "") == "forward"


def _mail(ctx: SendContext, status: MailStatus) -> MailStatus | None:
    """The mail's status after its send: a reply's outcome is the case's; a forward's
    outcome leaves the case as it is (only its attempt and draft record it)."""
    return None if is_forward(ctx.draft) else status


class Unconfirmed(StrEnum):
    """What a send does with a try whose outcome it did not see: an earlier try left
    ``attempted`` (a worker killed after the hand-off, MariaDB lost after the relay's 250)
    or the relay's answer lost (a timeout after DATA). The delivery guarantee, chosen where
    the ``SendService`` is built (``wiring``: always ``RECONCILE``)."""

    # at most once: the send journal, then the Sent folder decide; what neither confirms
    # is ``unknown`` for an admin, never sent again blindly
    RECONCILE = "reconcile"
    # at least once: the job's next try sends it again (journal and Sent folder are not
    # read), for a relay that drops a repeated Message-ID; the send store must then take an
    # ``attempted`` send again (its ``attempt_query``)
    RESEND = "resend"


class SendService:
    def __init__(self, services: ServiceContext,
                 sent_folder: Callable[[str], SentFolder] | None = None,
                 sender: MailSender | None = None,
                 unconfirmed: Unconfirmed = Unconfirmed.RECONCILE) -> None:
        self.services = services
        self.unconfirmed = unconfirmed
        self.settings = services.settings
        self._sent_folder = sent_folder
        self._folders: dict[str, SentFolder] = {}  # one kept IMAP connection per mailbox
        # the given sender, else each mailbox's own SMTP identity (or the global relay)
        self._sender_for: Callable[[str], MailSender] = (
            (lambda _mailbox: sender) if sender is not None else services.mail_sender_for)
        self.journal = SendJournal(self.settings.send_journal_dir)

    def sent_folder(self, mailbox_name: str) -> SentFolder:
        if self._sent_folder is not None:
            return self._sent_folder(mailbox_name)
        if mailbox_name not in self._folders:
            self._folders[mailbox_name] = self.services.sent_folder(mailbox_name)
        return self._folders[mailbox_name]

    # --- the job handler ---
    def run(self, job: Job, worker: str) -> None:
        ctx = self._load(job)
        attempt, draft = ctx.attempt, ctx.draft
        if attempt.status in (SendStatus.SENT, SendStatus.FAILED, SendStatus.UNKNOWN):
            log.info("send attempt %s is %s: nothing to do", attempt.id, attempt.status)
            return
        if draft.status != DraftStatus.APPROVED:
            log.info("draft %s is %s: not sending", draft.id, draft.status)
            return
        if attempt.status == SendStatus.ATTEMPTED and self._settle_previous(ctx, job):
            return
        # a forward is not an answer: a newer mail of the customer does not outdate it
        newer = None if is_forward(draft) else self._newer_inbound(ctx.mail, draft.approved_at)
        if newer is not None:
            self._mark_stale(ctx, job, newer)
            return
        message = self._compose(ctx)
        via = self._sender_for(ctx.mailbox)
        started = self._mark_attempted(ctx, job)
        if started is None:
            return  # another run took it; its outcome decides
        ctx = started
        try:
            answer = via.send(message, ctx.from_addr, [ctx.to_addr])
        except SmtpTransientError as e:
            self._set(ctx, job, SendStatus.PENDING, "send_deferred", error=str(e))
            raise
        except SmtpPermanentError as e:
            self._refused(ctx, job, e)
            raise
        except SmtpOutcomeUnknownError as e:
            self._outcome_unknown(ctx, job, attempt, e)
            return
        accepted = Acceptance(attempt.id, attempt.message_id, answer, utcnow())
        self.journal.record(accepted)  # before MariaDB: an outage now loses nothing
        self._accepted(ctx, job, accepted, from_journal=False, message=message)

    def _settle_previous(self, ctx: SendContext, job: Job) -> bool:
        """An earlier try was started but its outcome never recorded: the send journal (the
        relay said 250 before MariaDB went away) or the Sent folder decides before anything
        is sent again. True when the attempt is settled (nothing more to do here); never
        when unconfirmed tries are sent again (``Unconfirmed.RESEND``)."""
        if self.unconfirmed is Unconfirmed.RESEND:
            return False
        attempt = ctx.attempt
        accepted = self.journal.get(attempt.id, attempt.message_id)
        if accepted is not None:  # the relay said 250; MariaDB did not record it then
            self._accepted(ctx, job, accepted, from_journal=True)
            return True
        return self._reconcile(ctx, job, "previous try did not confirm its outcome")

    def _outcome_unknown(self, ctx: SendContext, job: Job, attempt: SendAttempt,
                         error: SmtpOutcomeUnknownError) -> None:
        """The relay may have accepted the message (a timeout after DATA, a dropped
        connection): reconcile with the Sent folder, never send blindly again; or, with
        ``Unconfirmed.RESEND``, fail transiently with the attempt left ``attempted``, for
        the job's next try to send it again. ``attempt``: the attempt as this run loaded it."""
        if self.unconfirmed is Unconfirmed.RESEND:
            raise SmtpTransientError(str(error)) from error
        self._audit(job, "send_outcome_unknown", attempt, {"error": str(error)})
        self._reconcile(ctx, job, str(error))

    def _accepted(self, ctx: SendContext, job: Job, accepted: Acceptance,
                  from_journal: bool, message: bytes | None = None) -> None:
        """Record the relay's 250 (now, or from the journal after an outage), then file
        the copy in the Sent folder."""
        if self._set(ctx, job, SendStatus.SENT, "sent", response=accepted.answer,
                     verified_by=SendVerifiedBy.RELAY_250, accepted_at=accepted.accepted_at,
                     draft_status=DraftStatus.SENT, mail_status=_mail(ctx, MailStatus.SENT),
                     extra={"from_journal": True} if from_journal else None):
            self.journal.clear(accepted.attempt_id)
            self._propose_knowledge(ctx)
            self._copy_to_sent(ctx, job, message or self._compose(ctx))

    def _propose_knowledge(self, ctx: SendContext) -> None:
        """The sent reply's case as a knowledge candidate (knowledge/candidates.py), after the
        send is recorded; a failure here never touches the send (``collect`` catches up)."""
        try:
            Candidates(self.services.db).propose(ctx.draft.id, Actor.WORKER)
        except Exception as e:  # noqa: BLE001 - the send is done; the candidate is caught up
            log.warning("knowledge candidate of draft %s not proposed (%s); the next "
                        "`email-rag knowledge candidates list` proposes it", ctx.draft.id,
                        type(e).__name__)

    # --- steps ---
    def _load(self, job: Job) -> SendContext:
        """Draft, mail headers, mailbox and attempt in one read transaction (one snapshot);
        the mail's body and raw bytes are not read."""
        draft_id = int(job.draft_id or 0)
        with self.services.db.transaction() as cur:
            rows = self.services.stores.rows_of(cur)
            draft = rows.draft(draft_id)
            if draft is None:
                raise PermanentError(f"draft {draft_id} does not exist")
            mail = rows.reply_mail(draft.email_id)
            if mail is None:
                raise PermanentError(f"mail {draft.email_id} of draft {draft_id} does not exist")
            mailbox = rows.mailbox(mail.mailbox_id)
            attempt = rows.send_of_draft(draft.id)
        if attempt is None:
            raise PermanentError(f"draft {draft_id} has no send attempt")
        name, address = mailbox or (f"#{mail.mailbox_id}", None)
        try:
            from_addr = self.services.mailbox(name).reply_address
        except KeyError:
            from_addr = address
        if not from_addr:
            raise PermanentError(f"mailbox {name} has no reply address configured")
        to_addr = (attempt.recipients or "") if is_forward(draft) else reply_choice(mail).addr
        return SendContext(draft, mail, name, attempt, from_addr, to_addr or "")

    def _compose(self, ctx: SendContext) -> bytes:
        draft, mail = ctx.draft, ctx.mail
        if is_forward(draft):
            return bytes(build_forward(
                message_id=ctx.attempt.message_id, from_addr=ctx.from_addr,
                from_name=ctx.mailbox, to_addr=ctx.to_addr, subject=mail.subject,
                body=draft.body, draft_id=draft.id))
        msg = build_reply(
            message_id=ctx.attempt.message_id, from_addr=ctx.from_addr,
            from_name=ctx.mailbox, to_addr=ctx.to_addr, subject=mail.subject, body=draft.body,
            in_reply_to=mail.message_id, original_references=mail.references_header,
            draft_id=draft.id)
        return bytes(msg)

    def _newer_inbound(self, mail: ReplyMail, since: Any) -> InboundRef | None:
        return self.services.stores.rows_of(self.services.db).newer_inbound(mail, since)

    def _mark_attempted(self, ctx: SendContext, job: Job) -> SendContext | None:
        """pending -> attempted, counted as a try; None when another run took it."""
        attempt = ctx.attempt
        try:
            with self.services.db.transaction() as cur:
                sends = self.services.stores.sends
                sends.move(
                    cur, attempt.id, SendStatus.ATTEMPTED, actor=Actor.WORKER,
                    event="send_started", expect=(SendStatus.PENDING,),
                    current=attempt.status, query=sends.attempt_query,
                    attempt=attempt.tries + 1,
                    detail={"message_id": attempt.message_id, "job_id": job.id})
        except TransitionRefused:
            return None
        return dataclasses.replace(ctx, attempt=dataclasses.replace(
            attempt, status=SendStatus.ATTEMPTED, tries=attempt.tries + 1))

    def _set(self, ctx: SendContext, job: Job, status: SendStatus, event: str,
             error: str | None = None, response: str | None = None, reconciled: bool = False,
             draft_status: DraftStatus | None = None, mail_status: MailStatus | None = None,
             reason: str | None = None, verified_by: SendVerifiedBy | None = None,
             accepted_at: Any = None, extra: dict[str, object] | None = None) -> bool:
        """Record the outcome: attempt, draft and mail in one transaction, each by its store,
        only from the status this run saw. When another run or an admin moved the attempt
        meanwhile (a late worker after a stuck reset), nothing is overwritten: the late
        outcome is audited (``late_outcome``) for the human who decides. True if recorded."""
        attempt, draft, mail = ctx.attempt, ctx.draft, ctx.mail
        stores = self.services.stores
        detail = {"message_id": attempt.message_id, "error": error, "response": response,
                  "job_id": job.id, **({"verified_by": str(verified_by)} if verified_by
                                       else {}), **(extra or {})}
        events: list[AuditEvent] = []
        try:  # each move is conditional on the status this run read: no extra reads
            with self.services.db.transaction() as cur:
                stores.sends.move(cur, attempt.id, status, actor=Actor.WORKER, event=event,
                                  current=attempt.status, query="sends_move",
                                  attempt=attempt.tries, detail=detail, error=error,
                                  response=response, reconciled=int(reconciled), events=events,
                                  verified_by=verified_by and str(verified_by),
                                  accepted_at=accepted_at, decided_by=None)
                if draft_status is not None:
                    stores.drafts.move(cur, draft.id, draft_status, actor=Actor.WORKER,
                                       reason=reason, current=draft.status, events=events)
                if mail_status is not None:
                    stores.mails.move(cur, mail.id, mail_status, actor=Actor.WORKER,
                                      reason=reason, current=mail.status, events=events)
                stores.rows_of(cur).audit(events)
        except TransitionRefused as e:
            log.error("ALARM late send outcome for attempt %s not recorded: %s", attempt.id, e)
            self._audit(job, "late_outcome", attempt, {
                "wanted": str(status), "error": error, "response": response,
                "refused": str(e), "resume": "an admin decides (sends resolve)"})
            return False
        return True

    def _found_in_sent_folder(self, ctx: SendContext, job: Job, answer: str) -> bool:
        found = self._set(ctx, job, SendStatus.SENT, "reconciled_sent", response=answer,
                          reconciled=True, verified_by=SendVerifiedBy.SENT_FOLDER,
                          draft_status=DraftStatus.SENT, mail_status=_mail(ctx, MailStatus.SENT))
        if found:
            self._propose_knowledge(ctx)
        return found

    def _refused(self, ctx: SendContext, job: Job, e: SmtpPermanentError) -> None:
        answer = str(e.context.get("answer") or e)
        self._set(ctx, job, SendStatus.FAILED, "send_refused", error=str(e), response=answer,
                  draft_status=DraftStatus.FAILED, mail_status=_mail(ctx, MailStatus.FAILED),
                  reason=f"relay refused the reply: {answer}")

    def _reconcile(self, ctx: SendContext, job: Job, why: str) -> bool:
        """Settle an ``attempted`` send. True when settled (sent or unknown)."""
        attempt = ctx.attempt
        if not self.settings.reconcile_sent_folder:
            self._unknown(ctx, job, f"{why}; reconciliation is switched off")
            return True
        folder = self.sent_folder(ctx.mailbox)
        found = folder.contains(attempt.message_id)
        wait = float(self.settings.reconcile_again_after_seconds)
        searches = 1
        if not found and wait > 0:  # verify again: a relay may file its copy late
            self._audit(job, "reconcile_wait", attempt, {
                "wait_s": wait, "why": f"{attempt.message_id} is not in the Sent folder "
                "yet; searching again before declaring the outcome unknown"})
            time.sleep(wait)
            found = folder.contains(attempt.message_id)
            searches = 2
            self._audit(job, "reconcile_again", attempt, {"found": found, "waited_s": wait})
        if found:
            self._found_in_sent_folder(
                ctx, job, f"found {attempt.message_id} in the Sent folder"
                + (f" on the second search, {wait:g} s later" if searches == 2 else ""))
            return True
        self._unknown(ctx, job, f"{why}; {attempt.message_id} is not in the Sent folder "
                      f"({searches} search{'es' if searches == 2 else ''}"
                      f"{f', {wait:g} s apart' if searches == 2 else ''}), so delivery can "
                      "neither be confirmed nor ruled out")
        return True

    def _unknown(self, ctx: SendContext, job: Job, reason: str) -> None:
        log.error("ALARM send outcome unknown for draft %s: %s", ctx.draft.id, reason)
        self._set(ctx, job, SendStatus.UNKNOWN, "send_unknown", error=reason,
                  mail_status=_mail(ctx, MailStatus.MANUAL),
                  reason=f"send outcome unknown, not resent: {reason}")

    def _mark_stale(self, ctx: SendContext, job: Job, newer: InboundRef) -> None:
        draft, mail = ctx.draft, ctx.mail
        reason = f"newer mail {newer.id} arrived in the thread after approval"
        stores = self.services.stores
        events: list[AuditEvent] = []
        with self.services.db.transaction() as cur:
            stores.drafts.move(cur, draft.id, DraftStatus.STALE, actor=Actor.WORKER,
                               event="stale", query="drafts_mark_stale", reason=reason,
                               current=draft.status, expect=(DraftStatus.APPROVED,),
                               detail={"job_id": job.id}, events=events)
            stores.mails.move(cur, mail.id, MailStatus.DRAFT_READY, actor=Actor.WORKER,
                              reason=reason, current=mail.status, events=events)
            stores.rows_of(cur).audit(events)

    def _copy_to_sent(self, ctx: SendContext, job: Job, message: bytes) -> None:
        attempt = ctx.attempt
        try:
            folder = self.sent_folder(ctx.mailbox)
            if not folder.contains(attempt.message_id):
                folder.append(message)
            self._audit(job, "sent_copy_filed", attempt, {})
        except Exception as e:  # noqa: BLE001 - the reply is sent; the copy is best effort
            log.warning("reply %s sent but not filed in Sent: %s", attempt.message_id, e)
            self._audit(job, "sent_copy_failed", attempt, {"error": str(e)})

    def _audit(self, job: Job, event: str, attempt: SendAttempt,
               detail: JsonObject) -> None:
        self.services.audit.record(AuditEvent(
            Actor.WORKER, "send_attempt", attempt.id, event, attempt=attempt.tries,
            detail={"message_id": attempt.message_id, "job_id": job.id, **detail}))
