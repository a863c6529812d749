"""The test harness of email-rag, a distribution of its own (harness/pyproject.toml): the
chaos run (``chaos``), test doubles and private servers (``testing``), the demo
(``demo``), the sample mailbox (``sample_mailbox``) and the benchmarks (``bench``).

It imports the product; the product never imports it. ``email-rag chaos|demo|bench|
sample-mailbox`` hand over to its programs (``python -m email_rag_harness.NAME``).
"""

from pathlib import Path

from email_rag.db.queries import add_query_file

# the harness's own named queries (sql/*.sql: benchmarks, chaos read-outs, the demo's
# summary), beside the product's for this process: loaded before any harness module runs
for _path in sorted((Path(__file__).parent / "sql").glob("*.sql")):
    add_query_file(_path)
