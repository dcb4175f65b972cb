"""Celery tasks of the webhooks area: thin, they take ids and call services."""

import logging

from celery import shared_task
from django.conf import settings

from webhooks.attempts import delivery_send
from webhooks.services import deliveries_sweep

logger = logging.getLogger(__name__)


# The attempt stops itself at WEBHOOKS_TIMEOUT_SECONDS (webhooks/sender.py); the hard limit is
# the backstop for what that cannot cut (a TLS handshake trickled byte by byte), and ends the
# task before its lease does: the task starts before it claims. Prefork pool only (not --pool solo).
@shared_task(name="webhooks.delivery_send", time_limit=settings.WEBHOOKS_LEASE_SECONDS)
def delivery_send_task(delivery_id: str):
    """One attempt of a delivery; a no-op when it is not due, final, or leased elsewhere."""
    return delivery_send(delivery_id=delivery_id)


@shared_task(name="webhooks.deliveries_sweep")
def deliveries_sweep_task():
    queued = deliveries_sweep()
    if queued:
        logger.info("webhooks sweep: queued %d due deliveries", queued)
    return queued
