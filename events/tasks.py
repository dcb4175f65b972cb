import logging

from celery import shared_task

from events.services import events_prune

logger = logging.getLogger(__name__)


@shared_task(name="events.prune")
def events_prune_task():
    deleted = events_prune()
    logger.info("events prune: done, %d events older than the retention window deleted", deleted)
