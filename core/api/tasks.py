import logging

from celery import shared_task

from core.api.idempotency import idempotency_keys_prune

logger = logging.getLogger(__name__)


@shared_task(name="api.idempotency_keys_prune")
def idempotency_keys_prune_task():
    deleted = idempotency_keys_prune()
    logger.info("pruned %d expired idempotency keys", deleted)
