"""The team's knowledge against the real MariaDB (issue 41): import, re-import, search, scope,
status, saved replies, the embedder away, and an import killed midway then resumed.

Embeddings: word hashing (the tests' setting) except where a test is about meaning (the
multilingual USE model from its wheel)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from email_rag.adapters.embeddings import HashingEmbedder, UseEmbedder
from email_rag.cli import main
from email_rag.core.errors import BadInputError, EmbeddingUnavailableError
from email_rag.db import Database
from email_rag.db.audit import events_for
from email_rag.knowledge import passages
from email_rag.knowledge.articles import ArticleStatus, ArticleStore, Origin
from email_rag.knowledge.importer import Importer, ImportStatus
from email_rag.knowledge.search import PER_ARTICLE, KnowledgeHit, KnowledgeSearch
from tests.conftest import MARIADB
from tests.factories import make_mailbox
from tests.helpers import kill_when, spawn, stop, wait_for

RETURNS = """# Returns

You can send any item back within 30 days of delivery. Use the return label from your
customer account and drop the parcel at any post office.

## Refunds

We refund the purchase price to the original payment method within 5 working days after
the parcel arrived in our warehouse.
"""
SHIPPING = """# Versand

## Lieferzeit

Wir liefern innerhalb von 2 bis 3 Werktagen mit DHL. Sie erhalten eine Sendungsnummer per
E-Mail, sobald das Paket unterwegs ist.

## Versandkosten

Der Versand kostet 4,90 EUR, ab 50 EUR Bestellwert ist er kostenlos.
"""
WARRANTY = """Warranty
========

Every device has a warranty of 24 months. For a claim, send the device with its receipt to
our service centre in Hamburg.
"""
PRIVATE_WORD = "Geheimtext"  # a word of an article's text: never in an audit entry




@pytest.fixture
def kb(tmp_path) -> Path:
    folder = tmp_path / "kb"
    (folder / "de").mkdir(parents=True)
    (folder / "returns.md").write_text(RETURNS)
    (folder / "de" / "versand.md").write_text(SHIPPING)
    (folder / "warranty.txt").write_text(WARRANTY + f"\n{PRIVATE_WORD} stays private.\n")
    (folder / ".hidden.md").write_text("# Hidden\n\nnot imported\n")
    return folder


def importer(db, embedder=None, stop=lambda: False) -> Importer:
    return Importer(db, embedder or HashingEmbedder(), stop)


def articles(db) -> dict[str, tuple[int, int]]:
    """file name -> (article id, version)."""
    return {Path(a.source_key).name: (a.id, a.version)
            for a in ArticleStore(db, HashingEmbedder()).list() if a.source_key}


def passage_rows(db) -> list[tuple[int, int, int]]:
    return [(int(r["article_id"]), int(r["version"]), int(r["passage_no"])) for r in
            db.fetchall("SELECT article_id, version, passage_no FROM knowledge_passages")]


def test_a_folder_becomes_one_article_per_file_split_at_headings(db, kb):
    r = importer(db).run(kb, None, "cli:test")
    assert (r.status, r.processed, r.failed, r.remaining) == (ImportStatus.COMPLETED, 3, 0, 0)
    assert r.outcomes == {"created": 3}
    found = articles(db)
    assert sorted(found) == ["returns.md", "versand.md", "warranty.txt"]
    store = ArticleStore(db, HashingEmbedder())
    returns = store.get(found["returns.md"][0])
    assert (returns.title, returns.origin, returns.status, returns.version, returns.language) \
        == ("Returns", Origin.FILE, ArticleStatus.ACTIVE, 1, "en")
    assert [p.heading for p in store.passages(returns)] == ["Returns", "Returns > Refunds"]
    assert store.get(found["versand.md"][0]).language == "de"


def test_every_change_is_audited_with_id_and_title_never_the_text(db, kb):
    importer(db).run(kb, None, "cli:test")
    article_id = articles(db)["warranty.txt"][0]
    ArticleStore(db, HashingEmbedder()).set_status(article_id, ArticleStatus.DISABLED, "user:anna")
    events = events_for(db, "knowledge_article", article_id)
    assert [e["event"] for e in events] == ["knowledge_article_created",
                                           "knowledge_article_disabled"]
    for e in events:
        detail = json.loads(e["detail"])
        assert detail["title"] == "Warranty" and detail["version"] == 1
        assert PRIVATE_WORD not in str(e) and "Hamburg" not in str(e)


def test_importing_again_changes_only_what_changed_and_removes_what_is_gone(db, kb):
    importer(db).run(kb, None, "cli:test")
    before = articles(db)
    (kb / "returns.md").write_text(RETURNS.replace("30 days", "60 days"))
    (kb / "warranty.txt").unlink()
    r = importer(db).run(kb, None, "cli:test")
    assert r.status == ImportStatus.COMPLETED
    assert r.outcomes == {"updated": 1, "unchanged": 1} and r.removed == 1
    after = articles(db)
    assert after == {"returns.md": (before["returns.md"][0], 2),
                     "versand.md": before["versand.md"]}
    # only the current version's passages are stored
    assert {(a, v) for a, v, _ in passage_rows(db)} == {after["returns.md"], after["versand.md"]}
    events = events_for(db, "knowledge_article", before["warranty.txt"][0])
    assert events[-1]["event"] == "knowledge_article_deleted"


def test_an_article_edited_in_the_web_stays_until_its_file_changes(db, kb):
    importer(db).run(kb, None, "cli:test")
    store = ArticleStore(db, HashingEmbedder())
    article_id = articles(db)["returns.md"][0]
    store.edit(article_id, 1, "Returns", RETURNS + "\nEdited on the web.\n", "user:anna")
    importer(db).run(kb, None, "cli:test")
    assert "Edited on the web." in store.get(article_id).body
    (kb / "returns.md").write_text(RETURNS.replace("30 days", "14 days"))
    importer(db).run(kb, None, "cli:test")
    edited = store.get(article_id)
    assert "Edited on the web." not in edited.body and "14 days" in edited.body
    assert edited.version == 3


def test_an_edit_of_an_older_version_is_refused(db, kb):
    importer(db).run(kb, None, "cli:test")
    store = ArticleStore(db, HashingEmbedder())
    article_id = articles(db)["returns.md"][0]
    store.edit(article_id, 1, "Returns", RETURNS + "\nfirst\n", "user:anna")
    with pytest.raises(BadInputError, match="changed this knowledge article meanwhile"):
        store.edit(article_id, 1, "Returns", RETURNS + "\nsecond\n", "user:bob")
    assert "first" in store.get(article_id).body


def test_a_bad_file_fails_alone_with_its_reason_and_the_next_run_tries_it_again(db, kb):
    (kb / "broken.pdf").write_bytes(b"%PDF-1.4\n" + PRIVATE_WORD.encode())
    r = importer(db).run(kb, None, "cli:test")
    assert (r.status, r.processed, r.failed) == (ImportStatus.FAILED, 3, 1)
    assert r.failures[0][0].endswith("broken.pdf") and "unreadable PDF" in r.failures[0][1]
    assert PRIVATE_WORD not in r.failures[0][1]
    (kb / "broken.pdf").unlink()
    (kb / "broken.md").write_text("# Fixed\n\nNow readable.\n")
    again = importer(db).run(kb, None, "cli:test")
    assert again.resumed and again.import_id == r.import_id
    assert (again.status, again.processed, again.failed) == (ImportStatus.COMPLETED, 4, 0)


def test_the_embedder_down_fails_the_file_and_the_same_command_resumes_it(db, kb):
    class Down(HashingEmbedder):
        def embed(self, texts):
            raise EmbeddingUnavailableError("embeddings endpoint unreachable")

    r = importer(db, Down()).run(kb, None, "cli:test")
    assert (r.status, r.processed, r.failed) == (ImportStatus.FAILED, 0, 3)
    assert all("embedder failed" in why and "run the same command again" in why
               for _, why in r.failures)
    assert articles(db) == {} and passage_rows(db) == []
    again = importer(db).run(kb, None, "cli:test")
    assert (again.status, again.processed, again.failed) == (ImportStatus.COMPLETED, 3, 0)


def test_the_same_import_running_elsewhere_is_refused(db, kb, db_name):
    import hashlib

    other = Database(**MARIADB, database=db_name)
    try:
        name = "erag_kn:" + hashlib.sha1(f"{kb.resolve()}|0".encode()).hexdigest()
        other.fetchone("SELECT GET_LOCK(%(n)s, 0) AS got", {"n": name})
        with pytest.raises(BadInputError, match="is running already"):
            importer(db).run(kb, None, "cli:test")
    finally:
        other.close()
    assert articles(db) == {}


def test_search_finds_the_right_passage_for_paraphrased_questions_in_german_and_english(db, kb):
    use = UseEmbedder()
    importer(db, use).run(kb, None, "cli:test")
    search = KnowledgeSearch(db, use)
    cases = [
        ("How long do I have to send something back?", "Returns"),
        ("When will I get my money back after returning the item?", "Returns > Refunds"),
        ("Wie lange dauert es, bis mein Paket ankommt?", "Versand > Lieferzeit"),
        ("Wie teuer ist die Zustellung?", "Versand > Versandkosten"),
        ("My device broke after a year, is that covered?", "Warranty"),
    ]
    for question, heading in cases:
        hits = search.search(None, question, limit=3)
        assert hits and hits[0].heading == heading, (question, [h.heading for h in hits])
        assert hits[0].cosine > 0 and not hits.reduced


def test_a_hit_carries_its_reference_and_round_trips_as_json(db, kb):
    importer(db).run(kb, None, "cli:test")
    hit = KnowledgeSearch(db, HashingEmbedder()).search(None, "refund purchase price")[0]
    assert hit.heading == "Returns > Refunds" and hit.origin == "file"
    assert hit.ref() == f"knowledge:{hit.article_id}:{hit.passage_no}"
    assert hit.url() == f"/admin/knowledge/{hit.article_id}#p{hit.passage_no}"
    assert KnowledgeHit.from_dict(json.loads(json.dumps(hit.as_dict()))) == hit


def test_at_most_per_article_passages_of_one_article(db, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "faq.md").write_text("".join(f"# Question {n}\n\nparcel delivery answer {n}\n\n"
                                           for n in range(6)))
    importer(db).run(folder, None, "cli:test")
    hits = KnowledgeSearch(db, HashingEmbedder()).search(None, "parcel delivery answer")
    assert len(hits) == PER_ARTICLE == 3


def test_words_searched_by_words_only_find_the_passage_that_names_the_mail_s_country(
        db, tmp_path):
    """"Vienna" shares no word with "Österreich": the pipeline passes the country's names
    as ``words`` (pipeline/retrieve.py), and the passage that names it is found."""
    folder = tmp_path / "zones"
    folder.mkdir()
    (folder / "zone.md").write_text("# Zone 1\n\nÖsterreich, Belgien: Versandkosten 9,90 EUR.\n")
    for n, country in enumerate(("Spain", "Italy", "Poland")):
        (folder / f"ship{n}.md").write_text(
            f"# Shipping {country}\n\nShipping to {country} takes a week and costs more.\n")
    importer(db).run(folder, None, "cli:test")
    search = KnowledgeSearch(db, HashingEmbedder())
    asked = "How much is shipping to Vienna?"
    assert "Zone 1" not in [h.heading for h in search.search(None, asked, limit=3)]
    found = search.search(None, asked, limit=3, words="Österreich Austria Autriche")
    assert "Zone 1" in [h.heading for h in found]


def test_a_disabled_article_is_not_found_and_found_again_when_enabled(db, kb):
    importer(db).run(kb, None, "cli:test")
    store = ArticleStore(db, HashingEmbedder())
    search = KnowledgeSearch(db, HashingEmbedder())
    article_id = articles(db)["returns.md"][0]
    assert article_id in {h.article_id for h in search.search(None, "refund purchase price")}
    store.set_status(article_id, ArticleStatus.DISABLED, "user:anna")
    assert article_id not in {h.article_id for h in search.search(None, "refund purchase price")}
    store.set_status(article_id, ArticleStatus.ACTIVE, "user:anna")
    assert article_id in {h.article_id for h in search.search(None, "refund purchase price")}


def test_a_mailboxs_articles_are_found_only_for_that_mailbox_the_global_ones_for_all(db, tmp_path):
    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    for name, text in (("global", "# Opening hours\n\nWe answer mail Monday to Friday.\n"),
                       ("support", "# Opening hours support\n\nSupport answers mail on "
                                   "Saturday too.\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hours.md").write_text(text)
    importer(db).run(tmp_path / "global", None, "cli:test")
    importer(db).run(tmp_path / "support", support, "cli:test")
    search = KnowledgeSearch(db, HashingEmbedder())

    def titles(mailbox_id):
        return {h.title for h in search.search(mailbox_id, "answer mail opening hours")}

    assert titles(support) == {"Opening hours", "Opening hours support"}
    assert titles(sales) == {"Opening hours"}
    assert titles(None) == {"Opening hours"}


def test_the_embedder_down_at_search_time_finds_by_words_and_says_so(db, kb):
    importer(db).run(kb, None, "cli:test")

    class Down(HashingEmbedder):
        def embed(self, texts):
            raise EmbeddingUnavailableError("embeddings endpoint unreachable")

    hits = KnowledgeSearch(db, Down()).search(None, "refund purchase price")
    assert hits.reduced and hits[0].heading == "Returns > Refunds" and hits[0].cosine == 0


def test_passages_of_a_version_not_switched_on_are_never_found(db, kb):
    """GIVEN passages of a next version written but the article not switched to it (what a
    writer killed between the two steps would leave, were they not one transaction) THEN a
    search finds only the current version."""
    importer(db).run(kb, None, "cli:test")
    article_id, version = articles(db)["returns.md"]
    db.execute("INSERT INTO knowledge_passages (article_id, version, passage_no, heading, body) "
               "VALUES (%(a)s, %(v)s, 9, 'Half', 'zebra unicorn half written')",
               {"a": article_id, "v": version + 1})
    hits = KnowledgeSearch(db, HashingEmbedder()).search(None, "zebra unicorn half written")
    assert "Half" not in {h.heading for h in hits}
    assert all(h.version == version for h in hits if h.article_id == article_id)


def test_saved_replies_are_sources_kept_in_step_with_every_change(services, db):
    from email_rag.review import answers

    support = make_mailbox(db, "support")
    search = KnowledgeSearch(db, services.embedder)
    reply_id = answers.create(services, support, "Invoice copy",
                              "You find every invoice as a PDF in your customer account.",
                              "user:root")

    def found():
        return [(h.origin, h.title, h.text) for h in search.search(support, "invoice PDF account")
                if h.origin == "saved_reply"]

    assert found() == [("saved_reply", "Invoice copy",
                        "You find every invoice as a PDF in your customer account.")]
    answers.update(services, reply_id, 1, "Invoice copy",
                   "Every invoice is in your customer account as a PDF download.", "user:root")
    assert found()[0][2] == "Every invoice is in your customer account as a PDF download."
    assert [h for h in search.search(None, "invoice PDF account") if h.origin == "saved_reply"] \
        == []  # a mailbox's reply is not global
    article_id = [h.article_id for h in search.search(support, "invoice PDF account")][0]
    answers.delete(services, reply_id, "user:root")
    assert found() == []
    events = events_for(db, "knowledge_article", article_id)
    assert [e["event"] for e in events] == ["knowledge_article_created",
                                           "knowledge_article_updated",
                                           "knowledge_article_deleted"]
    assert "Invoice" not in str(events) and "invoice" not in str(events)  # as the reply's own
    assert SavedReplySyncCounts(services) == {"synced": 0, "removed": 0}


def SavedReplySyncCounts(services) -> dict:  # noqa: N802 - reads as the value it checks
    from email_rag.knowledge.saved_replies import SavedReplySync

    return SavedReplySync(services.db, services.embedder).sync_all("cli:test")


def test_cli_import_json_says_status_counts_and_what_to_run_next(env, db, kb, capsys):
    code = main(["knowledge", "import", str(kb), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {k: out[k] for k in ("status", "processed", "failed", "remaining",
                                "resumeAvailable", "next")} == {
        "status": "completed", "processed": 3, "failed": 0, "remaining": 0,
        "resumeAvailable": False, "next": None}
    (kb / "bad.docx").write_bytes(b"not a docx")
    code = main(["knowledge", "import", str(kb), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["status"] == "completed_with_failures"
    assert out["next"] == f"email-rag knowledge import {kb}"
    assert out["data"]["failures"][0]["path"].endswith("bad.docx")
    assert main(["knowledge", "search", "refund purchase price"]) == 0
    assert "Returns > Refunds" in capsys.readouterr().out


def big_folder(root: Path, small: int = 10) -> Path:
    """``small`` files, then one big file (slow to split and embed: the kill lands in it),
    then ``small`` more."""
    root.mkdir()
    for n in range(small):
        (root / f"a{n:02d}.md").write_text(f"# Topic a{n}\n\nAnswer about a{n}.\n\n## More\n\n"
                                           f"Details of a{n}.\n")
        (root / f"c{n:02d}.md").write_text(f"# Topic c{n}\n\nAnswer about c{n}.\n")
    (root / "b_big.md").write_text("".join(
        f"# Section {n}\n\n" + f"Sentence {n} of the big manual about parcels. " * 20 + "\n\n"
        for n in range(900)))
    return root


def expected_passages(folder: Path) -> int:
    return sum(len(passages.split(p.read_text(), p.stem)) for p in folder.glob("*.md"))


def import_row(db) -> dict:
    return db.fetchone("SELECT id, status, processed, remaining FROM knowledge_imports "
                       "ORDER BY id DESC LIMIT 1") or {}


@pytest.mark.slow
def test_an_import_killed_midway_is_finished_by_the_same_command_every_passage_once(
        env, db, tmp_path, capsys):
    folder = big_folder(tmp_path / "kb")
    proc = spawn("knowledge", "import", str(folder), log=tmp_path / "import.log")
    seen = kill_when(proc, lambda: wait_for(
        lambda: (r := import_row(db)) and r["processed"] >= 10 and r,
        interval=0.02, what="ten files imported"))
    row = import_row(db)
    assert row["status"] == "running" and 10 <= row["processed"] < 21 and row["remaining"] > 0
    assert seen["id"] == row["id"]
    # what was committed is whole: every article's passages are those of its current version
    store = ArticleStore(db, HashingEmbedder())
    for a in store.list():
        assert a.passages == len(passages.split(store.get(a.id).body, a.title))
    assert main(["knowledge", "import", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["status"], out["processed"], out["remaining"], out["data"]["resumed"]) == \
        ("completed", 21, 0, True)
    assert out["data"]["importId"] == row["id"]
    rows = passage_rows(db)
    assert len(rows) == len(set(rows)) == expected_passages(folder)
    assert len(articles(db)) == 21
    assert {v for _, v, _ in rows} == {1}


@pytest.mark.slow
def test_sigterm_stops_after_the_current_file_and_says_to_run_the_same_command(
        env, db, tmp_path):
    folder = big_folder(tmp_path / "kb")
    log = tmp_path / "import.log"
    proc = spawn("knowledge", "import", str(folder), log=log)
    try:
        wait_for(lambda: (r := import_row(db)) and r["processed"] >= 10, interval=0.02,
                 what="ten files imported")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 2
    finally:
        stop(proc)
    text = log.read_text()
    assert "INTERRUPTED" in text and f"Next: email-rag knowledge import {folder}" in text
    row = import_row(db)
    assert row["status"] == "interrupted" and row["remaining"] > 0
    r = importer(db).run(folder, None, "cli:test")
    assert r.status == ImportStatus.COMPLETED and r.processed == 21
    rows = passage_rows(db)
    assert len(rows) == len(set(rows)) == expected_passages(folder)


def test_show_and_list_from_the_command_line(env, db, kb, capsys):
    assert main(["knowledge", "import", str(kb)]) == 0
    capsys.readouterr()
    assert main(["knowledge", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["data"]["articles"]
    assert sorted(a["title"] for a in listed) == ["Returns", "Versand", "Warranty"]
    first = listed[0]["id"]
    assert main(["knowledge", "disable", str(first)]) == 0
    assert main(["knowledge", "show", str(first), "--json"]) == 0
    out = capsys.readouterr().out
    shown = json.loads(out[out.index("{\n"):])["data"]
    assert shown["status"] == "disabled" and shown["passages"]
    assert main(["knowledge", "delete", str(first)]) == 0
    assert main(["knowledge", "show", str(first)]) == 1



def sent_case(db, mailbox_id: int) -> int:
    from tests.factories import make_draft, make_email

    email_id = make_email(db, mailbox_id, subject="Re: Rücksendung Bestellung 4711",
                          body="Hallo, wie lange kann ich die Bestellung 4711 zurückschicken? "
                               "Alice Example", from_name="Alice Example")
    draft_id = make_draft(db, email_id, body="Hallo Alice Example,\n\nSie können jede Bestellung "
                          "innerhalb von 30 Tagen zurückschicken.\n\nViele Grüße\nAnna\n",
                          status="sent")
    return draft_id


def test_a_sent_reply_becomes_a_candidate_and_knowledge_only_after_an_admins_yes(db):
    from email_rag.knowledge.candidates import Candidates, CandidateStatus

    support = make_mailbox(db, "support")
    draft_id = sent_case(db, support)
    candidates = Candidates(db, HashingEmbedder())
    assert candidates.collect("cli:test") == 1
    assert candidates.collect("cli:test") == 0  # one candidate per sent reply
    [c] = candidates.list()
    assert c.draft_id == draft_id and c.status == CandidateStatus.PENDING
    assert "Alice" not in c.question + c.answer + c.title and "4711" not in c.title
    assert "30 Tagen" in c.answer and "Anna" not in c.answer
    search = KnowledgeSearch(db, HashingEmbedder())
    assert search.search(support, "Bestellung zurückschicken Tagen") == []  # not yet knowledge
    candidates.edit(c.id, "Rücksendefrist", c.question, c.answer, "user:root")
    article_id = candidates.approve(c.id, "user:root")
    hits = search.search(support, "Bestellung zurückschicken Tagen")
    assert {(h.article_id, h.origin, h.title) for h in hits} == {(article_id, "case",
                                                                  "Rücksendefrist")}
    events = [e["event"] for e in events_for(db, "knowledge_candidate", c.id)]
    assert events == ["knowledge_candidate_proposed", "knowledge_candidate_edited",
                      "knowledge_candidate_approved"]
    with pytest.raises(BadInputError, match="approved already"):
        candidates.drop(c.id, "user:root")


def test_a_dropped_candidate_never_enters_the_knowledge(db):
    from email_rag.knowledge.candidates import Candidates, CandidateStatus

    support = make_mailbox(db, "support")
    sent_case(db, support)
    candidates = Candidates(db, HashingEmbedder())
    candidates.collect("cli:test")
    [c] = candidates.list()
    candidates.drop(c.id, "user:root")
    assert candidates.list() == [] and len(candidates.list(CandidateStatus.DROPPED)) == 1
    assert ArticleStore(db, HashingEmbedder()).list() == []


def test_erasing_a_person_takes_their_candidates_along(services, db):
    from email_rag.knowledge.candidates import Candidates
    from email_rag.privacy import personal_data

    support = make_mailbox(db, "support")
    sent_case(db, support)
    Candidates(db, HashingEmbedder()).collect("cli:test")
    personal_data.forget(services, "alice@customer.example", "request", "user:root")
    assert db.fetchone("SELECT COUNT(*) AS n FROM knowledge_candidates")["n"] == 0


def test_a_path_that_does_not_exist_is_refused_and_nothing_is_recorded(db, tmp_path):
    with pytest.raises(BadInputError, match="no such file or folder"):
        importer(db).run(tmp_path / "missing", None, "cli:test")
    assert db.fetchone("SELECT COUNT(*) AS n FROM knowledge_imports")["n"] == 0


def test_an_article_needs_a_title_and_text_and_a_deleted_one_is_not_found(db):
    from email_rag.knowledge.articles import ArticleNotFoundError

    store = ArticleStore(db, HashingEmbedder())
    with pytest.raises(BadInputError, match="needs a title and a text"):
        store.create(None, Origin.WEB, "  ", "text", "user:anna")
    article_id = store.create(None, Origin.WEB, "Opening hours", "Monday to Friday.", "user:anna")
    store.delete(article_id, "user:anna")
    with pytest.raises(ArticleNotFoundError):
        store.edit(article_id, 1, "Opening hours", "Saturday too.", "user:anna")
    assert passage_rows(db) == []


def test_an_empty_question_finds_nothing(db, kb):
    importer(db).run(kb, None, "cli:test")
    assert KnowledgeSearch(db, HashingEmbedder()).search(None, "  ?! ") == []


def test_a_saved_reply_written_while_the_embedder_is_down_is_found_by_words_then_embedded(db):
    from email_rag.knowledge.saved_replies import SavedReplySync

    class Down(HashingEmbedder):
        def embed(self, texts):
            raise EmbeddingUnavailableError("embeddings endpoint unreachable")

    support = make_mailbox(db, "support")
    sync = SavedReplySync(db, Down())
    prepared = sync.prepare("Opening hours", "We answer mail from Monday to Friday.")
    with db.transaction() as cur:
        article_id = sync.upsert_in(cur, 7, support, prepared, "user:root")
    words_only = KnowledgeSearch(db, Down()).search(support, "answer mail Monday")
    assert words_only.reduced and [h.article_id for h in words_only] == [article_id]
    assert KnowledgeSearch(db, HashingEmbedder()).search(support, "answer mail Monday")[0].cosine \
        == 0  # no vector yet
    with db.transaction() as cur:
        SavedReplySync(db, HashingEmbedder()).upsert_in(cur, 7, support, SavedReplySync(
            db, HashingEmbedder()).prepare("Opening hours", "We answer mail from Monday to "
                                           "Friday."), "user:root")
    hit = KnowledgeSearch(db, HashingEmbedder()).search(support, "answer mail Monday")[0]
    assert hit.article_id == article_id and hit.version == 2 and hit.cosine > 0


def test_a_resumed_import_of_a_folder_emptied_meanwhile_completes_with_nothing_left(db, kb):
    importer(db, stop=lambda: True).run(kb, None, "cli:test")  # interrupted before any file
    for p in sorted(kb.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    r = importer(db).run(kb, None, "cli:test")
    assert r.resumed and (r.status, r.processed, r.failed, r.remaining) == (
        ImportStatus.COMPLETED, 0, 0, 0)
