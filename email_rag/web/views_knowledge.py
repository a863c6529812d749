"""The team's knowledge in the web admin (issue 41; docs/knowledge.md): the articles (list,
upload a file, write one, view its passages and history, edit, disable / enable, delete) and
the knowledge candidates proposed from sent replies (edit, approve, drop).

Admins change; staff may read the articles of their mailboxes and the global ones (a draft's
sources link to ``/admin/knowledge/ID#pN``). Every change goes through the stores the CLI uses
(``knowledge.articles.ArticleStore``, ``knowledge.candidates.Candidates``): one transaction
with its audit event each, versions counted one way. An uploaded file is read by the CLI's
parser (``knowledge.documents.parse``): one file, one article (origin ``web``). Article and
mail text is untrusted: the templates print it as text (escaped, bidi controls shown).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| upload: unknown type, empty, no text, broken or encrypted file | no: refused, the reason names the file, never its text | yes: nothing stored | fix the file, upload again |
| upload larger than ``MAX_UPLOAD_BYTES`` | no: refused (a request above the desk's request limit: 413 unread) | yes: nothing stored | split it, or import it with the CLI |
| edit of a version someone changed meanwhile | after reloading | yes: refused, nothing saved | the page shows the current version |
| the embedder is down while saving | no: stored, found by words only until the next edit | yes | edit it again later |
| the article / candidate is gone (deleted meanwhile, wrong id) | no | yes: 404 page / refused | - |
| a candidate decided meanwhile (approved or dropped elsewhere) | no: refused | yes: nothing written | - |
| delete without the confirm box | no: refused | yes: nothing deleted | tick it and delete again |
| staff post any change | no: 403 | yes: nothing written | - |
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Request, UploadFile
from fastapi.responses import RedirectResponse

from ..core.catalog import N_
from ..core.errors import BadInputError, DraftNotFoundError
from ..db.audit import AuditEntry, events_for
from ..knowledge import documents
from ..knowledge.articles import Article, ArticleNotFoundError, ArticleStatus, ArticleStore, Origin
from ..knowledge.candidates import Candidates, CandidateStatus
from ..review import answers
from .render import page, tr_known
from .render import tr as _tr
from .security import AdminUser, FormInt, FormStr, StaffUser, flash

router = APIRouter()

MAX_UPLOAD_BYTES = documents.MAX_FILE_BYTES  # the CLI's limit; the request limit may be lower
GLOBAL = "global"  # the scope filter / form value of an article of every mailbox

# The stores' refusals (English, made with values) read back for the reader's language.
REFUSALS = (
    N_("Someone changed this knowledge article meanwhile; nothing was saved. Reload it and "
       "edit the current version."),
    N_("A knowledge article needs a title and a text."),
    N_("The knowledge article has no text to search."),
    N_("The title (at most %(title)s characters) or the text (at most %(body)s) of the "
       "knowledge article is too long."),
    N_("A candidate needs a title, a question and an answer."),
    N_("The candidate was edited meanwhile; nothing was approved. Look at it again."),
    N_("Knowledge candidate %(id)s was %(status)s already; nothing was changed."),
    N_("There is no knowledge candidate %(id)s."),
    N_("%(file)s: the file is empty"),
    N_("%(file)s: no text found (a scanned image or an empty document?)"),
    N_("%(file)s: no text in the PDF (a scanned image?)"),
    N_("%(file)s: the PDF is encrypted; save it without a password and import it again"),
    N_("%(file)s: unreadable PDF (%(why)s)"),
    N_("%(file)s: not a Word document (%(why)s)"),
    N_("%(file)s: unreadable Word document (%(why)s)"),
    N_("%(file)s: refused: %(why)s"),
    N_("%(file)s: %(chars)s characters of text, above the limit of %(limit)s; split it into "
       "several files"),
)


def _svc(request: Request):
    return request.app.state.pool.get()


def _store(svc) -> ArticleStore:
    return ArticleStore(svc.db, svc.embedder)


def _refused(request: Request, user, e: Exception) -> str:
    return _tr(request, user, "Nothing was changed: %(why)s",
               why=tr_known(request, str(e.args[0]) if e.args else str(e), REFUSALS))


def _readable(user, article: Article) -> bool:
    """Admins read every article; staff the global ones and their mailboxes' own."""
    return (user.is_admin or user.mailbox_ids is None or article.mailbox_id is None
            or article.mailbox_id in user.mailbox_ids)


def _article(request: Request, user, svc, article_id: int) -> Article:
    """The article, or the 404 page (also for an article of a mailbox staff do not work)."""
    try:
        article = _store(svc).get(article_id)
    except ArticleNotFoundError:
        article = None
    if article is None or not _readable(user, article):
        raise DraftNotFoundError(_tr(request, user, "There is no knowledge article %(id)s.",
                                     id=article_id))
    return article


def _scope(request: Request, user, svc, value: str) -> int | None:
    """The mailbox an article is for (a form's ``mailbox_id``): empty or ``global`` is every
    mailbox."""
    if value in ("", GLOBAL):
        return None
    ids = {b.id for b in answers.mailboxes(svc)}
    if not value.isdigit() or int(value) not in ids:
        raise BadInputError(_tr(request, user, "There is no such mailbox."))
    return int(value)


def _language(body: str, fallback: str | None = None) -> str | None:
    return documents.language_of(body) or fallback


# --- the list, uploading, writing ---


@router.get("/admin/knowledge")
def knowledge_page(request: Request, user: StaffUser, status: str = "", origin: str = "",
                   mailbox: str = ""):
    svc = _svc(request)
    boxes = answers.mailboxes(svc)
    names = {b.id: b.name for b in boxes}
    articles = [a for a in _store(svc).list() if _readable(user, a)
                and (not status or str(a.status) == status)
                and (not origin or str(a.origin) == origin)
                and (not mailbox or (mailbox == GLOBAL and a.mailbox_id is None)
                     or str(a.mailbox_id) == mailbox)]
    pending = (len(Candidates(svc.db).list(CandidateStatus.PENDING)) if user.is_admin else 0)
    return page(request, "knowledge.html", articles=articles, names=names,
                mailboxes=[b for b in boxes if user.mailbox_ids is None
                           or b.id in user.mailbox_ids],
                statuses=list(ArticleStatus), origins=list(Origin),
                chosen={"status": status, "origin": origin, "mailbox": mailbox},
                pending=pending, max_upload=min(MAX_UPLOAD_BYTES,
                                                request.app.state.settings.web_max_request_bytes),
                global_key=GLOBAL, active=ArticleStatus.ACTIVE)


@router.post("/admin/knowledge/upload")
def upload(request: Request, user: AdminUser,
           file: Annotated[UploadFile, File()], mailbox_id: FormStr = ""):
    svc = _svc(request)
    name = Path(file.filename or "").name
    try:
        scope = _scope(request, user, svc, mailbox_id)
        data = file.file.read(MAX_UPLOAD_BYTES + 1)
        if len(data) > MAX_UPLOAD_BYTES:
            raise BadInputError(_tr(request, user, "%(file)s is larger than %(limit)s bytes; "
                                    "split it or import it with the command line.",
                                    file=name, limit=MAX_UPLOAD_BYTES))
        kind = documents.kind_of(Path(name))
        if kind is None:
            raise BadInputError(_tr(request, user, "%(file)s: this type cannot be read; "
                                    "known: %(known)s", file=name,
                                    known=", ".join(sorted(documents.KINDS))))
        doc = documents.parse(name, kind, data)
        article_id = _store(svc).create(scope, Origin.WEB, doc.title, doc.text, user.actor,
                                        doc.language)
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
        return RedirectResponse("/admin/knowledge", status_code=303)
    flash(request, "ok", _tr(request, user, "Article “%(title)s” added from %(file)s.",
                             title=doc.title, file=name), href=f"/admin/knowledge/{article_id}")
    return RedirectResponse(f"/admin/knowledge/{article_id}", status_code=303)


@router.post("/admin/knowledge/create")
def create(request: Request, user: AdminUser, mailbox_id: FormStr = "", title: FormStr = "",
           body: FormStr = ""):
    svc = _svc(request)
    try:
        scope = _scope(request, user, svc, mailbox_id)
        article_id = _store(svc).create(scope, Origin.WEB, title, body, user.actor,
                                        _language(body))
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
        return RedirectResponse("/admin/knowledge", status_code=303)
    flash(request, "ok", _tr(request, user, "Article “%(title)s” added.",
                             title=" ".join(title.split())))
    return RedirectResponse(f"/admin/knowledge/{article_id}", status_code=303)


# --- candidates (before /admin/knowledge/{article_id}: its path would take the word) ---


def _candidates_page(status: str = "") -> str:
    return f"/admin/knowledge/candidates?status={status}" if status else \
        "/admin/knowledge/candidates"


@router.get("/admin/knowledge/candidates")
def candidates_page(request: Request, user: AdminUser, status: str = "pending"):
    svc = _svc(request)
    try:
        chosen = CandidateStatus(status)
    except ValueError:
        chosen = CandidateStatus.PENDING
    names = {b.id: b.name for b in answers.mailboxes(svc)}
    return page(request, "knowledge_candidates.html", names=names, chosen=str(chosen),
                statuses=list(CandidateStatus), candidates=Candidates(svc.db).list(chosen),
                pending=CandidateStatus.PENDING)


@router.post("/admin/knowledge/candidates/collect")
def collect(request: Request, user: AdminUser):
    found = Candidates(_svc(request).db).collect(user.actor)
    flash(request, "ok" if found else "info",
          _tr(request, user, "%(n)s sent reply(s) proposed as knowledge.", n=found) if found
          else _tr(request, user, "Every sent reply was proposed already."))
    return RedirectResponse(_candidates_page(), status_code=303)


@router.post("/admin/knowledge/candidates/{candidate_id}/edit")
def edit_candidate(request: Request, user: AdminUser, candidate_id: int, title: FormStr = "",
                   question: FormStr = "", answer: FormStr = "", then: FormStr = ""):
    svc = _svc(request)
    candidates = Candidates(svc.db, svc.embedder)
    try:
        current = candidates.get(candidate_id)
        if (" ".join(title.split()), question.strip(), answer.strip()) != (
                current.title, current.question, current.answer):
            candidates.edit(candidate_id, title, question, answer, user.actor)
        if then == "approve":
            article_id = candidates.approve(candidate_id, user.actor)
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
        return RedirectResponse(_candidates_page(), status_code=303)
    if then == "approve":
        flash(request, "ok", _tr(request, user, "Candidate “%(title)s” approved: it is an "
                                 "article now.", title=" ".join(title.split())),
              href=f"/admin/knowledge/{article_id}")
    else:
        flash(request, "ok", _tr(request, user, "Candidate “%(title)s” saved.",
                                 title=" ".join(title.split())))
    return RedirectResponse(_candidates_page(), status_code=303)


@router.post("/admin/knowledge/candidates/{candidate_id}/drop")
def drop_candidate(request: Request, user: AdminUser, candidate_id: int):
    candidates = Candidates(_svc(request).db)
    try:
        title = candidates.get(candidate_id).title
        candidates.drop(candidate_id, user.actor)
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
    else:
        flash(request, "ok", _tr(request, user, "Candidate “%(title)s” dropped: it does not "
                                 "become knowledge.", title=title))
    return RedirectResponse(_candidates_page(), status_code=303)


# --- one article ---


@router.get("/admin/knowledge/{article_id}")
def article_page(request: Request, user: StaffUser, article_id: int):
    svc = _svc(request)
    article = _article(request, user, svc, article_id)
    names = {b.id: b.name for b in answers.mailboxes(svc)}
    return page(request, "knowledge_article.html", article=article, names=names,
                passages=_store(svc).passages(article),
                events=AuditEntry.from_rows(events_for(svc.db, "knowledge_article", article.id))
                if user.is_admin else [], active=ArticleStatus.ACTIVE, disabled=ArticleStatus.DISABLED)


@router.post("/admin/knowledge/{article_id}/edit")
def edit_article(request: Request, user: AdminUser, article_id: int, version: FormInt,
                 title: FormStr = "", body: FormStr = ""):
    svc = _svc(request)
    article = _article(request, user, svc, article_id)
    try:
        changed = _store(svc).edit(article_id, version, title, body, user.actor,
                                   _language(body, article.language))
    except ArticleNotFoundError:
        raise DraftNotFoundError(_tr(request, user, "There is no knowledge article %(id)s.",
                                     id=article_id)) from None
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
    else:
        flash(request, "ok" if changed else "info",
              _tr(request, user, "Article saved as version %(version)s.", version=version + 1)
              if changed else _tr(request, user, "The article was already like this; nothing "
                                  "changed."))
    return RedirectResponse(f"/admin/knowledge/{article_id}", status_code=303)


@router.post("/admin/knowledge/{article_id}/status")
def set_status(request: Request, user: AdminUser, article_id: int, to: FormStr = ""):
    svc = _svc(request)
    _article(request, user, svc, article_id)
    try:
        status = ArticleStatus(to)
    except ValueError:
        raise BadInputError(_tr(request, user, "There is no such status.")) from None
    changed = _store(svc).set_status(article_id, status, user.actor)
    if not changed:
        flash(request, "info", _tr(request, user, "The article was already like this; nothing "
                                   "changed."))
    elif status == ArticleStatus.DISABLED:
        flash(request, "ok", _tr(request, user, "Article disabled: drafts do not use it until "
                                 "it is enabled again."))
    else:
        flash(request, "ok", _tr(request, user, "Article enabled: drafts may use it again."))
    return RedirectResponse(f"/admin/knowledge/{article_id}", status_code=303)


@router.post("/admin/knowledge/{article_id}/delete")
def delete_article(request: Request, user: AdminUser, article_id: int, confirm: FormStr = ""):
    svc = _svc(request)
    article = _article(request, user, svc, article_id)
    if confirm != "yes":
        flash(request, "error", _tr(request, user, "Nothing was deleted: tick the box to "
                                    "confirm first."))
        return RedirectResponse(f"/admin/knowledge/{article_id}#delete", status_code=303)
    _store(svc).delete(article_id, user.actor)
    flash(request, "ok", _tr(request, user, "Article “%(title)s” deleted.",
                             title=article.title))
    return RedirectResponse("/admin/knowledge", status_code=303)
