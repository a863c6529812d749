"""The classification step: one mail -> validated classification (LLM).

``run(ctx)`` reads subject, sender and text as the parse step stored them
(``mail_input.mail_content``: body and attachment text; never the raw mail), asks the LLM under the policy of
``email_rag.llm.policy`` and returns the outcome for the worker's checkpoint.
The mail text goes to the LLM only inside the delimited user message; the
system prompt declares it untrusted. The step writes nothing itself but the vectors of
labelled examples that lack one (idempotent): it is safe to repeat (an LLM call changes
nothing on our side). Its checkpoint counts the mail, with the category given, in the review
figures (``db.figures.classified``, an upsert: a repeat counts once).

Who decides (stored per field in ``emails.classification_sources`` with the confidence):
headers and rules first (loop guard, list headers, no-reply senders, a thank-you that ends
the conversation: ``no_reply_rule``; a mail a rule says takes no reply needs the history to
be sure of category and priority only);
then the team's history (``team_view``: a logistic regression per field over the mailbox's
labelled examples, ``db.examples``) for each field it is sure of; the LLM for the rest, with the
most similar examples in its prompt as delimited untrusted data; the language always from
the language identifier (``mail.language``), the LLM's only when the identifier is unsure.

Failure table:

| situation                              | retry?                    | state known? | resume?                                   |
|----------------------------------------|---------------------------|--------------|-------------------------------------------|
| valid answer, needs_reply true         | -                         | yes          | CLASSIFIED, next step                     |
| valid answer, needs_reply false, and   | -                         | yes          | NO_REPLY, stop (terminal, no draft)       |
| a header corroborates it (list mail)   |                           |              |                                           |
| valid answer, needs_reply false, no    | -                         | yes          | NO_REPLY_SUGGESTED, stop: a list staff    |
| header says so (an LLM's opinion       |                           |              | confirm with one click (email_rag.        |
| alone, e.g. obeying an injection)      |                           |              | no_reply); never terminal by itself       |
| mail flagged by the loop guard         | -                         | yes          | classified, NO_REPLY, stop                |
| the sender takes no replies (no-reply  | -                         | yes          | NO_REPLY_SUGGESTED, stop, whatever the    |
| or empty address: ``addresses.         |                           |              | model says: staff confirm or answer by    |
| choose_reply``)                        |                           |              | hand; never a draft                       |
| no text at all (no subject, no body)   | no LLM call               | yes          | defaults (flagged), CLASSIFIED            |
| timeout twice                          | policy: once              | yes          | MANUAL, not confirmed, stop: admin retry  |
|                                        |                           |              | re-runs the step                          |
| invalid output twice                   | policy: once, adjusted    | yes          | defaults flagged (classification_         |
|                                        | prompt                    |              | defaulted=1), CLASSIFIED, next step       |
| 429 beyond the bound, 5xx, connection  | job retry cycle (raised)  | yes          | the job re-runs this step later           |
| 400/401/403/404/422                    | never (raised, permanent) | yes          | job dead, mail failed with the reason     |
| crash after the LLM answered, before   | the job re-runs the step  | yes: nothing | one more LLM call (costs tokens only)     |
| the checkpoint                         |                           | was stored   |                                           |
| the history decides all three fields   | no LLM call               | yes          | CLASSIFIED (llm_skipped, source=history)  |
| the loop guard flagged the mail and    | no LLM call               | yes          | NO_REPLY (needs_reply source=rules)       |
| the history decides category, priority |                           |              |                                           |
| the mail is only a thank-you ending    | the LLM (or history) for  | yes          | NO_REPLY_SUGGESTED (needs_reply source=   |
| the conversation (``closing_thanks``)  | category and priority     |              | rules): staff confirm, never terminal     |
| the mail is unlike every example       | -                         | yes          | the LLM decides all fields (with shots)   |
| (similarity < history_min_similarity)  |                           |              |                                           |
| embedder or examples unavailable       | no (the LLM decides)      | yes          | as without history (warning logged)       |
| an example without vector (embedder    | embedded at the next mail | yes          | used once embedded                        |
| down at the staff action) or by another|                           |              |                                           |
| embedder                               |                           |              |                                           |
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Required, TypedDict

import numpy as np

from ..core.errors import DatabaseBusyError, DatabaseUnavailableError
from ..core.jsonvalue import JsonObject
from ..core.records import Mail
from ..core.settings import Settings
from ..core.states import IndexStatus, MailStatus
from ..db import examples as stored_examples
from ..db import figures, sql
from ..indexing.chunking import clean_body
from ..llm import classification as cl
from ..llm.budget import DEFAULT_CONTEXT, SAFETY, Fitted, context_tokens, estimate_tokens
from ..llm.examples import (
    Anchor,
    Example,
    FieldVote,
    HistoryDecision,
    HistoryModel,
    Shot,
    Thresholds,
    anchor_texts,
    nearest,
    shots_block,
)
from ..llm.policy import LLMTask, PolicyLimits, TaskOutcome, run_task
from ..llm.prompts import load_prompt, mail_block, set_version
from ..mail.language import identify
from . import mail_input
from .contract import StepContext, StepOutcome

if TYPE_CHECKING:
    from ..db.connection import Cursor
    from ..wiring.services import Services


def mail_content(ctx: StepContext) -> mail_input.MailContent:
    """Subject, sender, text and loop-guard reason of the mail (``mail_input``)."""
    return mail_input.mail_content(ctx.email, ctx.services.settings.llm_max_input_chars)


CLASSIFY_MAX_TOKENS, CLASSIFY_MAX_TOKENS_CAP = 300, 600


def classification_task(subject: str, sender: str, body: str, max_chars: int = 8000,
                        context: int = DEFAULT_CONTEXT, shots: list[Shot] | None = None
                        ) -> LLMTask[cl.Classification]:
    """The classification as an LLM task (prompts from files, schema from the model),
    with the mail body cut to fit ``context`` tokens (recorded in ``task.trimmed``).
    ``shots``: the team's most similar labelled examples, a block before the mail (the
    first dropped when the prompt is too long)."""
    shots = shots or []
    system, task, retry = load_prompt("system"), load_prompt("classify"), \
        load_prompt("classify_retry")
    instructions = task.render(allowed_values=cl.allowed_values_text())
    head = f"{system.text.strip()}\n\n{instructions.strip()}"
    retry_room = estimate_tokens(retry.render(error="x" * 300))

    def build(refs: int, _thread: int, body_chars: int) -> list[dict[str, str]]:
        mail = mail_block(subject, sender, body, body_chars)
        user = f"{shots_block(shots[:refs])}\n\n{mail}" if refs else mail
        return [{"role": "system", "content": head}, {"role": "user", "content": user}]

    fitted = Fitted(build, len(shots), 0, min(len(body or ""), max_chars) or 1,
                    budget=context - CLASSIFY_MAX_TOKENS_CAP - SAFETY - retry_room)

    def messages(error: str | None) -> list[dict[str, str]]:
        out = fitted.messages()
        if error is not None:
            out[0] = {"role": "system",
                      "content": head + "\n\n" + retry.render(error=error).strip()}
        return out

    version = set_version("classify", system, task, retry)
    return LLMTask(
        name="classify", prompt_version=f"{version}+shots" if shots else version,
        messages=messages, parse=cl.parse_classification, schema=cl.json_schema(),
        schema_name=cl.SCHEMA_NAME, default=lambda: cl.default_classification(subject, body),
        max_tokens=CLASSIFY_MAX_TOKENS, max_tokens_cap=CLASSIFY_MAX_TOKENS_CAP,
        shrink=fitted.shrink, trimmed=fitted.trimmed,
    )


def run(ctx: StepContext) -> StepOutcome:
    s = ctx.services.settings
    mail = mail_content(ctx)
    if not (mail.subject.strip() or mail.body.strip()):
        task = classification_task(mail.subject, mail.sender, mail.body, s.llm_max_input_chars)
        value = task.default()  # type: ignore[misc]
        reason = "nothing to classify (no subject, no text): default values used"
        return _classified(ctx, value, task.prompt_version, True, reason, mail,
                           [ctx.event("llm_skipped", {"task": "classify", "reason": reason,
                                                      "prompt_version": task.prompt_version})],
                           {"outcome": "skipped"})

    started = time.monotonic()
    ruled = no_reply_rule(mail.auto_reason, None if ctx.email.attachments not in (None, "", "[]")
                          else ctx.email.body_text)
    team = team_view(ctx)
    if team is not None and ruled:  # the rules already say: no reply
        team = team.ruled("needs_reply", False)
    if team is not None and team.decision.all_decided:
        return _decided_by_history(ctx, mail, team, started, ruled)
    task = classification_task(mail.subject, mail.sender, mail.body,
                               s.llm_max_input_chars, context_tokens(s, ctx.services.llm),
                               team.shots if team else None)

    result = run_task(ctx.services.llm, task, PolicyLimits.from_settings(s),
                      event=lambda name, detail: ctx.event(name, detail),
                      audit=ctx.services.audit)
    detail = {"outcome": str(result.outcome), "attempts": result.attempts,
              "model": result.model, "duration_ms": round(result.duration * 1000, 1),
              "prompt_version": result.prompt_version, "source": mail.source}

    if result.outcome is TaskOutcome.MANUAL:
        return StepOutcome(detail=detail, mail_status=MailStatus.MANUAL,
                           status_reason=result.reason, confirmed=False, stop=True,
                           events=result.events)
    assert result.value is not None  # OK or DEFAULTED (classification always has defaults)
    defaulted = result.outcome is TaskOutcome.DEFAULTED
    value, sources = result.value, None
    if team is not None:
        value, sources = team.merge(value, "default" if defaulted else "llm")
        detail["history"] = team.summary()
    elif ruled:
        value = value.model_copy(update={"needs_reply": False})
        sources = {**{f: FieldSource(source="default" if defaulted else "llm", confidence=None)
                      for f in ("category", "priority")},
                   "needs_reply": FieldSource(source="rules", confidence=None)}
    if ruled:
        detail["needs_reply_rule"] = ruled
    return _classified(ctx, value, result.prompt_version, defaulted,
                       result.reason if defaulted else None, mail, result.events, detail,
                       sources)


# --- the team's history: labelled examples decide when sure ---

log = logging.getLogger(__name__)
HISTORY_VERSION = "history"  # classification_prompt_version of a mail no LLM classified


class FieldSource(TypedDict, total=False):
    """Where one classification field came from (``classification_sources``, JSON)."""

    source: Required[str]  # history, llm, default, rules, identifier
    confidence: Required[float | None]
    examples: int  # history: the mailbox's labelled examples
    via: str  # history: "category" when the field followed the decided category
    identifier: list[str | float]  # llm as tie-breaker: the identifier's unsure guess


@dataclass(frozen=True)
class TeamView:
    """What the mailbox's labelled examples say about one mail."""

    decision: HistoryDecision
    shots: list[Shot]
    nearest_similarity: float  # of the most similar example

    def source(self, name: str) -> FieldSource:
        vote = self.decision.votes[name]
        if vote.source != "history":  # a rule decided it
            return FieldSource(source=vote.source, confidence=None)
        found = FieldSource(source="history", confidence=round(vote.probability, 3),
                            examples=self.decision.examples_known)
        if vote.via:
            found["via"] = vote.via
        return found

    def ruled(self, name: str, value: str | bool) -> TeamView:
        """This view with ``name`` decided by a rule (``HistoryDecision.ruled``)."""
        return TeamView(self.decision.ruled(name, value), self.shots, self.nearest_similarity)

    def merge(self, value: cl.Classification, other: str
              ) -> tuple[cl.Classification, dict[str, FieldSource]]:
        """The LLM's classification with the fields the history decided replaced."""
        updates: dict[str, cl.Category | cl.Priority | bool] = {}
        sources: dict[str, FieldSource] = {}
        for name, vote in self.decision.votes.items():
            if vote.decided:
                updates[name] = _field_value(name, vote.value)
                sources[name] = self.source(name)
            else:
                sources[name] = FieldSource(source=other, confidence=None)
        return value.model_copy(update=updates), sources

    def summary(self) -> JsonObject:
        return {"examples": self.decision.examples_known,
                "nearest_similarity": self.nearest_similarity,
                **{n: {"value": v.value, "probability": round(v.probability, 3),
                       "decided": v.decided, "source": v.source,
                       **({"via": v.via} if v.via else {})}
                   for n, v in self.decision.votes.items()}}


def _field_value(name: str, value: str | bool | None) -> cl.Category | cl.Priority | bool:
    if name == "category":
        return cl.Category(value)
    if name == "priority":
        return cl.Priority(value)
    return bool(value)


@dataclass(frozen=True)
class _Fitted:
    key: tuple[Any, ...]
    model: HistoryModel
    examples: list[Example]


_fitted: dict[int, _Fitted] = {}  # per mailbox, in this worker process
_fitted_lock = threading.Lock()
_anchors: dict[str, tuple[Anchor, ...]] = {}  # per embedder name, in this worker process


def meaning_anchors(embedder: Any) -> tuple[Anchor, ...]:
    """The phrases of the categories' and priorities' meanings (``anchor_texts``) embedded
    by ``embedder``: one embedder call per process and embedder (some 40 short phrases).
    The embedder's errors propagate (``team_view``: the LLM decides alone)."""
    found = _anchors.get(embedder.name)
    if found is None:
        texts = anchor_texts()
        vectors = embedder.embed([t for _, _, t, _ in texts])
        found = tuple(Anchor(f, v, np.frombuffer(stored_examples.pack(vec), dtype="<f4"), w)
                      for (f, v, _, w), vec in zip(texts, vectors, strict=True))
        _anchors[embedder.name] = found
    return found


def examples_state(cur: Cursor, mail: Mail, svc: Services) -> stored_examples.ExamplesVersion | None:
    """The mailbox's examples state (``team_history``), read with the mail at the start of
    the run (``StepSpec.read_ahead``: no transaction of its own); None without a mailbox, when
    the embedder cannot be built or the server refuses the read (``team_view`` then asks
    again and goes on without the history, as when it reads it itself). MariaDB lost or
    busy is raised (the run's read fails: the worker waits)."""
    if mail.mailbox_id is None:
        return None
    try:
        return stored_examples.state(cur, mail.mailbox_id,
                                     stored_examples.vector_name(svc.embedder))
    except (DatabaseUnavailableError, DatabaseBusyError):
        raise
    except Exception:  # noqa: BLE001 - the history is an aid (team_view logs it)
        return None


def team_history(ctx: StepContext) -> _Fitted | None:
    """The mailbox's history model, refitted when its examples changed (a new example,
    new labels, a vector filled in): the next mail after a staff correction uses it, with
    no retraining command. None without examples."""
    svc, mailbox_id = ctx.services, ctx.email.mailbox_id
    if mailbox_id is None:
        return None
    embedder = svc.embedder
    name = stored_examples.vector_name(embedder)
    v = ctx.read_ahead if isinstance(ctx.read_ahead, stored_examples.ExamplesVersion) \
        else stored_examples.state(svc.db, mailbox_id, name)
    if v.unembedded:
        stored_examples.embed_missing(svc.db, embedder, mailbox_id)
        v = stored_examples.version(svc.db, mailbox_id)
    if not v.count:
        return None
    key = (name, v.count, v.max_id, v.changed)
    with _fitted_lock:
        found = _fitted.get(mailbox_id)
        if found is not None and found.key == key:
            return found
        examples = [Example(r.email_id, r.array(), r.category, r.priority,
                            bool(r.needs_reply), r.source)
                    for r in stored_examples.of_mailbox(svc.db, mailbox_id)
                    if r.vector is not None and r.embedder == name]
        if not examples:
            return None
        model = HistoryModel(examples, history_limits(svc.settings), version=key,
                             anchors=meaning_anchors(embedder))
        found = _Fitted(key, model, examples)
        _fitted[mailbox_id] = found
        return found


def team_view(ctx: StepContext) -> TeamView | None:
    """The history's decision and the nearest examples for this mail; None when the
    mailbox has no examples or the embedder fails (the LLM decides, as without history)."""
    try:
        fitted = team_history(ctx)
        if fitted is None:
            return None
        packed = stored_examples.mail_vectors(ctx.services.embedder,
                                              [(ctx.email.subject, ctx.email.body_text)])[0]
        vector = np.frombuffer(packed, dtype="<f4")
    except Exception as e:  # the history is an aid: without it the LLM decides alone
        log.warning("mail %s: team history unavailable (%s)", ctx.email_id, type(e).__name__)
        return None
    return view_of(fitted.model, fitted.examples, vector, ctx.services.settings,
                   lambda ids: stored_examples.texts(ctx.services.db, ids))


def history_limits(s: Settings) -> Thresholds:
    """The per-field probabilities and example count from which the history decides."""
    return Thresholds(category=s.history_category_threshold,
                      priority=s.history_priority_threshold,
                      needs_reply=s.history_needs_reply_threshold,
                      min_examples=s.history_min_examples)


def view_of(model: HistoryModel, examples: list[Example], vector: np.ndarray, s: Settings,
            texts: Callable[[list[int]], dict[int, tuple[str, str]]]) -> TeamView:
    """What the examples say about a mail's (L2-normalised) vector: the model's decision,
    none when the mail is unlike every example, and the nearest examples as few-shot
    material (``texts``: example email ids -> (subject, body)). ``bench quality``'s
    learning curve asks exactly this."""
    close = nearest(vector, examples, max(s.history_shots, 1))
    decision = model.decide(vector)
    if close[0][1] < s.history_min_similarity:  # unlike every example: a linear model is
        decision = HistoryDecision(  # confident far from its data, so it decides nothing
            {n: FieldVote(v.value, v.probability, False) for n, v in decision.votes.items()},
            decision.examples_known)
    found = texts([e.email_id for e, _ in close[:s.history_shots]])
    shots = [Shot(*found.get(e.email_id, ("", "")), e.category, e.priority, e.needs_reply,
                  round(sim, 3), e.confirmed) for e, sim in close[:s.history_shots]]
    return TeamView(decision, shots, round(close[0][1], 3))


def _decided_by_history(ctx: StepContext, mail: mail_input.MailContent,
                        team: TeamView, started: float, rule: str | None) -> StepOutcome:
    """Every field decided by the team's examples: no LLM call at all. ``duration_ms``:
    from reading the examples to the decision (embedding included)."""
    votes = team.decision.votes
    subject_line = " ".join(mail.subject.split()) or " ".join(mail.body.split())[:120]
    value = cl.Classification(
        category=_field_value("category", votes["category"].value),
        priority=_field_value("priority", votes["priority"].value),
        language=cl.Language.OTHER,  # set by the identifier in _classified
        summary=(subject_line or "(no subject)")[:cl.SUMMARY_MAX],
        needs_reply=_field_value("needs_reply", votes["needs_reply"].value))
    sources = {name: team.source(name) for name in votes}
    summary = team.summary()
    ruled = [name for name, vote in votes.items() if vote.source == "rules"]
    reason = "decided by the team's labelled examples" + "".join(
        f"; {name} by the rules ({rule})" for name in ruled)
    event = ctx.event("llm_skipped", {"task": "classify", "source": "history",
                                      "reason": reason, "history": summary})
    detail = {"outcome": "history", "source": "history", "history": summary,
              "duration_ms": round((time.monotonic() - started) * 1000, 1)}
    return _classified(ctx, value, HISTORY_VERSION, False, None, mail, [event], detail, sources)


# --- rules: mails that take no reply whatever the history or the model say ---

# a thank-you's own words, and the words that may stand beside them in a note that only
# closes a conversation ("Thanks, that worked!", "Danke, hat geklappt!", "¡Gracias, ya
# funciona!"); a negation, a question or any other word makes it a message to answer
_THANKS = frozenset(
    "thanks thank thx cheers danke dankeschön dank merci gracias grazie bedankt dankjewel "
    "obrigado obrigada".split())
_BESIDE_THANKS = frozenset(
    # en
    "you so much very a lot again for the your help that it this worked works working "
    "now all is good great perfect fine ok okay sorted solved fixed resolved everything "
    "awesome brilliant many best regards kind "
    # de
    "schön sehr vielen für ihre die hilfe das es hat geklappt klappt funktioniert jetzt "
    "wieder alles gut super perfekt prima toll gelöst erledigt gruß grüße gruss gruesse "
    "viele beste liebe freundliche lg vg mfg "
    # fr
    "beaucoup pour votre aide ça ca marche fonctionne c est bon parfait tout maintenant "
    "génial résolu cordialement bonne journée "
    # es
    "muchas mil por su la ayuda ya funciona todo bien perfecto ahora genial resuelto "
    "saludos un saludo "
    # it
    "mille molte tante per l aiuto funziona ora tutto bene perfetto saluti "
    # nl
    "hartelijk voor de hulp het werkt weer goed groeten".split())
_THANKS_WORD = re.compile(r"[^\W\d_]+")
_NAME_LINE = re.compile(r"^[A-ZÄÖÜÀ-Ý][\w.'-]*( [A-ZÄÖÜÀ-Ý][\w.'-]*){0,2}$")
THANKS_MAX_WORDS = 12


def closing_thanks(body: str | None) -> bool:
    """Whether a mail's own text (quotes and signature left out, ``clean_body``) is only a
    thank-you that ends the conversation: at most ``THANKS_MAX_WORDS`` words, a word of thanks
    among them, every other word one that stands beside thanks (confirmation, greeting), a
    name line at the end allowed, and no question mark."""
    lines = [ln.strip() for ln in clean_body(body).splitlines() if ln.strip()]
    while len(lines) > 1 and _NAME_LINE.match(lines[-1]):  # a signature's name
        lines.pop()
    text = " ".join(lines).lower()
    if not text or "?" in text or "¿" in text:
        return False
    words = _THANKS_WORD.findall(text)
    return (0 < len(words) <= THANKS_MAX_WORDS and any(w in _THANKS for w in words)
            and all(w in _THANKS or w in _BESIDE_THANKS for w in words))


def no_reply_rule(auto_reason: str | None, own_text: str | None) -> str | None:
    """The rule that says a mail takes no reply, whatever the history or the model say (None:
    no rule does): the loop guard (its reason is the mail's own), or a thank-you that ends the conversation
    (``own_text``: the mail's body; None for a mail with attachments, which may be more than
    thanks)."""
    if auto_reason:
        return "loop guard"
    if own_text is not None and closing_thanks(own_text):
        return "a thank-you that ends the conversation"
    return None


def corroborating_header(raw: bytes | str | None) -> str | None:
    """A header saying the mail is list or bulk mail (which the loop guard does not
    cover): List-Id, List-Unsubscribe, List-Post."""
    if not raw:
        return None
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else bytes(raw)
    head = data.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0][:65536]
    msg = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(head)
    for name in ("List-Id", "List-Unsubscribe", "List-Post"):
        if msg.get(name):
            return f"list:{name.lower()}"
    return None


def no_reply_outcome(value: cl.Classification, auto_reason: str | None,
                     raw: bytes | str | None, no_reply_sender: str | None = None
                     ) -> tuple[MailStatus, str | None, bool]:
    """(status, reason, stop) after a classification. The one place that decides whether
    a mail gets no reply: an LLM's ``needs_reply: false`` alone is only a suggestion; a
    sender that takes no replies (``no_reply_sender``: the stored reply rule) never gets a
    draft."""
    if auto_reason:
        return MailStatus.NO_REPLY, f"no reply: loop guard ({auto_reason})", True
    if no_reply_sender and (value.needs_reply or not corroborating_header(raw)):
        return (MailStatus.NO_REPLY_SUGGESTED,
                f"classified as {value.category.value}; no draft: {no_reply_sender}. Staff "
                "confirm no reply or answer by hand (email-rag mails no-reply)", True)
    if value.needs_reply:
        return MailStatus.CLASSIFIED, None, False
    header = corroborating_header(raw)
    if header:
        return (MailStatus.NO_REPLY, f"classified as {value.category.value}, no reply needed; "
                f"the headers agree ({header})", True)
    return (MailStatus.NO_REPLY_SUGGESTED,
            f"classified as {value.category.value}: the model suggests no reply; no header "
            "confirms it, so staff decide (email-rag mails no-reply)", True)


def language_decision(text: str, llm_language: cl.Language | None
                      ) -> tuple[cl.Language, FieldSource]:
    """The mail's language and where it came from: the identifier when it is sure; the
    LLM's answer only as the tie-breaker when the identifier is unsure (``llm_language``
    None: no usable LLM answer, the identifier's guess stands)."""
    guess = identify(text)
    if guess.sure or llm_language is None:
        return cl.Language(guess.code), FieldSource(source="identifier",
                                                    confidence=round(guess.confidence, 3))
    return llm_language, FieldSource(source="llm", confidence=None,
                                     identifier=[guess.code, round(guess.confidence, 3)])


def _classified(ctx: StepContext, value: cl.Classification, version: str, defaulted: bool,
                reason: str | None, mail: mail_input.MailContent, events: list[Any],
                detail: JsonObject, sources: dict[str, FieldSource] | None = None
                ) -> StepOutcome:
    language, language_source = language_decision(
        f"{ctx.email.subject or ''}\n{ctx.email.body_text or ''}",
        None if defaulted or version == HISTORY_VERSION else value.language)
    value = value.model_copy(update={"language": language})
    sources = {**(sources or {f: FieldSource(source="default" if defaulted else "llm",
                                             confidence=None)
                                  for f in ("category", "priority", "needs_reply")}),
               "language": language_source}
    updates = value.email_updates(version, defaulted)
    raw = None
    if not value.needs_reply and not mail.auto_reason:  # do the headers agree? (rare: read
        row = ctx.services.db.fetchone(sql("classify_raw_head"), {"id": ctx.email_id})  # now)
        raw = row and row["head"]
    status, why, stop = no_reply_outcome(value, mail.auto_reason, raw, mail.no_reply_sender)
    reason = why or reason
    if status is MailStatus.NO_REPLY:  # the loop guard or a list header decided
        sources["needs_reply"] = FieldSource(source="rules", confidence=None)
    updates["classification_sources"] = json.dumps(sources)
    if stop:  # the index step will not run for it
        updates = {**updates, "index_status": str(IndexStatus.SKIPPED)}
    events = [*events, ctx.event("classified", {
        "category": updates["category"], "priority": updates["priority"],
        "language": updates["language"], "needs_reply": updates["needs_reply"],
        "defaulted": defaulted, "prompt_version": version, "sources": sources})]
    category = str(updates["category"])
    return StepOutcome(detail={**detail, **{k: updates[k] for k in cl.EMAIL_COLUMNS}},
                       email_updates=updates, mail_status=status, status_reason=reason,
                       stop=stop, events=events,
                       write=lambda cur: figures.classified(cur, ctx.email_id, category))
