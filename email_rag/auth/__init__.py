"""Sign-in: staff accounts and roles, the login check and its throttle, sessions, and the
first start (the set-up link that creates the first admin)."""
