import logging

from celery import shared_task

from config.celery import DATABASE_RETRY
from events.services import events_prune

logger = logging.getLogger(__name__)


# A database connection ended under it (a restart): retried, not failed (DATABASE_RETRY).
@shared_task(name="events.prune", **DATABASE_RETRY)
def events_prune_task():
    deleted = events_prune()
    logger.info("events prune: done, %d events older than the retention window deleted", deleted)
