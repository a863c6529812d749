"""The test harness of email-rag, a distribution of its own (harness/pyproject.toml): the
chaos run (``chaos``), test doubles and private servers (``testing``), the demo
(``demo``), the sample mailbox (``sample_mailbox``) and the benchmarks (``bench``).

It imports the product; the product never imports it. ``email-rag chaos|demo|bench|
sample-mailbox`` hand over to its programs (``python -m email_rag_harness.NAME``).
"""
