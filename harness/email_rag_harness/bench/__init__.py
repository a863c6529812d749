"""Benchmarks, run on demand: ``python -m bench NAME [--mails N] [--json]`` or
``email-rag bench NAME ...`` (README "Performance").

Every benchmark measures the project next to a bare script doing the same I/O in
the same run and reports ratios; each run works in its own database, Redis db and
temp folder, and checks its own result before it reports a figure.
"""
