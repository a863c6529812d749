"""Short periodic jobs: run by the scheduler and by the CLI for system cron."""

from __future__ import annotations

import logging

from ..core.records import Job
from ..wiring.services import Services

log = logging.getLogger(__name__)


def cleanup_stuck(services: Services) -> list[Job]:
    """Reset entries processing longer than stuck_after_seconds into the retry cycle,
    except those whose worker still beats inside its step's deadline (a healthy job is never
    reset; a hung one is, although its process lives: email_rag.core.timing)."""
    from ..core.timing import liveness

    store = services.jobs
    stuck_after = services.settings.stuck_after_seconds
    return store.reset_stuck(stuck_after, liveness=lambda claims: liveness(
        services.coordination, claims, stuck_after))


def flush_audit_spool(services: Services) -> int:
    return services.audit.flush_spool()
