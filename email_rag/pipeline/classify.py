"""The classification step: the classifier's decision (``classification.classifier``) as
the step's checkpoint.

``run(ctx)`` hands the mail (as the parse step stored it: never the raw mail) to the
classifier and returns its labels, next status and events as the outcome the runner
commits. The checkpoint counts the mail, with the category given, in the review figures
(``db.figures.classified``, an upsert: a repeat counts once). The step writes nothing
itself but the vectors of labelled examples that lack one (idempotent): it is safe to
repeat (an LLM call changes nothing on our side). The examples' state is read with the
mail at the start of the run (``examples_state``, the step's ``read_ahead``).

Failure table (who decides what: ``classification/classifier.py``):

| situation | retry? | state known? | resume? |
|---|---|---|---|
| valid answer, needs_reply true | - | yes | CLASSIFIED, next step |
| valid answer, needs_reply false, and a header corroborates it (list mail) | - | yes | NO_REPLY, stop (terminal, no draft) |
| valid answer, needs_reply false, no header says so (an LLM's opinion alone, e.g. obeying an injection) | - | yes | NO_REPLY_SUGGESTED, stop: a list staff confirm with one click (review.no_reply); never terminal by itself |
| mail flagged by the loop guard | - | yes | classified, NO_REPLY, stop |
| the sender takes no replies (no-reply or empty address: ``addresses.choose_reply``) | - | yes | NO_REPLY_SUGGESTED, stop, whatever the model says: staff confirm or answer by hand; never a draft |
| no text at all (no subject, no body) | no LLM call | yes | defaults (flagged), CLASSIFIED |
| timeout twice | policy: once | yes | MANUAL, not confirmed, stop: admin retry re-runs the step |
| invalid output twice | policy: once, adjusted prompt | yes | defaults flagged (classification_defaulted=1), CLASSIFIED, next step |
| 429 beyond the bound, 5xx, connection | job retry cycle (raised) | yes | the job re-runs this step later |
| 400/401/403/404/422 | never (raised, permanent) | yes | job dead, mail failed with the reason |
| crash after the LLM answered, before the checkpoint | the job re-runs the step | yes: nothing was stored | one more LLM call (costs tokens only) |
| the history decides all three fields | no LLM call | yes | CLASSIFIED (llm_skipped, source=history) |
| the loop guard flagged the mail and the history decides category, priority | no LLM call | yes | NO_REPLY (needs_reply source=rules) |
| the mail is only a thank-you ending the conversation (``closing_thanks``) | the LLM (or history) for category and priority | yes | NO_REPLY_SUGGESTED (needs_reply source=rules): staff confirm, never terminal |
| the mail is unlike every example (similarity < history_min_similarity) | - | yes | the LLM decides all fields (with shots) |
| embedder or examples unavailable | no (the LLM decides) | yes | as without history (warning logged) |
| an example without vector (embedder down at the staff action) or by another embedder | embedded at the next mail | yes | used once embedded |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..classification.classifier import Classifier, ClassifierDeps
from ..classification.history import TeamHistory
from ..core.records import Mail
from ..db import examples as stored_examples
from ..db import figures
from .contract import StepContext, StepOutcome

if TYPE_CHECKING:
    from ..db.connection import Cursor


def examples_state(cur: Cursor, mail: Mail, deps: ClassifierDeps
                   ) -> stored_examples.ExamplesVersion | None:
    """The mailbox's examples state, read with the mail (``TeamHistory.state``)."""
    return TeamHistory(deps).state(cur, mail)


def run(ctx: StepContext) -> StepOutcome:
    known = ctx.read_ahead if isinstance(ctx.read_ahead, stored_examples.ExamplesVersion) \
        else None
    done = Classifier(ctx.services).classify(ctx.email, ctx.event, known)
    category, email_id = done.category, ctx.email_id
    return StepOutcome(
        detail=done.detail, email_updates=dict(done.updates), mail_status=done.status,
        status_reason=done.reason, confirmed=done.confirmed, stop=done.stop,
        events=done.events,
        write=None if category is None else lambda cur: figures.classified(cur, email_id,
                                                                          category))
