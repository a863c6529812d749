"""History index jobs in batches (issue 31), one test per row of the failure table of
``email_rag/indexing/batch.py`` and of the batch handler (``ingest/history.py``): real
MariaDB, local Qdrant in a temp folder, the real USE encoder where the test is about the
embeddings (the hashing test embedder where it is about what fails)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from email_rag_harness.testing.mails import mail

from email_rag.core.errors import EmbeddingUnavailableError, StoreUnavailableError
from email_rag.ingest import history
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job, make_mailbox

QUEUE = "email-rag-history"


def _history(db, texts: list[tuple[str, str]], box: int | None = None) -> list[tuple[int, int]]:
    """History mails not parsed yet, each with its queued index job: [(email id, job id)]."""
    box = box or make_mailbox(db)
    out = []
    for n, (subject, body) in enumerate(texts):
        e = make_email(db, box, status="history", parse_status="pending", body=None,
                       subject=subject, raw=mail(n, subject=subject, body=body))
        out.append((e, make_job(db, e, queue=QUEUE, kind="index_history")))
    return out


def _services(settings, **update) -> Services:
    return Services(settings.model_copy(update={"store_backoff": 0.0, **update}))


def _rows(db) -> dict[int, dict]:
    return {r["id"]: r for r in db.fetchall(
        "SELECT id, parse_status, index_status, index_missing FROM emails ORDER BY id")}


def _job_states(db) -> dict[int, str]:
    return {r["id"]: r["state"] for r in db.fetchall("SELECT id, state FROM jobs")}


class CountingEmbedder:
    """The process's embedder with its calls counted (and texts holding ``refuse`` failing
    as the local model fails: EmbeddingUnavailableError)."""

    def __init__(self, inner, refuse: str | None = None, down: bool = False) -> None:
        self.inner, self.refuse, self.down = inner, refuse, down
        self.name, self.dim = inner.name, inner.dim
        self.calls: list[int] = []

    def embed(self, texts):
        self.calls.append(len(texts))
        if self.down or (self.refuse and any(self.refuse in t for t in texts)):
            raise EmbeddingUnavailableError("local embedding model failed: test")
        return self.inner.embed(texts)

    def close(self) -> None:
        self.inner.close()


TOPICS = [
    ("Rechnung doppelt abgebucht", "Meine Rechnung 4711 wurde zweimal von meinem Konto "
     "abgebucht. Bitte erstatten Sie den doppelten Betrag."),
    ("Paket nicht angekommen", "Meine Bestellung ist seit zwei Wochen unterwegs und das "
     "Paket ist immer noch nicht bei mir angekommen."),
    ("Passwort vergessen", "Ich kann mich nicht mehr anmelden, weil ich mein Passwort "
     "vergessen habe. Wie setze ich es zurück?"),
    ("Adresse ändern", "Wir sind umgezogen. Bitte ändern Sie die Lieferadresse in meinem "
     "Kundenkonto."),
    ("Vertrag kündigen", "Hiermit kündige ich meinen Vertrag zum nächstmöglichen Termin."),
    ("Drucker druckt nicht", "Der Drucker zeigt einen Papierstau an, obwohl kein Papier "
     "mehr drin ist."),
]


def test_one_job_indexes_the_batch_with_one_call_of_the_real_encoder_and_finds_by_meaning(
        settings, db):
    """GIVEN six waiting history mails WHEN the first entry's job runs on the real USE
    encoder THEN all six are parsed and indexed by that one job with ONE embedder call
    and one vector per mail; the other entries are done with it and their own runs are
    no-ops; a question in other words finds its mail first."""
    pairs = _history(db, TOPICS)
    svc = _services(settings, embedding_backend="local", embedding_local_model="use",
                    embedding_dim=0)
    try:
        counting = CountingEmbedder(svc.embedder)
        svc.__dict__["embedder"] = counting
        runner = JobRunner(svc, "w-history", vector_owner=True)
        assert runner.run(pairs[0][1]) == "done"
        assert counting.calls == [len(TOPICS)]  # one call for all chunks of the batch
        assert set(_job_states(db).values()) == {"done"}
        assert [runner.run(j) for _, j in pairs[1:]] == ["skipped"] * (len(TOPICS) - 1)
        assert {(r["parse_status"], r["index_status"]) for r in _rows(db).values()} == {
            ("ok", "complete")}
        assert svc.vectors.count() == len(TOPICS)
        query = counting.inner.embed(["Mir wurde der Betrag zweimal belastet, ich will mein "
                                      "Geld zurück"])[0]
        hits = svc.vectors.search(query, limit=3)
        assert hits[0].email_id == pairs[0][0], [(h.email_id, h.score) for h in hits]
        assert hits[0].payload.embedder == "local:use-multilingual-v3-512"
    finally:
        svc.close()
    events = Counter(r["event"] for r in db.fetchall("SELECT event FROM audit_log"))
    assert events["indexed"] == len(TOPICS) and events["claimed"] == len(TOPICS)


def test_a_batch_takes_at_most_history_index_batch_entries_and_leaves_the_rest_waiting(
        settings, db):
    pairs = _history(db, [(f"Frage {n}", f"Text {n} zum Drucker") for n in range(7)])
    svc = _services(settings, history_index_batch=3)
    try:
        runner = JobRunner(svc, "w-history", vector_owner=True)
        assert runner.run(pairs[0][1]) == "done"
        states = _job_states(db)
        assert [states[j] for _, j in pairs] == ["done"] * 3 + ["queued"] * 4
        outcomes = [runner.run(j) for _, j in pairs[1:]]
        assert outcomes == ["skipped", "skipped", "done", "skipped", "skipped", "done"]
        assert set(_job_states(db).values()) == {"done"}
    finally:
        svc.close()


def test_a_mail_the_encoder_cannot_embed_is_partially_indexed_and_the_others_complete(
        settings, db):
    """GIVEN a batch in which one mail's text makes the encoder fail WHEN the job runs THEN
    the batch call fails, each mail is embedded alone once: the others are complete with
    their vectors, that one is partially_indexed (vectors missing, its error audited) for
    the periodic sync; every entry is done."""
    texts = [(f"Frage {n}", f"Der Drucker {n} druckt nicht.") for n in range(5)]
    texts[2] = ("Frage 2", "UNEMBEDDABLE text")
    pairs = _history(db, texts)
    svc = _services(settings)
    try:
        counting = CountingEmbedder(svc.embedder, refuse="UNEMBEDDABLE")
        svc.__dict__["embedder"] = counting
        assert JobRunner(svc, "w-history", vector_owner=True).run(pairs[0][1]) == "done"
        assert svc.vectors.count() == 4
        assert svc.vectors.count(pairs[2][0]) == 0
        # the batch call with its store tries, then each of the 5 mails alone
        assert counting.calls == [5] * svc.settings.store_tries + [1] * 5
    finally:
        svc.close()
    rows = _rows(db)
    bad = pairs[2][0]
    assert (rows[bad]["index_status"], rows[bad]["index_missing"]) == (
        "partially_indexed", "vectors")
    assert {rows[e]["index_status"] for e, _ in pairs if e != bad} == {"complete"}
    assert set(_job_states(db).values()) == {"done"}
    failed = db.fetchall("SELECT entity_id, detail FROM audit_log WHERE event = "
                         "'partially_indexed'")
    assert [int(f["entity_id"]) for f in failed] == [bad]


def test_an_embedder_down_for_the_batch_is_tried_alone_three_times_then_given_up(
        settings, db):
    """GIVEN the embedder down WHEN a batch of 8 runs THEN after the batch call's tries and
    three mails alone it is not tried again for the rest; every mail is partially_indexed
    (vectors missing), every entry done (nothing lost: the sync re-indexes them)."""
    pairs = _history(db, [(f"Frage {n}", f"Text {n}") for n in range(8)])
    svc = _services(settings)
    try:
        counting = CountingEmbedder(svc.embedder, down=True)
        svc.__dict__["embedder"] = counting
        assert JobRunner(svc, "w-history", vector_owner=True).run(pairs[0][1]) == "done"
        assert counting.calls[:svc.settings.store_tries] == [8] * svc.settings.store_tries
        # three mails alone, then given up (the examples' own call is not made: none here)
        assert counting.calls[svc.settings.store_tries:] == [1, 1, 1]
        assert svc.vectors.count() == 0
    finally:
        svc.close()
    assert {(r["index_status"], r["index_missing"]) for r in _rows(db).values()} == {
        ("partially_indexed", "vectors")}
    assert set(_job_states(db).values()) == {"done"}


def test_qdrant_failing_the_batch_upsert_leaves_every_mail_partially_indexed(
        settings, db, monkeypatch):
    pairs = _history(db, [(f"Frage {n}", f"Text {n}") for n in range(4)])
    svc = _services(settings)
    calls = []

    def down(points):
        calls.append(len(points))
        raise StoreUnavailableError("Qdrant at local: its storage failed during upsert: test")

    try:
        monkeypatch.setattr(svc.vectors, "replace_mails", down)
        assert JobRunner(svc, "w-history", vector_owner=True).run(pairs[0][1]) == "done"
        assert calls == [4] * svc.settings.store_tries  # one upsert for the batch, each try
    finally:
        svc.close()
    assert {(r["index_status"], r["index_missing"]) for r in _rows(db).values()} == {
        ("partially_indexed", "vectors")}
    tries = db.fetchall("SELECT entity_id FROM audit_log WHERE event = 'store_try_failed'")
    assert len(tries) == 4 * svc.settings.store_tries


def test_a_mail_that_cannot_be_parsed_leaves_the_batch_its_entry_fails_the_others_finish(
        settings, db, monkeypatch):
    """GIVEN a batch in which one mail's parse raises WHEN the job runs THEN that entry
    fails alone (an unexpected error: dead at once, ALARM, as a job of one mail did) with
    its mail not parsed; the others are parsed, indexed, done."""
    pairs = _history(db, [(f"Frage {n}", f"Text {n}") for n in range(4)])
    real = history.mime.parse_mail

    def parse(raw, **kw):
        if b"Frage 1" in raw:
            raise RecursionError("maximum recursion depth exceeded")
        return real(raw, **kw)

    monkeypatch.setattr(history.mime, "parse_mail", parse)
    svc = _services(settings)
    try:
        runner = JobRunner(svc, "w-history", vector_owner=True)
        assert runner.run(pairs[0][1]) == "done"
        bad_mail, bad_job = pairs[1]
        states = _job_states(db)
        assert states[bad_job] == "dead"
        assert {states[j] for e, j in pairs if j != bad_job} == {"done"}
        rows = _rows(db)
        assert rows[bad_mail]["parse_status"] == "pending"
        assert rows[bad_mail]["index_status"] == "pending"
        assert {rows[e]["index_status"] for e, _ in pairs if e != bad_mail} == {"complete"}
        assert svc.vectors.count() == 3
    finally:
        svc.close()


def test_an_entry_whose_mail_is_gone_is_dead_and_the_batch_goes_on(settings, db):
    pairs = _history(db, [(f"Frage {n}", f"Text {n}") for n in range(3)])
    gone = make_job(db, 999_999, queue=QUEUE, kind="index_history")
    svc = _services(settings)
    try:
        assert JobRunner(svc, "w-history", vector_owner=True).run(pairs[0][1]) == "done"
    finally:
        svc.close()
    states = _job_states(db)
    assert states[gone] == "dead"
    assert {states[j] for _, j in pairs} == {"done"}
    assert {r["index_status"] for r in _rows(db).values()} == {"complete"}


def test_an_entry_failed_earlier_is_not_taken_into_a_batch(settings, db):
    """A failed entry runs alone on its own delivery: a mail that crashes its batch's
    process cannot take a whole batch through the retry cycle again."""
    pairs = _history(db, [(f"Frage {n}", f"Text {n}") for n in range(3)])
    db.execute("UPDATE jobs SET state = 'failed', attempts = 1 WHERE id = %s", (pairs[2][1],))
    svc = _services(settings)
    try:
        runner = JobRunner(svc, "w-history", vector_owner=True)
        assert runner.run(pairs[0][1]) == "done"
        assert _job_states(db)[pairs[2][1]] == "failed"
        assert runner.run(pairs[2][1]) == "done"
    finally:
        svc.close()


CHILD = """
import os, sys, time
from email_rag.core.settings import get_settings
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services

svc = Services(get_settings())
store = type(svc.vectors)
real = store.replace_mails

def upsert_then_hang(self, points):
    n = real(self, points)
    open(sys.argv[2], "w").write(str(n))  # the points are in Qdrant, nothing committed yet
    time.sleep(600)

store.replace_mails = upsert_then_hang
JobRunner(svc, "w-killed", vector_owner=True).run(int(sys.argv[1]))
"""


def test_a_worker_killed_after_the_batch_upsert_before_its_commit_is_resumed_without_duplicates(
        env, settings, db, tmp_path):
    """GIVEN 10 waiting history mails WHEN the worker running their batch is SIGKILLed after
    the vector upsert and before the transaction that marks them indexed THEN nothing of the
    batch is marked (entries processing, mails pending); the stuck reset puts the entries
    back and their runs index every mail once: one vector per mail (the same point ids
    overwritten), one `indexed` event per mail, every entry done."""
    pairs = _history(db, [(f"Frage {n}", f"Der Drucker {n} druckt nicht.") for n in range(10)])
    marker = tmp_path / "upserted"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(pairs[0][1]), str(marker)],
                            env=dict(os.environ), stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "child.log", "wb"))
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), (tmp_path / "child.log").read_text()[-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    assert marker.read_text() == "10"
    assert set(_job_states(db).values()) == {"processing"}
    assert {r["index_status"] for r in _rows(db).values()} == {"pending"}

    svc = _services(settings)
    try:
        reset = svc.jobs.reset_stuck(0)
        assert len(reset) == 10 and {j.state for j in reset} == {"failed"}
        db.execute("UPDATE jobs SET next_run_at = NOW(6)")  # their retry time has come
        runner = JobRunner(svc, "w-after", vector_owner=True)
        assert {runner.run(j) for _, j in pairs} == {"done"}  # failed ones: each alone
        assert svc.vectors.count() == 10
        assert all(svc.vectors.count(e) == 1 for e, _ in pairs)
    finally:
        svc.close()
    assert set(_job_states(db).values()) == {"done"}
    assert {r["index_status"] for r in _rows(db).values()} == {"complete"}
    indexed = Counter(r["entity_id"] for r in db.fetchall(
        "SELECT entity_id FROM audit_log WHERE event = 'indexed'"))
    assert sorted(indexed.values()) == [1] * 10


@pytest.mark.parametrize("batch", [1])
def test_history_index_batch_1_is_one_mail_per_job(settings, db, batch):
    pairs = _history(db, [(f"Frage {n}", f"Text {n}") for n in range(3)])
    svc = _services(settings, history_index_batch=batch)
    try:
        runner = JobRunner(svc, "w-history", vector_owner=True)
        assert [runner.run(j) for _, j in pairs] == ["done"] * 3
    finally:
        svc.close()
