"""Celery tasks of the webhooks area: thin, they take ids and call services."""

import logging

from celery import shared_task

from webhooks.attempts import delivery_send
from webhooks.services import deliveries_sweep

logger = logging.getLogger(__name__)


@shared_task(name="webhooks.delivery_send")
def delivery_send_task(delivery_id: str):
    """One attempt of a delivery; a no-op when it is not due, final, or leased elsewhere."""
    return delivery_send(delivery_id=delivery_id)


@shared_task(name="webhooks.deliveries_sweep")
def deliveries_sweep_task():
    queued = deliveries_sweep()
    if queued:
        logger.info("webhooks sweep: queued %d due deliveries", queued)
    return queued
