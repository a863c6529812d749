"""Pure parts of indexing: ids, the hashing embedder, graph documents, the store policy."""

import math

import pytest

from email_rag.adapters.embeddings import HashingEmbedder, RecentEmbeddings, build_embedder
from email_rag.adapters.graph import addresses, documents, person_key
from email_rag.core.errors import (
    DatabaseUnavailableError,
    EmbeddingRejectedError,
    EmbeddingUnavailableError,
    StoreRejectedError,
    StoreUnavailableError,
)
from email_rag.core.index_ports import GraphMail, GraphReply, point_id
from email_rag.core.retry import RetryPolicy
from email_rag.core.settings import Settings
from email_rag.indexing.indexer import with_tries
from email_rag.wiring.services import Services


def test_point_ids_are_deterministic_uuids_per_mail_and_chunk():
    assert point_id(42, 0) == point_id(42, 0)
    assert len({point_id(42, 0), point_id(42, 1), point_id(43, 0)}) == 3
    # fixed namespace: the id of a given chunk never changes between releases
    assert point_id(1, 0) == "585c891f-c345-55f3-9e6d-762b9beb7e85"


def test_hashing_embedder_is_deterministic_unit_length_and_says_it_has_no_semantics():
    emb = HashingEmbedder(64)
    a, b = emb.embed(["The printer is broken", "The printer is broken"])
    assert a == b and len(a) == 64
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-9)
    assert "no-semantics" in emb.name and "NO SEMANTICS" in HashingEmbedder.__doc__
    other = emb.embed(["Invoice address change request"])[0]
    assert sum(x * y for x, y in zip(a, other, strict=True)) < 0.5
    assert emb.embed([""])[0][0] == 1.0  # no words: still a valid direction


def test_unknown_embedding_backend_is_refused():
    with pytest.raises(ValueError, match="embedding_backend must be"):
        Settings(embedding_backend="magic")
    settings = Settings()
    settings.embedding_backend = "magic"  # assignment is not validated: the factory refuses
    with pytest.raises(EmbeddingRejectedError, match="unknown embedding_backend"):
        build_embedder(settings)


def test_graph_documents_have_deterministic_keys_and_edges():
    mail = GraphMail(email_id=7, mailbox_id=1, message_id="<a@x>", subject="Hi", thread_key="t1",
                     from_addr="Alice@Customer.example", from_name="Alice",
                     to_addrs=["support@example.com", "support@example.com"],
                     cc_addrs=["Bob <bob@example.com>"], parent_email_id=3,
                     replies=[GraphReply(9)])
    docs = documents(mail)
    assert documents(mail) == docs  # same input, same documents: a rewrite is an overwrite
    assert docs.mail_doc()["_key"] == "m7"
    assert {p.address for p in docs.people} == {
        "alice@customer.example", "support@example.com", "bob@example.com"}
    assert docs.people[0].doc() == {"_key": person_key("alice@customer.example"),
                                    "address": "alice@customer.example", "name": "Alice"}
    assert docs.sent[0].from_id == f"people/{person_key('alice@customer.example')}"
    assert len(docs.received) == 2  # duplicates collapse
    assert docs.reply_to[0].to_id == "mails/m3"
    assert docs.answered_by[0].to_id == "replies/d9"
    written = docs.by_collection()
    assert list(written) == ["people", "threads", "mails", "replies", "sent", "received",
                             "in_thread", "reply_to", "answered_by"]
    assert written["sent"][0] == {"_key": docs.sent[0].key, "_from": docs.sent[0].from_id,
                                  "_to": "mails/m7", "at": None}
    assert written["received"][0]["kind"] == "to"
    assert person_key("ALICE@customer.example ") == person_key("alice@customer.example")
    assert addresses('"Doe, J" <j@x.example>, k@y.example') == ["j@x.example", "k@y.example"]


POLICY = RetryPolicy(delays=(0.01, 0.02, 0.04), max_attempts=3, jitter=0)


def test_store_policy_retries_then_succeeds():
    calls, slept = [], []

    def fn():
        calls.append(1)
        if len(calls) < 3:
            raise StoreUnavailableError("down")
        return {"points": 2}
    r = with_tries("vectors", fn, POLICY, slept.append)
    assert (r.state, r.tries, r.info) == ("ok", 3, {"points": 2})
    assert slept == [0.01, 0.02] and [f.attempt for f in r.failures] == [1, 2]


def test_store_policy_gives_up_after_the_tries_without_raising():
    r = with_tries("graph", lambda: (_ for _ in ()).throw(StoreUnavailableError("refused")),
                   POLICY, lambda s: None)
    assert (r.state, r.tries, r.permanent) == ("missing", 3, False)
    assert "refused" in r.error and r.failures[-1].retry_in_s is None


def test_store_refusal_is_not_retried():
    r = with_tries("vectors", lambda: (_ for _ in ()).throw(StoreRejectedError("dim")),
                   POLICY, lambda s: None)
    assert (r.state, r.tries, r.permanent) == ("missing", 1, True)


def test_unexpected_client_error_counts_as_store_failure_but_mariadb_errors_propagate():
    r = with_tries("vectors", lambda: (_ for _ in ()).throw(KeyError("x")), POLICY, lambda s: None)
    assert r.state == "missing" and "unexpected KeyError" in r.error
    with pytest.raises(DatabaseUnavailableError):
        with_tries("vectors", lambda: (_ for _ in ()).throw(DatabaseUnavailableError("gone")),
                   POLICY, lambda s: None)


class _Counting:
    name = "counting"

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.asked.append(list(texts))
        if "bad" in texts:
            raise EmbeddingUnavailableError("down")
        return [[float(len(t)), 1.0] for t in texts]

    def close(self) -> None:
        pass


def test_a_text_embedded_a_moment_ago_is_not_embedded_again():
    """Index embeds a mail's chunks, retrieve then its first chunk: one model call per text."""
    inner = _Counting()
    emb = RecentEmbeddings(inner, size=2)
    assert emb.name == "counting"
    assert emb.embed(["aa", "b"]) == [[2.0, 1.0], [1.0, 1.0]]
    assert emb.embed(["aa"]) == [[2.0, 1.0]]
    assert emb.embed(["ccc", "aa"]) == [[3.0, 1.0], [2.0, 1.0]]
    assert inner.asked == [["aa", "b"], ["ccc"]]
    emb.embed(["dddd"])  # two texts newer than "aa": it is pushed out
    emb.embed(["aa"])
    assert inner.asked[-1] == ["aa"]
    with pytest.raises(EmbeddingUnavailableError):
        emb.embed(["bad", "eeeee"])
    emb.embed(["eeeee"])
    assert inner.asked[-1] == ["eeeee"]  # a failed call leaves nothing behind


def test_the_services_embed_through_the_recent_texts():
    emb = Services(Settings(embedding_backend="hashing")).embedder
    assert isinstance(emb, RecentEmbeddings) and emb.name == HashingEmbedder.name
    assert emb.dim == 384  # the Embedder port: name and dim
