"""Test doubles and local services that ship with the project (tests, chaos harness, demo).

Everything here is labelled as what it is: a private Dovecot, a scripted LLM
server, a fault-injecting SMTP server, a TCP fault proxy. None of it is used
by the production pipeline.
"""
