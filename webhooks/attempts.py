"""Sending deliveries: claim (a lease), one signed POST, and recording the outcome.

See services.py for the lifecycle; these are the writes of a worker's attempt.
"""

import json
import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from webhooks.addresses import url_origin
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt, WebhookDestination
from webhooks.sender import SendResult, send
from webhooks.services import (
    deliveries_enqueue,
    destination_enabled_set,
    destination_signing_secrets,
)

logger = logging.getLogger(__name__)

# The columns _outcome_record writes, and its PostgreSQL statement (fixed text, parameters only).
DELIVERY_OUTCOME_COLUMNS = (
    "status",
    "response_status",
    "response_body",
    "next_attempt_at",
    "enqueued_at",
    "lease_until",
    "lease_token",
    "updated_at",
)
ATTEMPT_OUTCOME_COLUMNS = (
    "delivery_id",
    "number",
    "url",
    "started_at",
    "finished_at",
    "duration_ms",
    "response_status",
    "response_body",
    "error",
)
OUTCOME_RECORD_SQL = """
WITH moved AS (
    UPDATE webhooks_webhookdelivery
    SET status = %s, response_status = %s, response_body = %s, next_attempt_at = %s,
        enqueued_at = %s, lease_until = %s, lease_token = %s, updated_at = %s
    WHERE id = %s AND lease_token = %s
    RETURNING id
)
INSERT INTO webhooks_webhookdeliveryattempt
    (delivery_id, number, url, started_at, finished_at, duration_ms, response_status,
     response_body, error)
SELECT moved.id, %s, %s, %s, %s, %s, %s, %s, %s FROM moved
"""


ABANDONED_ATTEMPT_ERROR = "abandoned: the worker stopped before an outcome (lease expired)"


def delivery_claim(*, delivery_id) -> tuple[WebhookDelivery, WebhookDeliveryAttempt] | None:
    """Leases a due pending delivery to this worker and counts its attempt; None if not due,
    already final, or leased by another worker.

    One conditional UPDATE takes the lease: PostgreSQL re-checks the WHERE clause of a
    concurrent UPDATE after the first one commits, so exactly one worker wins an attempt.
    """
    now = timezone.now()
    token = uuid.uuid4()
    # Autocommitted statements, no transaction: the UPDATE is the claim; what follows only
    # reads or records, and a worker dying in between just lets the lease run out.
    claimed = (
        WebhookDelivery.objects.filter(
            pk=delivery_id, status=WebhookDelivery.STATUS_PENDING, next_attempt_at__lte=now
        )
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(
            lease_until=now + timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS),
            lease_token=token,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
    )
    if not claimed:
        return None
    delivery = WebhookDelivery.objects.select_related("event", "destination").get(pk=delivery_id)
    if delivery.attempts > 1:
        _abandoned_attempts_record(delivery=delivery, now=now)
    destination = delivery.destination
    if destination is None or not destination.enabled:
        # This claim's attempt is not made; earlier ones make it `failed`, not `disabled`.
        tried = delivery.attempts > 1
        WebhookDelivery.objects.filter(pk=delivery.pk, lease_token=token).update(
            status=WebhookDelivery.STATUS_FAILED if tried else WebhookDelivery.STATUS_DISABLED,
            attempts=F("attempts") - 1,
            lease_until=None,
            lease_token=None,
            next_attempt_at=None,
            enqueued_at=None,
        )
        return None
    origin = url_origin(destination.url)
    if origin != delivery.destination_origin:
        # The destination's URL changed since the delivery was created: show where it goes.
        delivery.destination_origin = origin
        WebhookDelivery.objects.filter(pk=delivery.pk).update(destination_origin=origin)
    # Saved with its outcome, in the transaction that moves the delivery on.
    attempt = WebhookDeliveryAttempt(
        delivery=delivery, number=delivery.attempts, url=destination.url, started_at=now
    )
    return delivery, attempt


def _abandoned_attempts_record(*, delivery: WebhookDelivery, now) -> None:
    """Attempts counted by a claim but never recorded belong to a worker that died (its lease
    ran out): they are recorded as abandoned, so `attempts` always matches the attempt rows."""
    recorded = set(delivery.attempt_records.values_list("number", flat=True))
    WebhookDeliveryAttempt.objects.bulk_create(
        [
            WebhookDeliveryAttempt(
                delivery=delivery,
                number=number,
                url=delivery.destination.url if delivery.destination else "",
                started_at=now,
                finished_at=now,
                error=ABANDONED_ATTEMPT_ERROR,
            )
            for number in range(1, delivery.attempts)
            if number not in recorded
        ],
        ignore_conflicts=True,
    )


def _retry_delay(*, attempts: int, result: SendResult) -> float | None:
    """Seconds until the next attempt, or None when the schedule is exhausted."""
    schedule = settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS
    if attempts > len(schedule):
        return None
    delay = schedule[attempts - 1]
    if result.retry_after_seconds is not None:
        # Honoured when it asks for longer, within the schedule's longest wait.
        delay = max(delay, min(result.retry_after_seconds, max(schedule)))
    return delay


def delivery_attempt_finish(
    *, delivery: WebhookDelivery, attempt: WebhookDeliveryAttempt, result: SendResult
) -> str:
    """Records an attempt's outcome and moves the delivery on; returns its new status."""
    now = timezone.now()
    destination = delivery.destination
    delay = None
    if result.succeeded:
        status = WebhookDelivery.STATUS_SUCCEEDED
    elif result.response_status == 410:
        status = WebhookDelivery.STATUS_FAILED
    else:
        delay = _retry_delay(attempts=delivery.attempts, result=result)
        status = WebhookDelivery.STATUS_FAILED if delay is None else WebhookDelivery.STATUS_PENDING
    next_attempt_at = now + timedelta(seconds=delay) if delay is not None else None
    queue_now = delay is not None and delay <= settings.WEBHOOKS_COUNTDOWN_MAX_SECONDS
    attempt.finished_at = now
    attempt.duration_ms = result.duration_ms
    attempt.response_status = result.response_status
    attempt.response_body = result.response_body
    attempt.error = result.error[:500]
    outcome = {
        "status": status,
        "response_status": result.response_status,
        "response_body": result.response_body,
        "next_attempt_at": next_attempt_at,
        "enqueued_at": next_attempt_at if queue_now else None,
        "lease_until": None,
        "lease_token": None,
        "updated_at": now,
    }
    if not _outcome_record(delivery=delivery, attempt=attempt, outcome=outcome):
        # The lease ran out and another worker took the delivery over: its outcome counts.
        logger.warning("webhook delivery %s: lease lost during attempt", delivery.pk)
        return WebhookDelivery.objects.get(pk=delivery.pk).status
    disabled_now = _destination_health_update(destination=destination, result=result, now=now)
    if status == WebhookDelivery.STATUS_PENDING and (
        _retry_cancel_if_destination_off(delivery_id=delivery.pk, now=now) or disabled_now
    ):
        status = WebhookDelivery.STATUS_FAILED
    if status == WebhookDelivery.STATUS_PENDING and queue_now:
        transaction.on_commit(
            lambda: deliveries_enqueue([delivery.pk], countdown=delay), robust=True
        )
    return status


def _outcome_record(*, delivery: WebhookDelivery, attempt: WebhookDeliveryAttempt, outcome) -> bool:
    """Moves the delivery on and saves the attempt, atomically, if this worker still holds the
    lease; False otherwise. On PostgreSQL one statement (a data-modifying CTE: one round trip
    instead of BEGIN, UPDATE, INSERT, COMMIT), elsewhere a transaction."""
    if connection.vendor != "postgresql":
        with transaction.atomic():
            updated = WebhookDelivery.objects.filter(
                pk=delivery.pk, lease_token=delivery.lease_token
            ).update(**outcome)
            if updated:
                attempt.save(force_insert=True)
        return bool(updated)
    attempt_columns = ATTEMPT_OUTCOME_COLUMNS
    params = [
        *(outcome[column] for column in DELIVERY_OUTCOME_COLUMNS),
        delivery.pk,
        delivery.lease_token,
        *(getattr(attempt, column) for column in attempt_columns[1:]),
    ]
    with connection.cursor() as cursor:
        cursor.execute(OUTCOME_RECORD_SQL, params)
        return cursor.rowcount == 1


def _retry_cancel_if_destination_off(*, delivery_id, now) -> bool:
    """A retry is not scheduled for a destination disabled or deleted during the attempt (its
    pending deliveries were settled then, except this leased one): the delivery is `failed`."""
    return bool(
        WebhookDelivery.objects.filter(
            pk=delivery_id, status=WebhookDelivery.STATUS_PENDING, lease_until__isnull=True
        )
        .filter(Q(destination__isnull=True) | Q(destination__enabled=False))
        .update(
            status=WebhookDelivery.STATUS_FAILED,
            next_attempt_at=None,
            enqueued_at=None,
            updated_at=now,
        )
    )


def _destination_health_update(*, destination, result: SendResult, now) -> bool:
    """410 Gone, or failing every attempt for WEBHOOKS_DISABLE_AFTER_FAILING, disables it;
    returns whether it did (its pending deliveries, this one included, are then settled).

    `destination` is as read at claim time; the conditional UPDATEs keep it right when other
    workers change it meanwhile, and are skipped when there is nothing to change.
    """
    if result.succeeded:
        if destination.failing_since is not None:
            WebhookDestination.objects.filter(pk=destination.pk).update(failing_since=None)
        return False
    if destination.failing_since is None:
        WebhookDestination.objects.filter(pk=destination.pk, failing_since__isnull=True).update(
            failing_since=now
        )
    reason = ""
    if result.response_status == 410:
        reason = WebhookDestination.DISABLED_GONE
    elif destination.failing_since is not None:
        failing_since = (
            WebhookDestination.objects.filter(pk=destination.pk)
            .values_list("failing_since", flat=True)
            .first()
        )
        if failing_since and failing_since <= now - settings.WEBHOOKS_DISABLE_AFTER_FAILING:
            reason = WebhookDestination.DISABLED_FAILING
    if reason:
        logger.warning("webhook destination %s disabled: %s", destination.pk, reason)
        destination_enabled_set(destination=destination, enabled=False, reason=reason)
    return bool(reason)


def delivery_send(*, delivery_id) -> str | None:
    """One attempt of a delivery, if it is due and free; returns its new status or None."""
    from events.serializers import event_resource

    claim = delivery_claim(delivery_id=delivery_id)
    if claim is None:
        return None
    delivery, attempt = claim
    body = json.dumps(event_resource(delivery.event), separators=(",", ":")).encode()
    result = send(
        url=attempt.url,
        message_id=delivery.event_id,
        body=body,
        secrets=destination_signing_secrets(delivery.destination),
    )
    return delivery_attempt_finish(delivery=delivery, attempt=attempt, result=result)
