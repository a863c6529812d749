"""Wiring and running: Services, the job runner, maintenance."""
