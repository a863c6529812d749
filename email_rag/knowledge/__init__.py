"""The team's knowledge as a source of drafts (docs/knowledge.md)."""
