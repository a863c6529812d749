"""Running: the RQ task entry points (``tasks``), the job runner, the scheduler process,
maintenance."""
