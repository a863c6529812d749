"""The draft step: retrieve, then adapt - a reply carried from the team's own sources.

The model cannot know a team's policies; it can only carry facts from the sources it is
given. So the draft is built from sources (``email_rag.llm.sources``: knowledge articles,
saved replies, approved cases, the policy of approved past replies) that clear a relevance
bar; a source in the customer's language is carried as written, one in another language is
translated line by line by the model (``email_rag.llm.adapt``: every number, code, address
and URL checked to survive). Each line of the body keeps the source it came from (the trace,
stored with the draft, shown per sentence on the desk). When no source answers, the reply is
the honest one (``email_rag.llm.no_source``): it asks or says who answers by when, and the
desk marks it "no source". Greeting and sign-off come from the mailbox's settings
(``email_rag.llm.reply_frame``). The draft is written with the checkpoint: safe to repeat.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| mail needs no reply / loop guard | - | yes | NO_REPLY, stop (no draft) |
| nobody to reply to by the reply rule (``addresses.choose_reply``) | - | yes | MANUAL, stop: no draft nobody could send |
| sources in the customer's language | no LLM call | yes | draft pending_review, basis "sources" |
| a source in another language (or staff asked for changes when regenerating): the model writes its lines in the customer's language, every line's facts kept | policy: once, the changed line named | yes | draft, basis "sources" |
| a translated line changed a fact or the language twice | - | yes | that line dropped (audited: kinds, no text) |
| nothing usable left of the sources, or the draft repeats the mail / is in the wrong language | - | yes | MANUAL with the sources and the reason: no draft offered |
| a line states a fact no source, mail or thread supports (``claims.unsupported``) | - | yes | the line is dropped, the fact's kind recorded |
| no source clears its bar | no LLM call | yes | the no-source reply, basis "no_source" |
| LLM timeout twice / unusable answer twice, nothing salvageable | policy | yes | MANUAL, not confirmed: admin retry re-runs it |
| 429 beyond the bound, 5xx, connection | job retry cycle | yes | re-run later |
| crash after the LLM answered, before the checkpoint | job re-runs the step | yes: nothing stored | one more LLM call |
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from email.utils import formataddr
from typing import Any

from ..classification.values import LANGUAGE_NAMES, Language
from ..core.states import Actor, MailStatus, Step
from ..db import sql
from ..llm import draft_checks, no_source
from ..llm.adapt import Adapted, adapt_task, salvage
from ..llm.case_facts import SIGNATURE
from ..llm.claims import unsupported
from ..llm.mail_input import MailContent, mail_content
from ..llm.policy import PolicyLimits, TaskOutcome, run_task
from ..llm.reply_frame import ReplyFrame
from ..llm.sources import Bars, Source, candidates, select
from ..llm.trace import Traced
from ..mail.addresses import stored_reply
from ..mail.language import identify
from ..mail.placeholders import customer_name, order_number, render
from .contract import StepContext, StepOutcome

MAX_REPLY_CHARS = 5000
SOURCE_CHARS = 1800  # of one source carried into a draft


@dataclass
class Written:
    """The body of a draft, line by line with its sources, or why there is none."""

    basis: str  # "sources" | "no_source"
    lines: list[Traced] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # kinds of what was dropped, no text
    no_draft: str = ""  # why no draft is offered (MANUAL)
    confirmed: bool = True  # False: an LLM outcome an admin retry may change
    llm: dict[str, Any] = field(default_factory=dict)  # the adaptation's outcome, if any
    events: list[Any] = field(default_factory=list)
    hedged: bool = False  # the sources barely cleared their bar: the follow-up line is added

    @property
    def body(self) -> str:
        return "\n".join(t.text for t in self.lines)


def language_name(code: str | None) -> str:
    """How a prompt names a language ("German"); "the customer's language" when unknown."""
    try:
        return LANGUAGE_NAMES[Language(code or "other")]
    except ValueError:
        return LANGUAGE_NAMES[Language.OTHER]


def language_of(text: str) -> str | None:
    guess = identify(text)
    return guess.code if guess.confidence > 0 else None


def evidence(content: MailContent, retrieved: dict[str, Any]) -> str:
    """What is true of this customer: this mail, its thread with our replies, the history."""
    own = [content.subject or "", content.body or ""]
    for t in retrieved.get("thread") or []:
        own += [str(t.get("subject") or ""), str(t.get("snippet") or ""),
                str(t.get("sent_reply") or "")]
    own += [str(h.get("subject") or "") for h in retrieved.get("sender_history") or []]
    return "\n".join(own)


def source_lines(source: Source, values: dict[str, str | None]) -> tuple[list[str], int]:
    """The lines a source gives the draft, its placeholders filled from the mail (``values``;
    a line with one left unfilled is dropped), signature lines left out, cut at
    ``SOURCE_CHARS`` on a line's end; (lines, lines dropped for a placeholder)."""
    out, used, unfilled = [], 0, 0
    for raw in source.text.splitlines():
        rendered = render(raw.strip(), values)
        line = rendered.text
        if rendered.missing:
            unfilled += 1
            continue
        if not line or SIGNATURE.match(line):
            continue
        if used + len(line) > SOURCE_CHARS and out:
            break
        out.append(line)
        used += len(line)
    return out, unfilled


def adapt(ctx: StepContext, given: list[str], source: Source, language: str, register: str,
          written: Written) -> list[str]:
    """The source's lines in the customer's language (the model translates)."""
    task = adapt_task(given, language, (language_name(source.language), language_name(language)),
                      register, ctx.email.draft_instruction)
    result = run_task(ctx.services.llm, task, PolicyLimits.from_settings(ctx.services.settings),
                      event=lambda name, detail: ctx.event(name, detail),
                      audit=ctx.services.audit)
    written.events += result.events
    written.llm = {"outcome": str(result.outcome), "attempts": result.attempts,
                   "model": result.model, "prompt_version": result.prompt_version,
                   "duration_ms": round(result.duration * 1000, 1)}
    if result.outcome is TaskOutcome.OK and result.value is not None:
        return result.value.lines
    if result.outcome is TaskOutcome.INVALID and result.last_text:
        kept: Adapted = salvage(result.last_text, given, language)
        written.removed += [f"translation: {why}" for why in kept.dropped]
        return kept.lines
    written.confirmed = False
    written.no_draft = result.reason or "the model gave no usable translation twice"
    return []


def placeholder_values(ctx: StepContext, content: MailContent) -> dict[str, str | None]:
    """What the team's placeholders are filled with for this mail (no agent yet)."""
    return {"customer_name": customer_name(ctx.email.from_name, content.sender),
            "order_number": order_number(content.subject, content.body), "agent_name": None}


def from_sources(ctx: StepContext, chosen: list[Source], language: str, frame: ReplyFrame,
                 own: str, values: dict[str, str | None]) -> Written:
    written = Written("sources", [Traced(no_source.THANKS.get(frame.language,
                                                              no_source.THANKS["en"]), None)],
                      chosen)
    shared = "\n".join(s.text for s in chosen)
    for source in chosen:
        same = (source.language in (None, language) or language not in no_source.THANKS) \
            and not ctx.email.draft_instruction
        given, unfilled = source_lines(source, values)
        written.removed += ["unfilled placeholder"] * unfilled
        lines = given if same or not given else adapt(ctx, given, source, language,
                                                       frame.register, written)
        for line in lines:
            # the sources are the team's (a past reply's case numbers are already cut out):
            # a code or a phone number in them is the team's, not another customer's
            found = unsupported(line, own, shared, knowledge=shared)
            if found:
                written.removed += [f"unsupported {c.kind}" for c in found]
                continue
            written.lines.append(Traced(line, source.ref))
    if not any(t.ref for t in written.lines) and not written.no_draft:
        written.no_draft = "nothing of the sources was left after the checks"
    return written


def write_body(ctx: StepContext, content: MailContent, retrieved: dict[str, Any],
               frame: ReplyFrame, language: str) -> tuple[Written, list[Source]]:
    s = ctx.services.settings
    found = candidates(retrieved, language_of)
    bars = Bars(s.draft_bar_knowledge, s.draft_bar_past_reply, s.draft_sources,
                s.draft_source_margin)
    chosen = select(found, bars)
    if not chosen:
        hours = service_hours(ctx)
        body = no_source.reply_body(frame.language, f"{content.subject}\n{content.body}", hours)
        return Written("no_source", [Traced(x, None) for x in body.splitlines()]), found
    written = from_sources(ctx, chosen, language, frame, evidence(content, retrieved),
                           placeholder_values(ctx, content))
    if not written.no_draft and max(c.lead(bars) for c in chosen) < s.draft_sure_lead:
        written.hedged = True
        written.lines.append(Traced(no_source.follow_up(frame.language, service_hours(ctx)), None))
    if not written.no_draft:
        text = frame.compose(written.body)
        problem = (draft_checks.echo(text, content.body)
                   or draft_checks.placeholder(text)
                   or draft_checks.language(written.body, language))
        if problem:
            written.no_draft = problem
    return written, found


def service_hours(ctx: StepContext) -> float | None:
    """The mailbox's first-response target in business hours, if it has one."""
    try:
        mb = ctx.services.mailbox(ctx.mailbox_name) if ctx.mailbox_name else None
    except KeyError:
        mb = None
    level = getattr(mb, "service_level", None)
    return level.first_response_hours if level is not None else None


def frame_of(ctx: StepContext, body: str, sender: str, language: str) -> ReplyFrame:
    """Greeting and sign-off from the mailbox's settings (signature, team name)."""
    name = ctx.mailbox_name
    if name is None:  # not read with the mail (a step run outside the runner)
        row = ctx.services.db.fetchone(sql("sends_mailbox_of_mail"), {"id": ctx.email.mailbox_id})
        name = None if row is None else str(row["name"])
    signature = team = ""
    if name is not None:
        try:
            mb = ctx.services.mailbox(name)
            signature, team = mb.signature, mb.team_name
        except KeyError:
            pass
    return ReplyFrame.for_mail(body, sender, language, signature, team)


def skipped(ctx: StepContext) -> StepOutcome | None:
    mail = ctx.email
    if mail.auto_reason or mail.needs_reply in (0, False):
        reason = (f"no draft: loop guard ({mail.auto_reason})" if mail.auto_reason
                  else "no draft: the classification says no reply is needed")
        return StepOutcome(detail={"skipped": reason}, mail_status=MailStatus.NO_REPLY,
                           status_reason=reason, stop=True)
    address = stored_reply(mail.as_row())
    if not address.ok:
        reason = f"no draft: {address.rule}; a human decides what to do with it"
        return StepOutcome(detail={"skipped": reason}, mail_status=MailStatus.MANUAL,
                           status_reason=reason, stop=True)
    return None


def stored(written: Written, found: list[Source], retrieved: dict[str, Any]) -> dict[str, Any]:
    """The draft's sources column: the sources with their refs, the trace, what was dropped,
    the candidates considered (no text), the thread and history the retrieval gave."""
    return {"basis": written.basis, "hedged": written.hedged,
            "sources": [{**s.as_dict(), "subject": s.title, "score": round(s.relevance, 3)}
                        for s in written.sources],
            "trace": [t.as_dict() for t in written.lines],
            "removed": written.removed,
            "considered": [{"kind": s.kind, "origin": s.origin, "title": s.title,
                            "relevance": round(s.relevance, 3)} for s in found[:8]],
            "thread": retrieved.get("thread") or [],
            "sender_history": retrieved.get("sender_history") or [],
            "reduced": bool(retrieved.get("reduced")), "missing": retrieved.get("missing") or []}


def run(ctx: StepContext) -> StepOutcome:
    stop = skipped(ctx)
    if stop is not None:
        return stop
    mail = ctx.email
    content = mail_content(mail, ctx.services.settings.llm_max_input_chars)
    retrieved = dict(ctx.confirmed.get(str(Step.RETRIEVE), {}) or {})
    language = mail.language or "other"
    sender = formataddr((mail.from_name or "", content.sender)) if content.sender \
        else content.sender
    frame = frame_of(ctx, content.body, sender, language)
    written, found = write_body(ctx, content, retrieved, frame, language)
    sources = stored(written, found, retrieved)
    detail = {"basis": written.basis, "sources": [s.origin for s in written.sources],
              "removed": written.removed, **({"llm": written.llm} if written.llm else {})}
    if written.no_draft:
        reason = f"no draft: {written.no_draft}; the sources are on the mail's page"
        return StepOutcome(detail={**detail, "no_draft": written.no_draft, "kept": sources},
                           mail_status=MailStatus.MANUAL, status_reason=reason[:1000],
                           confirmed=written.confirmed, stop=True, events=written.events)
    reply = frame.compose(written.body)[:MAX_REPLY_CHARS]
    subject = content.subject
    model = written.llm.get("model") or ""
    version = written.llm.get("prompt_version") or f"{written.basis}.v1"

    def write(cur: Any) -> None:
        n = cur.fetchone(sql("drafts_next_version"), {"email_id": ctx.email_id})["v"]
        ctx.services.stores.drafts.supersede_open(cur, ctx.email_id, Actor.WORKER,
                                                  "a newer draft was written")
        cur.execute(sql("drafts_insert"), {
            "email_id": ctx.email_id, "version": n, "subject": f"Re: {subject}"[:990],
            "body": reply, "sources": json.dumps(sources, default=str),
            "language": mail.language, "prompt_version": version, "model": model,
            "check_flags": None})

    events = [*written.events, ctx.event("draft_created", {
        "basis": written.basis, "sources": [s.origin for s in written.sources],
        "removed": written.removed, "chars": len(reply)})]
    return StepOutcome(detail=detail, mail_status=MailStatus.DRAFT_READY, write=write,
                       events=events)
