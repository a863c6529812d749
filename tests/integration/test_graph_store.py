"""The ArangoDB graph store. No ArangoDB server can be installed here, so:

- the unreachable paths run for real (tests/integration/test_index_step.py: connection
  refused, a server that hangs);
- `ArangoRecorder` (tests/index_helpers.py, NOT ArangoDB) checks that our calls go through
  the real python-arango client as meant: collections, graph, _keys, overwrite, bind vars;
- the tests marked optional run against a real server when EMAIL_RAG_TEST_ARANGO_URL is set
  (user EMAIL_RAG_TEST_ARANGO_USER, default root; password EMAIL_RAG_TEST_ARANGO_PASSWORD);
  each uses a database of its own and drops it.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from pydantic import SecretStr

from email_rag.adapters.graph import EDGES, GRAPH, VERTICES, ArangoGraph, person_key
from email_rag.indexing.indexer import Indexer
from email_rag.indexing.retrieval import Retriever
from email_rag.wiring.services import Services
from tests.factories import make_email, make_mailbox
from tests.index_helpers import ArangoRecorder, make_sent_draft


@pytest.fixture
def services(settings):
    settings.store_backoff = 0.01
    svc = Services(settings)
    yield svc
    svc.close()


def index(services, db, email):
    row = db.fetchone("SELECT * FROM emails WHERE id = %s", (email,))
    return Indexer(services).index(row)


def make_thread(db):
    mb = make_mailbox(db)
    first = make_email(db, mailbox_id=mb, subject="Login", thread_key="T1",
                       from_addr="alice@customer.example", from_name="Alice",
                       to_addrs="support@example.com", message_id="<first@c.example>")
    make_sent_draft(db, first, "Reset your password at /reset.")
    second = make_email(db, mailbox_id=mb, subject="Re: Login", thread_key="T1",
                        from_addr="ALICE@customer.example", to_addrs="support@example.com",
                        cc_addrs="bob@customer.example", in_reply_to="<first@c.example>")
    return mb, first, second


def test_graph_writes_go_through_python_arango_with_deterministic_keys(services, db):
    recorder = ArangoRecorder()
    try:
        services.settings.arango_url = recorder.url
        mb, first, second = make_thread(db)
        assert index(services, db, first).missing == []
        assert index(services, db, second).missing == []
        counts = {n: len(c) for n, c in recorder.collections.items()}
        assert index(services, db, second).missing == [] and index(services, db, first).missing == []
        assert {n: len(c) for n, c in recorder.collections.items()} == counts  # no duplicate
        assert set(recorder.collections) == set(VERTICES) | set(EDGES)
        assert recorder.edge_collections == set(EDGES)
        defs = recorder.graphs[GRAPH]["edgeDefinitions"]  # the REST shape ArangoDB expects
        assert {d["collection"]: (d["from"], d["to"]) for d in defs} == {
            e: ([f], [t]) for e, (f, t) in EDGES.items()}
        assert set(recorder.collections["mails"]) == {f"m{first}", f"m{second}"}
        alice = recorder.collections["people"][person_key("alice@customer.example")]
        assert alice["name"] == "Alice"  # merged: the second mail (no name) kept it
        assert counts["people"] == 3 and counts["sent"] == 2 and counts["threads"] == 1
        assert [e["_to"] for e in recorder.collections["reply_to"].values()] == [f"mails/m{first}"]
        assert len(recorder.collections["answered_by"]) == 1
        modes = {p.get("overwriteMode") for m, path, p, _ in recorder.requests
                 if "/_api/document/" in path}
        assert modes == {"replace", "update"}

        detail, _ = Retriever(services).for_mail(
            db.fetchone("SELECT * FROM emails WHERE id = %s", (second,)))
        assert detail["sender_history_source"] == "graph"
        assert detail["sender_history"] == [{
            "email_id": first, "subject": "Login", "received_at": detail["sender_history"][0][
                "received_at"], "thread_key": "T1", "category": None, "replied": True}]
        cursor = [b for m, path, p, b in recorder.requests if path.endswith("/_api/cursor")]
        assert cursor[-1]["bindVars"]["person"] == \
            f"people/{person_key('alice@customer.example')}"
        assert cursor[-1]["bindVars"]["mailbox"] == mb
    finally:
        recorder.close()


# --- a real ArangoDB server (optional) ---

ARANGO_URL = os.environ.get("EMAIL_RAG_TEST_ARANGO_URL", "")
needs_arango = pytest.mark.skipif(
    not ARANGO_URL, reason="no ArangoDB server here: set EMAIL_RAG_TEST_ARANGO_URL to run")


@pytest.fixture
def arango_settings(settings):
    settings.arango_url = ARANGO_URL
    settings.arango_user = os.environ.get("EMAIL_RAG_TEST_ARANGO_USER", "root")
    settings.arango_password = SecretStr(os.environ.get("EMAIL_RAG_TEST_ARANGO_PASSWORD", ""))
    settings.arango_db = f"erag_t_{uuid.uuid4().hex[:12]}"
    settings.store_backoff = 0.01
    yield settings
    from arango import ArangoClient

    client = ArangoClient(hosts=ARANGO_URL)
    sys_db = client.db("_system", username=settings.arango_user,
                       password=os.environ.get("EMAIL_RAG_TEST_ARANGO_PASSWORD", ""))
    sys_db.delete_database(settings.arango_db, ignore_missing=True)
    client.close()


@pytest.mark.optional
@needs_arango
def test_real_arangodb_reindexing_twice_changes_no_counts(arango_settings, db):
    svc = Services(arango_settings)
    try:
        _, first, second = make_thread(db)
        for email in (first, second, first, second):
            assert index(svc, db, email).missing == []
        graph = svc.graph
        assert isinstance(graph, ArangoGraph)
        counts = {n: graph.db().collection(n).count() for n in (*VERTICES, *EDGES)}
        assert counts == {"people": 3, "threads": 1, "mails": 2, "replies": 1, "sent": 2,
                          "received": 3, "in_thread": 2, "reply_to": 1, "answered_by": 1}
        history = graph.sender_history("alice@customer.example", exclude_email_id=second)
        assert [h["email_id"] for h in history] == [first] and history[0]["replied"] is True
    finally:
        svc.close()


@pytest.mark.optional
@needs_arango
def test_real_arangodb_retrieval_takes_sender_history_from_the_graph(arango_settings, db):
    svc = Services(arango_settings)
    try:
        _, first, second = make_thread(db)
        index(svc, db, first)
        detail, _ = Retriever(svc).for_mail(
            db.fetchone("SELECT * FROM emails WHERE id = %s", (second,)))
        assert detail["sender_history_source"] == "graph" and not detail["reduced"]
        assert [h["email_id"] for h in detail["sender_history"]] == [first]
        json.dumps(detail)
    finally:
        svc.close()
