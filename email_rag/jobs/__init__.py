"""The job queue's record: JobStore and dispatch to RQ."""
