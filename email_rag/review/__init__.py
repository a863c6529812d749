"""What staff and admins do: the review desk, no-reply list, failure console, timeline, users."""
