"""Indexing and retrieval: chunking, the index step's policy, the periodic sync.

Domain code here receives the adapters (``Services.embedder``, ``.vectors``,
``.graph``) through the interfaces in ``ports``; it never imports a client
library.
"""
