"""What one mail costs in MariaDB: the statements and commits of the poll that stores it, of
the job that drafts its reply, and of the retrieve step's reads (the figures of ``bench
hops``). Each figure is pinned: a change that adds a statement or a commit to a mail's path
fails here and must say why; one that saves some lowers the pin. On a mismatch the message
lists the statements (named query, or COMMIT) as ``Database.trace`` saw them.
"""

from __future__ import annotations

from typing import Any

import pytest
from email_rag_harness.bench.hops import StatementLog
from email_rag_harness.testing.mails import mail
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.core.index_ports import MailToIndex
from email_rag.indexing.indexer import Indexer
from email_rag.indexing.retrieval import Retriever
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending import review
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import run_job
from tests.index_helpers import make_sent_draft
from tests.integration.realpath import RealPath, llm  # noqa: F401 - the fixture
from tests.integration.test_sending import MemorySentFolder, draft_for
from tests.integration.test_sending import runner as send_runner

# (statements, commits)
# the first poll of a mailbox that stores one new mail with its job (each poll reads the
# mailboxes first, issue 44: one statement and its commit per poll, not per mail)
POLL = (15, 7)
# that mail's job, claim to draft, one process owning the vector store (classify's examples
# state and index's sent replies are read in the run's first read transaction: no commit of
# their own); the retrieve step's knowledge search is one read transaction of its own
# (passage vectors and words; the passages chosen only when there are any)
JOB = (26, 6)
RETRIEVE = (4, 1)  # the retrieve step's reads: lexical, thread, sent replies, sender history
# a history mail's index job alone: claim, look for companions, read, parse, index, status
# and finish, examples
HISTORY_JOB = (12, 8)
# an approval and its send job (of a mail without labels: no example to record; bench hops,
# with one: 33 / 9), the sent reply proposed as a knowledge candidate included (a read, an
# insert and its audit event: one transaction)
APPROVAL_TO_SEND = (32, 9)


class Listing(StatementLog):
    """The statements of the services' connection (``bench hops --statements``' listing)
    and the figures since it started."""

    def __init__(self, db: Any) -> None:
        super().__init__()
        self.db = db
        self.start = (db.statements, db.commits)
        db.trace = self

    def figures(self) -> tuple[int, int]:
        self.db.trace = None
        return (self.db.statements - self.start[0], self.db.commits - self.start[1])

    def __str__(self) -> str:
        return "\n".join(self.text())


@pytest.fixture
def path(settings, mailbox, llm):  # noqa: F811 - the module's scripted LLM
    p = RealPath(settings, mailbox, llm)
    yield p
    p.close()


def test_one_new_mail_costs_its_pinned_statements_and_commits_from_poll_to_draft(path):
    """GIVEN one support mail in a new mailbox WHEN it is polled and its job runs (scripted
    LLM, local Qdrant, hashing embedder) THEN it has a pending draft, and the poll and the
    job took exactly the pinned statements and commits."""
    path.deliver(mail(1, subject="Drucker druckt nicht", body="Mein Drucker druckt nicht."))
    poll = Listing(path.db)
    assert path.poll().total("queued") == 1
    assert poll.figures() == POLL, f"the poll's statements:\n{poll}"

    (job,) = path.db.fetchall("SELECT id FROM jobs WHERE kind = 'process_email'")
    work = Listing(path.db)
    assert run_job(path.runner, job["id"]) == "done"
    assert work.figures() == JOB, f"the job's statements:\n{work}"
    assert path.db.fetchone("SELECT id FROM drafts WHERE status = 'pending_review'")


@pytest.fixture
def services(settings):
    svc = Services(settings)
    yield svc
    svc.close()


def test_the_retrieve_step_reads_in_one_transaction_and_asks_for_sent_replies_once(services, db):
    """GIVEN a mail whose thread has an earlier mail we answered and whose text is like an
    answered case WHEN retrieval runs THEN the similar case and the thread both carry our
    replies, and MariaDB was read in one transaction of four statements (the sent replies
    of the candidates and of the thread in one query)."""
    box = make_mailbox(db, "support")
    body = "The printer shows error E42 after the firmware update and prints nothing."
    similar = make_email(db, mailbox_id=box, subject="Printer error", body=body)
    earlier = make_email(db, mailbox_id=box, subject="Printer", thread_key="T1", body="First.")
    for email_id in (similar, earlier):
        Indexer(services).index(db.fetchone("SELECT * FROM emails WHERE id = %s", (email_id,)))
    make_sent_draft(db, similar, "draft", final="Install firmware 1.2.1.")
    make_sent_draft(db, earlier, "We are looking into it.")
    new = make_email(db, mailbox_id=box, subject="Printer error", body=body, thread_key="T1",
                     from_addr="dave@example.org")
    mail_row = MailToIndex.of(db.fetchone("SELECT * FROM emails WHERE id = %s", (new,)))

    reads = Listing(services.db)
    got = Retriever(services).retrieve(mail_row)
    assert reads.figures() == RETRIEVE, f"retrieval's statements:\n{reads}"
    assert [c.reply.text for c in got.similar if c.email_id == similar] == [
        "Install firmware 1.2.1."]
    assert [t.sent_reply for t in got.thread] == ["We are looking into it."]


def split_runs(path, n: int) -> tuple[list[list[str]], str]:
    """Mail ``n``'s job run by a worker without the vector store (parse, classify, then a
    hand-off), the vector owner (index, retrieve, hand-back) and the first worker again
    (draft): the statement names (and COMMITs) of each run, and the last run's result."""
    path.deliver(mail(n, subject="Rechnung doppelt", body="Die Rechnung kam doppelt."))
    path.poll()
    (job,) = path.db.fetchall("SELECT id FROM jobs WHERE kind = 'process_email'")
    plain = JobRunner(path.svc, "w-plain", vector_owner=False)
    runs, result = [], ""
    for runner in (plain, path.runner, plain):
        listing = Listing(path.db)
        result = runner.run(job["id"])
        listing.figures()
        runs.append([name for _, name, _ in listing.lines])
    return runs, result


def test_the_raw_mail_is_read_with_the_mail_only_by_the_run_that_parses_it(path):
    """GIVEN a mail's job run by a worker without the vector store (parse, classify, then a
    hand-off), the vector owner (index, retrieve, hand-back) and the first worker again
    (draft) WHEN each run reads the mail THEN only the first read includes the raw source
    (in the same statement: the parse step reads nothing itself), the others do not."""
    runs, result = split_runs(path, 2)
    reads = [[n for n in names if n.startswith(("pipeline_run_mail", "ingest_email_raw"))]
             for names in runs]
    assert result == "done"
    assert reads == [["pipeline_run_mail_raw"], ["pipeline_run_mail"], ["pipeline_run_mail"]]


def test_a_history_mail_s_index_job_costs_its_pinned_statements_and_commits(services, db):
    """GIVEN a history mail not parsed yet and its index_history entry WHEN the job runs
    THEN the mail is parsed and indexed, and the run took exactly the pinned statements and
    commits (the mail is read with its raw source once, not re-read after the parse)."""
    email_id = make_email(db, status="history", parse_status="pending", body=None,
                          subject="Drucker", raw=mail(3, body="Der Drucker druckt nicht."))
    job = make_job(db, email_id, queue="email-rag-history", kind="index_history")
    listing = Listing(services.db)
    assert JobRunner(services, "w-history", vector_owner=True).run(job) == "done"
    assert listing.figures() == HISTORY_JOB, f"the job's statements:\n{listing}"
    row = db.fetchone("SELECT parse_status, body_text, index_status FROM emails WHERE id = %s",
                      (email_id,))
    assert (row["parse_status"], row["index_status"]) == ("ok", "complete")
    assert "druckt nicht" in row["body_text"]


def test_a_batch_of_history_mails_costs_the_commits_of_one(services, db):
    """GIVEN 20 history mails not parsed yet, each with its index_history entry WHEN the
    first entry's job runs THEN it indexes all 20 (the others ride along and their own runs
    are no-ops) with the commits of a job of one mail: one transaction per batch step, not
    per mail."""
    ids = [make_email(db, status="history", parse_status="pending", body=None,
                      subject=f"Drucker {n}", raw=mail(n, body=f"Der Drucker {n} druckt nicht."))
           for n in range(20)]
    jobs = [make_job(db, i, queue="email-rag-history", kind="index_history") for i in ids]
    listing = Listing(services.db)
    runner = JobRunner(services, "w-history", vector_owner=True)
    assert runner.run(jobs[0]) == "done"
    statements, commits = listing.figures()
    assert commits == HISTORY_JOB[1], f"the batch's statements:\n{listing}"
    assert [runner.run(j) for j in jobs[1:]] == ["skipped"] * 19
    rows = db.fetchall("SELECT parse_status, index_status FROM emails ORDER BY id")
    assert {(r["parse_status"], r["index_status"]) for r in rows} == {("ok", "complete")}
    assert {r["state"] for r in db.fetchall("SELECT state FROM jobs")} == {"done"}
    assert services.vectors.count() == 20


def test_an_approval_and_its_send_cost_their_pinned_statements_and_commits(settings, db):
    """GIVEN a pending draft WHEN staff approve it and its send job runs against the relay
    THEN the reply is sent once, and approval and send took exactly the pinned statements
    and commits (``bench hops``' approval -> send leg)."""
    sent = MemorySentFolder()
    with FaultSmtpServer(file_to=sent.append) as relay:
        svc = Services(settings.model_copy(update={"smtp_port": relay.port, "retry_jitter": 0}))
        try:
            _, draft = draft_for(db)
            svc.mailboxes.entries()  # read once per poll interval by a running worker
            listing = Listing(svc.db)
            job = review.approve(svc, draft, "anna").job_id
            assert send_runner(svc, sent).run(int(job or 0)) == "done"
            assert listing.figures() == APPROVAL_TO_SEND, f"the statements:\n{listing}"
        finally:
            svc.close()
    assert len(sent.messages) == 1


def test_the_examples_state_is_read_with_the_mail_only_by_the_run_that_classifies(path):
    """GIVEN a mail's job run by a worker without the vector store (parse, classify, then a
    hand-off), the vector owner (index, retrieve, hand-back) and the first worker again
    (draft) WHEN each run starts THEN only the first run reads the examples' state, in its
    first read transaction (before its first commit), and no step reads it again."""
    runs, result = split_runs(path, 4)
    reads = []
    for names in runs:
        first = names[:names.index("COMMIT", names.index(next(
            n for n in names if n.startswith("pipeline_run_mail"))))]
        reads.append(("examples_state" in first, names.count("examples_state")))
    assert result == "done"
    assert reads == [(True, 1), (False, 0), (False, 0)]
