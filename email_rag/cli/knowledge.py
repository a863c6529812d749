"""``email-rag knowledge ...``: the team's knowledge as a source of drafts (docs/knowledge.md).

``import PATH [--mailbox NAME]``: a folder (recursively) or one file, its result a run result
(core/run_result.py): completed (exit 0), completed with failures (2: listed; the same command
tries them again), interrupted (2: SIGTERM/SIGINT; the same command finishes it). ``list``,
``show ID``, ``disable ID``, ``enable ID``,
``delete ID``, ``search TEXT [--mailbox NAME]``, ``sync-saved-replies``; ``candidates
[list|show ID|approve ID|edit ID|drop ID]``: sent replies proposed as knowledge (list first
proposes the sent replies that have none yet).
"""

from __future__ import annotations

import shlex
import threading

from ..core.actors import command_line
from ..core.errors import BadInputError
from ..core.run_result import RunResult
from ..db import sql
from ..knowledge.articles import ArticleStatus, ArticleStore
from ..knowledge.candidates import Candidates, CandidateStatus
from ..knowledge.importer import Importer, ImportStatus
from ..knowledge.saved_replies import SavedReplySync
from ..knowledge.search import KnowledgeSearch
from .output import ExitCode, Outcome, stop_on_signals, table


def register(sub, common) -> None:
    p = sub.add_parser("knowledge", parents=[common],
                       help="the team's knowledge (articles) that drafts are written from")
    ksub = p.add_subparsers(dest="knowledge_command", metavar="ACTION", required=True)
    imp = ksub.add_parser("import", parents=[common],
                          help="import a folder (recursively) or a file: .md .html .txt .docx "
                               ".pdf; again: only what changed, removes what is gone")
    imp.add_argument("path")
    imp.add_argument("--mailbox", help="the mailbox (name or address) it is for; default: all")
    imp.add_argument("--by", default=None, help="who imports (audited; default: your login)")
    imp.set_defaults(handler=run_import)
    ls = ksub.add_parser("list", parents=[common], help="list the articles")
    ls.add_argument("--mailbox", help="only this mailbox's own articles")
    ls.add_argument("--global", dest="only_global", action="store_true",
                    help="only the articles of every mailbox")
    ls.set_defaults(handler=run_list)
    show = ksub.add_parser("show", parents=[common], help="an article and its passages")
    show.add_argument("id", type=int)
    show.set_defaults(handler=run_show)
    for name, what in (("disable", "not searchable any more (kept)"),
                       ("enable", "searchable again"), ("delete", "delete it and its passages")):
        a = ksub.add_parser(name, parents=[common], help=f"an article: {what}")
        a.add_argument("id", type=int)
        a.add_argument("--by", default=None, help="who (audited; default: your login)")
        a.set_defaults(handler=run_change, action=name)
    s = ksub.add_parser("search", parents=[common], help="the passages a draft would be given")
    s.add_argument("text")
    s.add_argument("--mailbox", help="a mailbox's view (its own and the global articles)")
    s.add_argument("--limit", type=int, default=8)
    s.set_defaults(handler=run_search)
    register_candidates(ksub, common)
    sync = ksub.add_parser("sync-saved-replies", parents=[common],
                           help="bring the saved replies' articles in line (idempotent)")
    sync.add_argument("--by", default=None)
    sync.set_defaults(handler=run_sync)


def mailbox_id(svc, name: str | None) -> int | None:
    if not name:
        return None
    row = svc.db.fetchone(sql("knowledge_mailbox_id"), {"name": name})
    if row is None:
        raise BadInputError(f"There is no mailbox {name!r}. Nothing was done.")
    return int(row["id"])


def run_import(args, svc) -> Outcome:
    """The import as a run result (core/run_result.py): completed, completed with failures
    (the files listed; the same command retries them), interrupted (SIGTERM/SIGINT between two
    files; the same command finishes it)."""
    scope = mailbox_id(svc, args.mailbox)
    again = "email-rag knowledge import " + shlex.quote(args.path) + (
        f" --mailbox {shlex.quote(args.mailbox)}" if args.mailbox else "")
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        r = Importer(svc.db, svc.embedder, stop.is_set).run(args.path, scope,
                                                            command_line(args.by))
    finally:
        restore()
    done = ", ".join(f"{n} {k}" for k, n in sorted(r.outcomes.items())) or "nothing new"
    result = RunResult.decide(
        processed=r.processed, failed=r.failed, remaining=r.remaining,
        interrupted=r.status == ImportStatus.INTERRUPTED, item="file",
        next=again if r.resume_available else None,
        what=f"Articles: {done}; {r.removed} removed (their file is gone).",
        safe="Every imported file is whole and searchable; a file is never half indexed.")
    data = {"importId": r.import_id, "removed": r.removed, "resumed": r.resumed,
            "outcomes": r.outcomes, "failures": [{"path": p, "error": e} for p, e in r.failures]}
    listing = "\n".join(f"failed: {p}: {e}" for p, e in r.failures)
    return Outcome.of(result, "", data, listing)


def run_list(args, svc) -> Outcome:
    store = ArticleStore(svc.db, svc.embedder)
    every = not (args.mailbox or args.only_global)
    articles = store.list(mailbox_id(svc, args.mailbox), every=every)
    rows = [a.as_dict() for a in articles]
    return Outcome(ExitCode.OK, f"{len(rows)} article(s).", {"articles": rows},
                   table(rows, ["id", "status", "origin", "mailbox_id", "version", "passages",
                                "language", "title"], fit=("title",)))


def run_show(args, svc) -> Outcome:
    store = ArticleStore(svc.db, svc.embedder)
    article = store.get(args.id)
    passages = store.passages(article)
    text = "\n\n".join(f"[p{p.passage_no}] {p.heading}\n{p.text}" for p in passages)
    data = {**article.as_dict(), "passages": [
        {"passage_no": p.passage_no, "heading": p.heading, "text": p.text,
         "embedded": p.embedder is not None} for p in passages]}
    return Outcome(ExitCode.OK, f"Article {article.id} ({article.status}, version "
                   f"{article.version}, {len(passages)} passage(s)): {article.title}", data, text)


def run_change(args, svc) -> Outcome:
    store = ArticleStore(svc.db, svc.embedder)
    actor = command_line(args.by)
    if args.action == "delete":
        store.delete(args.id, actor)
        return Outcome(ExitCode.OK, f"Deleted article {args.id}.", {"id": args.id})
    status = ArticleStatus.DISABLED if args.action == "disable" else ArticleStatus.ACTIVE
    changed = store.set_status(args.id, status, actor)
    return Outcome(ExitCode.OK, f"Article {args.id} is {status}"
                   + ("." if changed else " already; nothing changed."),
                   {"id": args.id, "status": str(status), "changed": changed})


def run_search(args, svc) -> Outcome:
    hits = KnowledgeSearch(svc.db, svc.embedder).search(mailbox_id(svc, args.mailbox),
                                                        args.text, args.limit)
    reduced = bool(getattr(hits, "reduced", False))
    rows = [{"ref": h.ref(), "score": round(h.score, 4), "cosine": round(h.cosine, 3),
             "title": h.title, "heading": h.heading} for h in hits]
    note = " (words only: the embedder is not reachable)" if reduced else ""
    return Outcome(ExitCode.OK, f"{len(rows)} passage(s){note}.",
                   {"reduced": reduced, "hits": [h.as_dict() for h in hits]},
                   table(rows, ["ref", "score", "cosine", "title", "heading"],
                         fit=("heading", "title")))


def run_sync(args, svc) -> Outcome:
    counts = SavedReplySync(svc.db, svc.embedder).sync_all(command_line(args.by))
    return Outcome(ExitCode.OK, f"Saved replies as knowledge: {counts['synced']} in step, "
                   f"{counts['removed']} article(s) of deleted replies removed.", counts)


def register_candidates(ksub, common) -> None:
    c = ksub.add_parser("candidates", parents=[common],
                        help="sent replies proposed as knowledge: list, show, approve, edit, drop")
    csub = c.add_subparsers(dest="candidates_command", metavar="ACTION")
    c.set_defaults(handler=run_candidates, candidates_command="list", status="pending")
    ls = csub.add_parser("list", parents=[common], help="the candidates (default: pending)")
    ls.add_argument("--status", default="pending",
                    choices=[str(s) for s in CandidateStatus])
    for name, what in (("show", "a candidate's question and answer"),
                       ("approve", "make it an article of its mailbox (origin case)"),
                       ("drop", "not knowledge: drop it")):
        a = csub.add_parser(name, parents=[common], help=what)
        a.add_argument("id", type=int)
        a.add_argument("--by", default=None, help="who decides (audited)")
    e = csub.add_parser("edit", parents=[common], help="change its title, question or answer")
    e.add_argument("id", type=int)
    e.add_argument("--title")
    e.add_argument("--question")
    e.add_argument("--answer")
    e.add_argument("--by", default=None, help="who edits (audited)")


def run_candidates(args, svc) -> Outcome:
    candidates = Candidates(svc.db, svc.embedder)
    action = args.candidates_command
    actor = command_line(getattr(args, "by", None))
    if action == "list":
        proposed = candidates.collect(actor)
        found = candidates.list(CandidateStatus(args.status))
        rows = [{"id": c.id, "mailbox_id": c.mailbox_id, "language": c.language,
                 "title": c.title} for c in found]
        return Outcome(ExitCode.OK, f"{len(rows)} {args.status} candidate(s)"
                       + (f" ({proposed} newly proposed from sent replies)." if proposed
                          else "."), {"proposed": proposed,
                                      "candidates": [c.as_dict() for c in found]},
                       table(rows, ["id", "mailbox_id", "language", "title"], fit=("title",)))
    if action == "show":
        c = candidates.get(args.id)
        return Outcome(ExitCode.OK, f"Candidate {c.id} ({c.status}): {c.title}", c.as_dict(),
                       f"Question:\n{c.question}\n\nAnswer:\n{c.answer}")
    if action == "edit":
        c = candidates.get(args.id)
        candidates.edit(args.id, args.title or c.title, args.question or c.question,
                        args.answer or c.answer, actor)
        return Outcome(ExitCode.OK, f"Candidate {args.id} edited; approve it to make it "
                       "knowledge.", {"id": args.id})
    if action == "approve":
        article_id = candidates.approve(args.id, actor)
        return Outcome(ExitCode.OK, f"Candidate {args.id} approved: article {article_id}.",
                       {"id": args.id, "article_id": article_id})
    candidates.drop(args.id, actor)
    return Outcome(ExitCode.OK, f"Candidate {args.id} dropped.", {"id": args.id})
