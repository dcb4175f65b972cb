"""Celery tasks of the webhooks area: thin, they take ids and call attempts.py or queueing.py."""

import logging

from celery import shared_task
from django.conf import settings

from config.celery import DATABASE_RETRY
from webhooks.dispatch.attempts import channel_drain, delivery_send
from webhooks.dispatch.queueing import (
    CHANNEL_DRAIN_TASK,
    DELIVERIES_SWEEP_TASK,
    DELIVERY_SEND_TASK,
    deliveries_sweep,
)

logger = logging.getLogger(__name__)


# An attempt stops itself at WEBHOOKS_TIMEOUT_SECONDS (webhooks/dispatch/sender.py); the hard limit
# is the backstop for what that cannot cut (a TLS handshake trickled byte by byte), and ends the
# task a margin before its leases do (webhooks.E001). Prefork pool only (config/celery.py). A
# database connection ended under a task (a restart): retried, not failed (DATABASE_RETRY).
@shared_task(
    name=DELIVERY_SEND_TASK, time_limit=settings.WEBHOOKS_TIME_LIMIT_SECONDS, **DATABASE_RETRY
)
def delivery_send_task(delivery_id: str):
    """One attempt of a delivery; a no-op when it is not due, final, or leased elsewhere."""
    return delivery_send(delivery_id=delivery_id)


@shared_task(
    name=CHANNEL_DRAIN_TASK, time_limit=settings.WEBHOOKS_TIME_LIMIT_SECONDS, **DATABASE_RETRY
)
def channel_drain_task(channel_id: int):
    """Sends a channel's due deliveries, oldest first (new deliveries come this way)."""
    return channel_drain(channel_id=channel_id)


@shared_task(name=DELIVERIES_SWEEP_TASK, **DATABASE_RETRY)
def deliveries_sweep_task():
    queued = deliveries_sweep()
    if queued:
        logger.info("webhooks sweep: queued %d due deliveries", queued)
    return queued
