"""How the desk shows a stored value (a state, a category, a priority, a failure kind) in the
page's language: ``{{ d.status|label }}``. The English label is the msgid (extracted like every
other marked text); a value without a label is shown as it is stored, underscores as spaces."""

from __future__ import annotations

from ..sending.outcome import N_
from . import i18n

LABELS: dict[str, str] = {
    # mail states (core.states.MailStatus)
    "received": N_("received"),
    "classified": N_("classified"),
    "no_reply": N_("no reply"),
    "no_reply_suggested": N_("no reply suggested"),
    "draft_ready": N_("draft ready"),
    "approved": N_("approved"),
    "sent": N_("sent"),
    "rejected": N_("rejected"),
    "manual": N_("manual"),
    "failed": N_("failed"),
    "resolved": N_("resolved"),
    "history": N_("history"),
    # draft states (DraftStatus) beyond the mail's
    "pending_review": N_("pending review"),
    "stale": N_("stale"),
    "flagged": N_("flagged"),  # a queue filter: drafts the draft checks flagged
    "superseded": N_("superseded"),
    # send states (SendStatus) beyond the above
    "pending": N_("pending"),
    "attempted": N_("attempted"),
    "unknown": N_("unknown"),
    "bounced": N_("bounced"),
    # queue entries (JobState, JobKind)
    "queued": N_("queued"),
    "processing": N_("processing"),
    "done": N_("done"),
    "dead": N_("dead"),
    # a mailbox's history import (ingest/history_import.py)
    "running": N_("running"),
    "paused": N_("paused"),
    "process_email": N_("process mail"),
    "send_draft": N_("send reply"),
    "index_sync": N_("index sync"),
    "index_history": N_("index history"),
    "retention": N_("retention pass"),
    "privacy_forget": N_("privacy erasure"),
    # erasures (privacy_erasures.state) beyond the above
    "partial": N_("partial"),
    # what an erasure deletes (privacy.erasure.row_counts)
    "mails": N_("mails"),
    "drafts": N_("reply drafts"),
    "send_attempts": N_("send attempts"),
    "draft_edits": N_("saved edits"),
    "labelled_examples": N_("labelled examples"),
    "jobs": N_("queue entries"),
    # failure console kinds (review.console.KINDS) beyond the above
    "send_unknown": N_("send unknown"),
    "retrying": N_("retrying"),
    "partially_indexed": N_("partially indexed"),
    # categories (classification.values.Category)
    "billing": N_("billing"),
    "order": N_("order"),
    "technical": N_("technical"),
    "account": N_("account"),
    "complaint": N_("complaint"),
    "feedback": N_("feedback"),
    "notification": N_("notification"),
    "spam": N_("spam"),
    "other": N_("other"),
    # priorities (classification.values.Priority)
    "low": N_("low"),
    "normal": N_("normal"),
    "high": N_("high"),
    "urgent": N_("urgent"),
    # kinds of a draft's source (email_rag.llm.sources.Source.kind)
    "article": N_("article"),
    "saved_reply": N_("saved reply"),
    "case": N_("answered case"),
    "past_reply": N_("past reply"),
    # knowledge articles (knowledge.articles: ArticleStatus, Origin) and candidates
    "active": N_("active"),
    "disabled": N_("disabled"),
    "file": N_("imported file"),
    "web": N_("written in the web"),
    "dropped": N_("dropped"),
    # roles (core.states.UserRole)
    "staff": N_("staff"),
    "admin": N_("admin"),
}


def label(value: object) -> str:
    """The stored value as the page's language names it."""
    if value is None or value == "":
        return ""
    text = str(value)
    known = LABELS.get(text)
    return i18n.gettext(known) if known else text.replace("_", " ")
