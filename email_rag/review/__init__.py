"""The desk's casework: the review queue, assignment, notes, snooze, bulk actions, the
no-reply list, the failure console, a mail's timeline and search."""
