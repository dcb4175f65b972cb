import logging

from celery import shared_task

from config.celery import DATABASE_RETRY
from events.services import partitions_upkeep

logger = logging.getLogger(__name__)


# A database connection ended under it (a restart): retried, not failed (DATABASE_RETRY).
@shared_task(name="events.partitions", **DATABASE_RETRY)
def partitions_upkeep_task():
    done = partitions_upkeep()
    logger.info(
        "events partitions: %d days created ahead, %d events past retention removed",
        done["created"],
        done["pruned"],
    )
