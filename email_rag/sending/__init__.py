"""Drafts, approval and exactly-once sending."""
