"""Short periodic jobs: run by the scheduler and by the CLI for system cron."""

from __future__ import annotations

import logging

from ..core.records import Job
from ..wiring.services import Services

log = logging.getLogger(__name__)


def cleanup_stuck(services: Services) -> list[Job]:
    """Reset entries processing longer than stuck_after_seconds into the retry cycle,
    except those whose worker still beats (a healthy job is never reset: email_rag.core.timing)."""
    from ..core.timing import alive_jobs

    store = services.jobs
    stuck_after = services.settings.stuck_after_seconds
    return store.reset_stuck(stuck_after,
                             alive=lambda ids: alive_jobs(services.coordination, ids, stuck_after))


def flush_audit_spool(services: Services) -> int:
    return services.audit.flush_spool()
