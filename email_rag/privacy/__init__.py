"""A person's data: export and erasure on request (``personal_data``), the deletion of mails in
every store (``erasure``), retention per mailbox, and erasure requests from the admin page."""
