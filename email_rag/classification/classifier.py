"""The classifier: one mail -> its labels, where each came from, and what happens next.

Who decides (stored per field in ``emails.classification_sources`` with the confidence):
headers and rules first (loop guard, list headers, no-reply senders, a thank-you that ends
the conversation: ``rules.no_reply_rule``; a mail a rule says takes no reply needs the
history to be sure of category and priority only); then the team's history
(``history.TeamHistory``: a logistic regression per field over the mailbox's labelled
examples) for each field it is sure of; the LLM for the rest (``task``, under the policy of
``llm.policy``), with the most similar examples in its prompt as delimited untrusted data;
the language always from the language identifier, the LLM's only when the identifier is
unsure (``rules.language_decision``). The mail text goes to the LLM only inside the
delimited user message; the system prompt declares it untrusted.

The classifier writes nothing but the vectors of labelled examples that lack one
(idempotent): the caller's checkpoint stores the decision (``Classified``).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| no text at all (no subject, no body) | no LLM call | yes | defaults (flagged), classified |
| the history decides all three fields | no LLM call | yes | classified (llm_skipped, source=history) |
| valid answer, needs_reply true | - | yes | classified |
| needs_reply false, a header corroborates it, or the loop guard | - | yes | no_reply, stop (terminal) |
| needs_reply false from the model (or a thank-you rule) alone | - | yes | no_reply_suggested, stop: staff confirm |
| the sender takes no replies | - | yes | no_reply_suggested, stop, whatever the model says |
| timeout twice | policy: once | yes | manual, not confirmed, stop |
| invalid output twice | policy: once, adjusted prompt | yes | defaults flagged, classified |
| 429 beyond the bound, 5xx, connection, 400/401/403/404/422 | raised (the job's retry cycle) | yes | - |
| embedder or examples unavailable | no (the LLM decides) | yes | as without history (warning logged) |
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..core.jsonvalue import JsonObject
from ..core.records import Mail
from ..core.rows import SqlValue
from ..core.states import IndexStatus, MailStatus
from ..db import examples as stored_examples
from ..db import sql
from ..db.audit import AuditEvent, AuditLog
from ..llm.budget import context_tokens
from ..llm.mail_input import MailContent, mail_content
from ..llm.policy import EventFactory, PolicyLimits, TaskOutcome, TaskResult, run_task
from .history import HistoryDeps, TeamHistory, TeamView, field_value
from .rules import (
    NO_QUESTION_CATEGORIES,
    asks_question,
    language_decision,
    no_reply_outcome,
    no_reply_rule,
)
from .task import classification_task
from .values import EMAIL_COLUMNS, SUMMARY_MAX, Classification, FieldSource, Language

if TYPE_CHECKING:
    from ..core.ports import ChatModel

HISTORY_VERSION = "history"  # classification_prompt_version of a mail no LLM classified


class ClassifierDeps(HistoryDeps, Protocol):
    """What the classifier uses: the history's (settings, MariaDB, embedder), the LLM and
    the audit log (the policy writes the events of a failed attempt at once)."""

    @property
    def llm(self) -> ChatModel: ...

    @property
    def audit(self) -> AuditLog: ...


@dataclass(frozen=True)
class Classified:
    """What the classifier decided about one mail: the ``emails`` columns to set (none when
    it goes to a human), the mail's next status and the audit events, for one checkpoint."""

    status: MailStatus
    reason: str | None
    stop: bool
    detail: JsonObject
    events: list[AuditEvent]
    updates: dict[str, SqlValue] = field(default_factory=dict)
    confirmed: bool = True  # False: timed out twice; an admin retry classifies it again

    @property
    def category(self) -> str | None:
        found = self.updates.get("category")
        return None if found is None else str(found)


@dataclass(frozen=True)
class _Labels:
    """A classification before the rules' last word: where it came from and how sure."""

    value: Classification
    version: str
    defaulted: bool
    reason: str | None
    events: list[AuditEvent]
    detail: JsonObject
    sources: dict[str, FieldSource] | None = None


class Classifier:
    """Classifies mails with ``deps`` (settings, MariaDB, embedder, LLM, audit log); the
    team's history through ``history`` (default: on the same deps)."""

    def __init__(self, deps: ClassifierDeps, history: TeamHistory | None = None) -> None:
        self.deps = deps
        self.history = history or TeamHistory(deps)

    def classify(self, mail: Mail, event: EventFactory,
                 known: stored_examples.ExamplesVersion | None = None) -> Classified:
        """Classify ``mail``; ``event`` stamps its audit events, ``known``: the examples'
        state read ahead with the mail (None: read here)."""
        content = mail_content(mail, self.deps.settings.llm_max_input_chars)
        if not (content.subject.strip() or content.body.strip()):
            return self._labelled(mail, content, self._nothing_to_classify(content, event),
                                  event)
        started = time.monotonic()
        ruled = no_reply_rule(content.auto_reason, None if mail.attachments not in
                              (None, "", "[]") else mail.body_text, content.subject)
        team = self.history.view(mail, known)
        if team is not None and ruled:  # the rules already say: no reply
            team = team.ruled("needs_reply", False)
        if team is not None and team.decision.all_decided:
            return self._labelled(mail, content,
                                  _decided_by_history(content, team, started, ruled, event),
                                  event)
        result = self._ask_llm(content, team, event)
        if result.outcome is TaskOutcome.MANUAL:
            return Classified(MailStatus.MANUAL, result.reason, True, _llm_detail(result,
                              content), result.events, confirmed=False)
        return self._labelled(mail, content, _answered(result, content, team, ruled), event)

    def _nothing_to_classify(self, content: MailContent, event: EventFactory) -> _Labels:
        task = classification_task(content.subject, content.sender, content.body,
                                   self.deps.settings.llm_max_input_chars)
        value = task.default()  # type: ignore[misc]
        reason = "nothing to classify (no subject, no text): default values used"
        skipped = event("llm_skipped", {"task": "classify", "reason": reason,
                                        "prompt_version": task.prompt_version})
        return _Labels(value, task.prompt_version, True, reason, [skipped],
                       {"outcome": "skipped"})

    def _ask_llm(self, content: MailContent, team: TeamView | None, event: EventFactory
                 ) -> TaskResult[Classification]:
        s, llm = self.deps.settings, self.deps.llm
        task = classification_task(content.subject, content.sender, content.body,
                                   s.llm_max_input_chars, context_tokens(s, llm),
                                   team.shots if team else None)
        return run_task(llm, task, PolicyLimits.from_settings(s), event=event,
                        audit=self.deps.audit)

    def _labelled(self, mail: Mail, content: MailContent, labels: _Labels,
                  event: EventFactory) -> Classified:
        """The rules' last word on ``labels``: the language, whether the mail gets a reply
        (a header may have to agree: read now, rarely), and the columns to set."""
        language, language_source = language_decision(
            f"{mail.subject or ''}\n{mail.body_text or ''}",
            None if labels.defaulted or labels.version == HISTORY_VERSION
            else labels.value.language)
        value = labels.value.model_copy(update={"language": language})
        sources = {**(labels.sources or {f: FieldSource(
            source="default" if labels.defaulted else "llm", confidence=None)
            for f in ("category", "priority", "needs_reply")}), "language": language_source}
        if not value.needs_reply and not content.auto_reason \
                and asks_question(mail.body_text, value.category):
            value = value.model_copy(update={"needs_reply": True})
            sources["needs_reply"] = FieldSource(source="rules", confidence=None)
        elif value.needs_reply and value.category in NO_QUESTION_CATEGORIES:
            value = value.model_copy(update={"needs_reply": False})
            sources["needs_reply"] = FieldSource(source="rules", confidence=None)
        updates: dict[str, SqlValue] = dict(value.email_updates(labels.version,
                                                                labels.defaulted))
        raw = None
        if not value.needs_reply and not content.auto_reason:  # do the headers agree?
            row = self.deps.db.fetchone(sql("classify_raw_head"), {"id": mail.id})
            raw = row and row["head"]
        status, why, stop = no_reply_outcome(value, content.auto_reason, raw,
                                             content.no_reply_sender)
        if status is MailStatus.NO_REPLY:  # the loop guard or a list header decided
            sources["needs_reply"] = FieldSource(source="rules", confidence=None)
        updates["classification_sources"] = json.dumps(sources)
        if stop:  # the index step will not run for it
            updates["index_status"] = str(IndexStatus.SKIPPED)
        classified = event("classified", {
            "category": updates["category"], "priority": updates["priority"],
            "language": updates["language"], "needs_reply": updates["needs_reply"],
            "defaulted": labels.defaulted, "prompt_version": labels.version,
            "sources": sources})
        return Classified(status, why or labels.reason, stop,
                          {**labels.detail, **{k: updates[k] for k in EMAIL_COLUMNS}},
                          [*labels.events, classified], updates)


def _llm_detail(result: TaskResult[Classification], content: MailContent) -> JsonObject:
    return {"outcome": str(result.outcome), "attempts": result.attempts,
            "model": result.model, "duration_ms": round(result.duration * 1000, 1),
            "prompt_version": result.prompt_version, "source": content.source}


def _answered(result: TaskResult[Classification], content: MailContent,
              team: TeamView | None, ruled: str | None) -> _Labels:
    """The LLM's answer (or its defaults), with the fields the history or a rule decided."""
    assert result.value is not None  # OK or DEFAULTED (classification always has defaults)
    detail = _llm_detail(result, content)
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
    return _Labels(value, result.prompt_version, defaulted,
                   result.reason if defaulted else None, result.events, detail, sources)


def _decided_by_history(content: MailContent, team: TeamView, started: float,
                        rule: str | None, event: EventFactory) -> _Labels:
    """Every field decided by the team's examples: no LLM call at all. ``duration_ms``:
    from reading the examples to the decision (embedding included)."""
    votes = team.decision.votes
    subject_line = (" ".join(content.subject.split())
                    or " ".join(content.body.split())[:120])
    value = Classification(
        category=field_value("category", votes["category"].value),
        priority=field_value("priority", votes["priority"].value),
        language=Language.OTHER,  # set by the identifier in Classifier._labelled
        summary=(subject_line or "(no subject)")[:SUMMARY_MAX],
        needs_reply=field_value("needs_reply", votes["needs_reply"].value))
    sources = {name: team.source(name) for name in votes}
    summary = team.summary()
    ruled = [name for name, vote in votes.items() if vote.source == "rules"]
    reason = "decided by the team's labelled examples" + "".join(
        f"; {name} by the rules ({rule})" for name in ruled)
    skipped = event("llm_skipped", {"task": "classify", "source": "history",
                                    "reason": reason, "history": summary})
    detail = {"outcome": "history", "source": "history", "history": summary,
              "duration_ms": round((time.monotonic() - started) * 1000, 1)}
    return _Labels(value, HISTORY_VERSION, False, None, [skipped], detail, sources)
