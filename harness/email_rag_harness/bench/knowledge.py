"""Knowledge import and search speed: ``Importer`` and ``KnowledgeSearch`` on generated articles.

    email-rag bench knowledge [--mails 50] [--backend hashing|local] [--json]

``--mails`` articles (Markdown, six sections each) are written to a folder and imported with
the embedder of ``--backend`` (``local``: the multilingual USE model production runs);
then the same folder is imported again (every file unchanged), then 100 searches run over
the passages (each asking about the made-up names of one section). Checked first: one
article per file, the re-import changed nothing, and every search found its own section first.
(Quality on real questions is the paraphrase test of
tests/integration/test_knowledge_import_search_and_resume.py.)
"""

from __future__ import annotations

import random
import time
from typing import Any

from email_rag.knowledge.articles import ArticleStore
from email_rag.knowledge.importer import Importer, ImportStatus
from email_rag.knowledge.search import KnowledgeSearch
from email_rag.wiring.services import Services

from .common import CheckFailed, Report, Workspace, percentile, rate

SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "ze", "pu", "da", "fe", "go", "bi",
             "ju", "he", "wa", "xo", "ye", "ci")
WORDS = ("parcel return refund invoice warranty shipping delivery device battery account "
         "password order payment voucher exchange size colour repair cable charger").split()


def _articles(n: int, rnd: random.Random) -> tuple[dict[str, str], dict[str, str]]:
    """(file name -> text, section marker -> a question in its words). Each section has
    words of its own (made-up product names) among common ones, as real sections do."""
    out, questions = {}, {}
    seen: set[str] = set()  # each made-up name once (by its first five letters: the lexical
    # query's prefix)

    def name() -> str:
        while True:
            word = "".join(rnd.choice(SYLLABLES) for _ in range(3))
            if word[:5] not in seen:
                seen.add(word[:5])
                return word

    for a in range(n):
        sections = []
        for s in range(6):
            own = [name() for _ in range(4)]
            body = " ".join(f"The {rnd.choice(WORDS)} of the {own[i % 4]} {rnd.choice(WORDS)} "
                            f"takes {rnd.randint(2, 30)} days." for i in range(10))
            questions[f"q{a}x{s}"] = f"How long does the {own[0]} {own[1]} {own[2]} take?"
            sections.append(f"## {own[0].title()} {own[3]} q{a}x{s}\n\n{body}")
        out[f"article{a:03d}.md"] = f"# Article {a}\n\n" + "\n\n".join(sections)
    return out, questions


def run(args: Any) -> Report:
    n = args.mails or 50
    backend = args.backend
    rnd = random.Random(41)
    with Workspace("knowledge") as ws:
        db = ws.fresh()
        svc = Services(ws.settings(db, embedding_backend=backend))
        ws.on_exit(svc.close)
        folder = ws.tmp / "kb"
        folder.mkdir()
        files, questions = _articles(n, rnd)
        for name, text in files.items():
            (folder / name).write_text(text)
        svc.embedder.embed(["warm up"])
        started = time.perf_counter()
        first = Importer(svc.db, svc.embedder).run(folder, None, "bench:knowledge")
        import_s = time.perf_counter() - started
        store = ArticleStore(svc.db, svc.embedder)
        listed = store.list()
        passages = sum(a.passages or 0 for a in listed)
        if first.status != ImportStatus.COMPLETED or len(listed) != n:
            raise CheckFailed(f"import {first.status}: {len(listed)} articles for {n} files")
        started = time.perf_counter()
        again = Importer(svc.db, svc.embedder).run(folder, None, "bench:knowledge")
        reimport_s = time.perf_counter() - started
        if again.outcomes != {"unchanged": n}:
            raise CheckFailed(f"the unchanged re-import did {again.outcomes}")
        search = KnowledgeSearch(svc.db, svc.embedder)
        markers = [f"q{rnd.randrange(n)}x{rnd.randrange(6)}" for _ in range(100)]
        queries = [(m, questions[m]) for m in markers]
        times, misses = [], 0
        for marker, text in queries:
            t = time.perf_counter()
            hits = search.search(None, text)
            times.append((time.perf_counter() - t) * 1000)
            misses += not hits or marker not in hits[0].heading.split()
        if misses:
            raise CheckFailed(f"{misses} of {len(queries)} searches missed their section")
    figures = {"articles": n, "passages": passages, "backend": backend,
               "import_s": round(import_s, 2), "passages_per_s": rate(passages, import_s),
               "reimport_unchanged_s": round(reimport_s, 2),
               "search_p50_ms": round(percentile(times, 50) or 0, 1),
               "search_p95_ms": round(percentile(times, 95) or 0, 1)}
    rows = [{"run": "import", "count": f"{n} files, {passages} passages",
             "time": f"{figures['import_s']} s", "rate": f"{figures['passages_per_s']} passages/s"},
            {"run": "import again (unchanged)", "count": f"{n} files",
             "time": f"{figures['reimport_unchanged_s']} s", "rate": ""},
            {"run": "search", "count": f"{len(queries)} queries",
             "time": f"p50 {figures['search_p50_ms']} ms, p95 {figures['search_p95_ms']} ms",
             "rate": ""}]
    summary = (f"knowledge ({n} articles, {passages} passages, {backend}): import "
               f"{figures['passages_per_s']} passages/s, unchanged re-import "
               f"{figures['reimport_unchanged_s']} s, search p50 {figures['search_p50_ms']} ms")
    checks = [f"{n} articles for {n} files", "the unchanged re-import changed nothing",
              f"all {len(queries)} searches found their section first"]
    return Report("knowledge", summary, ["run", "count", "time", "rate"], rows, figures, [],
                  checks)
