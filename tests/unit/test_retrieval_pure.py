"""Retrieval's ranking and the records it returns (email_rag/indexing/retrieval.py, pure)."""

from datetime import datetime

from email_rag.core.index_ports import ChunkPayload, HistoryMail, MailToIndex, VectorHit
from email_rag.indexing.indexer import StoreResult, chunk_payload
from email_rag.indexing.retrieval import (
    REPLY_CHARS,
    SNIPPET,
    FoundMail,
    Retrieved,
    SentCase,
    best_per_mail,
    search_hit,
    similar_cases,
)

AT = datetime(2026, 2, 3, 4, 5, 6)


def hit(email_id: int, score: float, chunk: int = 0, text: str | None = None, **payload):
    return VectorHit(email_id, chunk, score,
                     ChunkPayload.from_row({"email_id": email_id, "chunk": chunk, **payload,
                                            "text": text}))


def case(email_id: int, draft_id: int, reply: str = "Thanks", body: str = "Body") -> SentCase:
    return SentCase.from_row({"email_id": email_id, "draft_id": draft_id, "subject": "S",
                              "from_addr": "a@x.example", "received_at": AT, "category": None,
                              "body_text": body, "reply_text": reply, "raw": b"never read"})


def test_best_chunk_per_mail_best_first_ties_by_id():
    ranked = best_per_mail([hit(1, 0.5), hit(2, 0.9), hit(1, 0.95, chunk=3), hit(3, 0.9)])
    assert [(h.email_id, h.chunk) for h in ranked] == [(1, 3), (2, 0), (3, 0)]


def test_similar_cases_keep_rank_skip_unanswered_and_stop_at_the_limit():
    hits = [hit(1, 0.99), hit(2, 0.9), hit(3, 0.8), hit(4, 0.7)]
    out = similar_cases(hits, {1: case(1, 10), 3: case(3, 30), 4: case(4, 40)}, limit=2)
    assert [(c.email_id, c.reply.draft_id) for c in out] == [(1, 10), (3, 30)]
    assert out[0].received_at == AT.isoformat() and out[0].score == 0.99


def test_similar_case_snippet_is_the_chunk_text_else_the_body_and_reply_is_clipped():
    long_reply = "r" * (REPLY_CHARS + 50)
    [with_text] = similar_cases([hit(1, 0.5, text="chunk text")], {1: case(1, 10)}, 5)
    [without] = similar_cases([hit(1, 0.5)], {1: case(1, 10, reply=long_reply,
                                                    body="x" * 1000)}, 5)
    assert with_text.snippet == "chunk text"
    assert without.snippet == "x" * SNIPPET and len(without.reply.text) == REPLY_CHARS


def test_search_hit_prefers_mariadb_and_falls_back_to_the_payload():
    h = hit(7, 0.123456, text="hello", mailbox_id=2, subject="from payload",
            from_addr="p@x.example", received_at="2026-01-01T00:00:00")
    found = FoundMail.from_row({"id": 7, "subject": "from db", "from_addr": "d@x.example",
                                "received_at": AT, "status": "sent", "has_sent_reply": 1,
                                "index_status": "complete"})
    db = search_hit(h, found)
    assert (db.subject, db.status, db.has_sent_reply, db.in_mariadb, db.score) == (
        "from db", "sent", True, True, 0.1235)
    gone = search_hit(h, None)
    assert (gone.subject, gone.received_at, gone.status, gone.has_sent_reply,
            gone.in_mariadb) == ("from payload", "2026-01-01T00:00:00", None, None, False)
    assert gone.mailbox_id == 2 and gone.as_dict()["snippet"] == "hello"
    assert ChunkPayload.from_row({"email_id": 7, "unknown_key": 1}).chunk == 0


def test_history_mail_says_only_what_its_source_knows():
    graph = HistoryMail.from_row({"email_id": 1, "subject": "A", "received_at": None,
                                  "thread_key": "t", "category": None, "replied": False})
    db = HistoryMail.from_row({"email_id": 2, "subject": "B", "received_at": "x",
                               "thread_key": None, "category": "c", "status": "sent"})
    assert graph.as_dict() == {"email_id": 1, "subject": "A", "received_at": None,
                               "thread_key": "t", "category": None, "replied": False}
    assert "replied" not in db.as_dict() and db.as_dict()["status"] == "sent"


def test_retrieved_detail_is_reduced_when_a_store_is_missing():
    r = Retrieved([], [], [], "mariadb", {"vectors": StoreResult("vectors", "missing", 3,
                                                                   error="down"),
                                          "graph": StoreResult("graph", "off")}, None)
    d = r.detail()
    assert (d["reduced"], d["missing"]) == (True, ["vectors"])
    assert d["stores"]["vectors"]["error"] == "down"
    ok = Retrieved([], [], [], "graph", {"graph": StoreResult("graph", "ok")}, "hashing")
    assert ok.detail()["reduced"] is False and ok.detail()["embedder"] == "hashing"


def test_mail_to_index_from_a_row_ignores_the_raw_bytes_and_keeps_a_record():
    row = {"id": "5", "mailbox_id": 2, "subject": "Hi", "raw": b"x" * 10, "status": "sent"}
    mail = MailToIndex.of(row)
    assert (mail.id, mail.mailbox_id, mail.subject) == (5, 2, "Hi")
    assert not hasattr(mail, "raw") and MailToIndex.of(mail) is mail


def test_chunk_payload_names_the_mail_and_the_chunk():
    mail = MailToIndex.of({"id": 5, "mailbox_id": 2, "subject": "S" * 400,
                           "from_addr": "Bob@X.example", "received_at": AT})
    p = chunk_payload(mail, 3, "t" * 2000, "attachment", True, "hashing")
    assert (p.email_id, p.chunk, p.source, p.from_addr) == (5, 3, "attachment", "bob@x.example")
    assert len(p.subject) == 300 and len(p.text) == 1000
    assert p.received_at == AT.isoformat() and p.has_sent_reply is True
    assert list(p.as_dict())[:3] == ["email_id", "mailbox_id", "chunk"]


def test_rrf_sums_reciprocal_ranks_and_breaks_ties_by_id():
    from email_rag.indexing.retrieval import rrf

    fused = rrf([1, 2, 3], [3, 2], k=60)
    assert [i for i, _ in fused] == [3, 2, 1]  # 1/63 + 1/61 > 1/62 + 1/62 > 1/61
    assert abs(dict(fused)[2] - 2 / 62) < 1e-12 and abs(dict(fused)[1] - 1 / 61) < 1e-12
    assert [i for i, _ in rrf([5], [4])] == [4, 5]  # equal scores: lower id first
    assert rrf() == [] and [i for i, _ in rrf([7, 8])] == [7, 8]


def test_fuse_keeps_the_vector_hit_and_marks_lexical_only_mails():
    import math

    from email_rag.indexing.retrieval import LexicalHit, fuse

    fused = fuse([hit(1, 0.9, chunk=2), hit(2, 0.8)],
                 [LexicalHit.from_row({"id": 3, "score": 5.0}),
                  LexicalHit.from_row({"id": 2, "score": 1.0})])
    assert [h.email_id for h in fused] == [2, 1, 3]
    assert fused[1].chunk == 2 and math.isnan(fused[2].score)
    out = similar_cases(fused, {1: case(1, 10), 2: case(2, 20), 3: case(3, 30)}, 5, {2, 3})
    assert [(c.email_id, c.found_by, c.score) for c in out] == [
        (2, "both", 0.8), (1, "vectors", 0.9), (3, "words", None)]


def test_lexical_query_is_optional_words_and_prefixes_never_an_operator():
    from email_rag.indexing.retrieval import LEXICAL_TERMS, lexical_query

    q = lexical_query('Rechnung "falsch" +doppelt', "-abgebucht (am) 12.03. 2026 <b>x</b> ~ab* "
                      "Rechnungen zu_viel")
    assert q.split() == ["rechn*", "falsc*", "doppe*", "abgeb*", "2026", "viel"]
    assert not set(q) & set('"+-<>()~@')
    assert lexical_query(None, "ab cd") == "" and lexical_query("", None) == ""
    many = " ".join(f"w{i:04d}" for i in range(200))
    assert len(lexical_query(None, many).split()) == LEXICAL_TERMS


def test_tied_lexical_scores_share_a_rank_so_the_vectors_decide():
    """GIVEN four mails the words cannot tell apart (same score) THEN they share rank 1 and
    the vector ranking orders them: the lexical side never picks by id."""
    from email_rag.indexing.retrieval import LexicalHit, fuse, rrf, tied_ranks

    assert tied_ranks([(1, 2.0), (2, 2.0), (3, 1.0), (4, 1.0), (5, 0.5)]) == [
        (1, 1), (2, 1), (3, 3), (4, 3), (5, 5)]
    assert [i for i, _ in rrf([3, 1, 2], tied_ranks([(1, 1.0), (2, 1.0), (3, 1.0)]))] == [3, 1, 2]
    lexical = [LexicalHit.from_row({"id": i, "score": 0.7}) for i in (1, 2, 3, 4)]
    assert [h.email_id for h in fuse([hit(3, 0.99), hit(1, 0.5)], lexical)][:2] == [3, 1]


def test_a_case_close_enough_to_answer_is_kept_though_the_fusion_ranked_it_out():
    """GIVEN a Spanish mail whose closest case (cosine 0.78) is in German, and Spanish cases
    that share its words (found by both rankings, so fused above it) WHEN the similar cases
    are cut at 2 THEN the close case is added after them (a draft may answer from it); one
    under the bar is not, nor one already listed."""
    from email_rag.indexing.retrieval import LexicalHit, close_cases, fuse

    fused = fuse([hit(9, 0.78), hit(2, 0.46), hit(3, 0.45), hit(4, 0.40)],
                 [LexicalHit.from_row({"id": 2, "score": 5.0}),
                  LexicalHit.from_row({"id": 3, "score": 4.0})])
    cases = {n: case(n, n * 10) for n in (2, 3, 4, 9)}
    similar = similar_cases(fused, cases, 2, {2, 3})
    assert [c.email_id for c in similar] == [2, 3]
    assert [(c.email_id, c.score) for c in close_cases(fused, similar, cases, 0.52, 3)] == [
        (9, 0.78)]
    assert close_cases(fused, similar, cases, 0.80, 3) == []
