"""IMAP ingestion: header parsing, MIME parsing, batch storage and the poller."""
