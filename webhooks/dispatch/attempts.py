"""A delivery's way through a worker, top to bottom: take the send slots, claim the delivery
(a lease), send one signed POST, record the outcome, release the slots and wake who waits.

The two ways in are at the end: `delivery_send` (one delivery: a retry, the sweeper's orphans)
and `channel_drain` (a channel's due deliveries in turn: new deliveries, wake-ups).
Creating deliveries is services.py's, queueing them queueing.py's; the tasks only call these
two. What the way uses, each in its own module: the send slots (slots.py: how many sends are
in flight at once), the leases kept alive while their worker lives (leases.py), and what a
failed attempt leads to (failures.py: the retry's wait, the channel's health).
"""

import logging
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from core.operations import metrics
from webhooks.dispatch.failures import (
    channel_health_update,
    retry_cancel_if_channel_off,
    retry_delay,
)
from webhooks.dispatch.leases import LeaseKeeper, delivery_lease, outcome_record
from webhooks.dispatch.queueing import (
    channel_drain_marker_clear,
    channel_drain_marker_hold,
    channel_drain_marker_let_go,
    deliveries_enqueue,
)
from webhooks.dispatch.sender import SendResult, send, signing_secrets, webhook_body
from webhooks.dispatch.slots import slots_held
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt, url_origin

logger = logging.getLogger(__name__)

ABANDONED_ATTEMPT_ERROR = "abandoned: the worker stopped before an outcome (lease expired)"
NO_SIGNING_SECRET_ERROR = (
    "not sent: the store has no signing secret (PUT /api/v2/webhook-channels/signing-secret)"
)


# --- 1. claim the delivery --------------------------------------------------------------------


def delivery_claim(
    *, delivery_id=None, channel_id=None, leases: LeaseKeeper | None = None
) -> tuple[WebhookDelivery, WebhookDeliveryAttempt] | bool | None:
    """Leases a due pending delivery (this one, or the channel's oldest due) to this worker,
    renewed by `leases` (none: nobody renews it, as after the worker's death), and counts its
    attempt; returns it with its attempt to make, None if none is due, it is final, or another
    worker has it, and False when the claimed delivery's channel is disabled or deleted, or
    its schedule's attempts are all spent (the last one lost with its worker): it is settled
    without an attempt (a drain goes on after that)."""
    now = timezone.now()
    token = uuid.uuid4()
    # Autocommitted statements, no transaction: the claim is one statement; what follows only
    # reads or records, and a worker dying in between just lets the lease run out.
    match = {"delivery_id": delivery_id} if delivery_id else {"channel_id": channel_id}
    delivery = delivery_lease(now=now, token=token, **match)
    if delivery is None:
        return None
    if delivery.status == WebhookDelivery.STATUS_FAILED:
        # Its schedule was spent by attempts whose workers died: settled, not tried again.
        _abandoned_attempts_record(delivery=delivery, now=now, through=delivery.attempts)
        metrics.webhook_delivery_settled("failed")
        logger.warning("webhook delivery %s: failed, its last attempt abandoned", delivery.pk)
        return False
    if leases is not None:
        leases.hold(token, taken_at=now)
    if delivery.attempts > 1:
        _abandoned_attempts_record(delivery=delivery, now=now, through=delivery.attempts - 1)
    channel = delivery.channel
    if channel is None or not channel.enabled:
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
        if leases is not None:
            leases.drop(token)
        metrics.webhook_delivery_settled("failed" if tried else "disabled")
        return False
    origin = url_origin(channel.url)
    if origin != delivery.destination_origin:
        # The channel's URL changed since the delivery was created: show where it goes.
        delivery.destination_origin = origin
        WebhookDelivery.objects.filter(pk=delivery.pk).update(destination_origin=origin)
    # Saved with its outcome, in the transaction that moves the delivery on.
    attempt = WebhookDeliveryAttempt(
        delivery=delivery,
        delivery_event_occurred_at=delivery.event_occurred_at,
        number=delivery.attempts,
        origin=origin,
        started_at=now,
    )
    return delivery, attempt


def _abandoned_attempts_record(*, delivery: WebhookDelivery, now, through: int) -> None:
    """Attempts up to number `through` counted by a claim but never recorded belong to a worker
    that died (its lease ran out): they are recorded as abandoned, so `attempts` always matches
    the attempt rows."""
    recorded = set(delivery.attempt_records.values_list("number", flat=True))
    WebhookDeliveryAttempt.objects.bulk_create(
        [
            WebhookDeliveryAttempt(
                delivery=delivery,
                delivery_event_occurred_at=delivery.event_occurred_at,
                number=number,
                origin=delivery.destination_origin,
                started_at=now,
                finished_at=now,
                error=ABANDONED_ATTEMPT_ERROR,
            )
            for number in range(1, through + 1)
            if number not in recorded
        ],
        ignore_conflicts=True,
    )


# --- 2. send --------------------------------------------------------------------------------


def _attempt_make(
    delivery: WebhookDelivery, attempt: WebhookDeliveryAttempt, leases: LeaseKeeper
) -> str:
    """Sends the claimed delivery once and records the outcome; returns its new status.

    Whatever goes wrong on the way (a bug, an answer nobody foresaw) ends as a recorded failed
    attempt on the schedule, not as an exception: that would end a drain and leave the
    delivery to its lease's lapse. A lost database connection is the exception: the task
    retries (config.celery.DATABASE_RETRY) and the lapse counts the attempt (CLAIM_SQL)."""
    started = time.monotonic()
    try:
        result = _attempt_send(delivery)
        return delivery_attempt_finish(delivery=delivery, attempt=attempt, result=result)
    except (OperationalError, InterfaceError):
        raise
    except Exception as error:
        logger.exception(
            "webhook delivery %s attempt %s: recorded as failed after an error",
            delivery.pk,
            attempt.number,
        )
        # Nothing of the message: it may quote the answer or the URL. If the outcome was
        # recorded already, this records nothing (the lease is no longer this worker's).
        failed = SendResult(
            None,
            None,
            f"internal error: {type(error).__name__}",
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        return delivery_attempt_finish(delivery=delivery, attempt=attempt, result=failed)
    finally:
        leases.drop(delivery.lease_token)  # recorded, or left to run out as a dead worker's


def _attempt_send(delivery: WebhookDelivery) -> SendResult:
    body = webhook_body(delivery.event, test=False)
    secrets = signing_secrets(store_id=delivery.store_id)
    if not secrets:
        # Never an unsigned delivery: a failed attempt the schedule retries, which goes
        # through once the store's signing secret is set (channels made by the SDK have
        # none until its rotate call).
        return SendResult(None, None, NO_SIGNING_SECRET_ERROR, duration_ms=0)
    return send(url=delivery.channel.url, message_id=delivery.event_id, body=body, secrets=secrets)


# --- 3. record the outcome ----------------------------------------------------------------------


def delivery_attempt_finish(
    *, delivery: WebhookDelivery, attempt: WebhookDeliveryAttempt, result: SendResult
) -> str:
    """Records an attempt's outcome and moves the delivery on; returns its new status."""
    now = timezone.now()
    channel = delivery.channel
    delay = None
    if result.succeeded:
        status = WebhookDelivery.STATUS_SUCCEEDED
    elif result.response_status == 410:
        status = WebhookDelivery.STATUS_FAILED
    else:
        delay = retry_delay(attempts=delivery.attempts, result=result)
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
    if not outcome_record(delivery=delivery, attempt=attempt, outcome=outcome):
        # The lease ran out and another worker took the delivery over: its outcome counts.
        logger.warning("webhook delivery %s: lease lost during attempt", delivery.pk)
        return WebhookDelivery.objects.get(pk=delivery.pk).status
    disabled_now = channel_health_update(channel=channel, result=result, now=now)
    if status == WebhookDelivery.STATUS_PENDING and (
        retry_cancel_if_channel_off(delivery_id=delivery.pk, now=now) or disabled_now
    ):
        status = WebhookDelivery.STATUS_FAILED
    if status == WebhookDelivery.STATUS_PENDING and queue_now:
        transaction.on_commit(
            lambda: deliveries_enqueue([delivery.pk], countdown=delay), robust=True
        )
    metrics.webhook_attempt_finished(response_status=result.response_status, final_status=status)
    # The error's kind only ("connection error", "HTTP 500"): its text may quote the
    # channel's path, which can be a credential (hooks.slack.com/services/...).
    error_kind = result.error.split(":", 1)[0][:40] or None
    logger.info(
        "webhook delivery %s attempt %s: %s (HTTP %s, %s, %d ms)",
        delivery.pk,
        attempt.number,
        status,
        result.response_status,
        error_kind or "no error",
        result.duration_ms,
        extra={
            "delivery_id": str(delivery.pk),
            "event_id": str(delivery.event_id),
            "channel_id": channel.pk,
            "attempt": attempt.number,
            "delivery_status": status,
            "response_status": result.response_status,
            "error_kind": error_kind,
            "duration_ms": result.duration_ms,
        },
    )
    return status


# --- the ways in ----------------------------------------------------------------------------


def delivery_send(*, delivery_id) -> str | None:
    """One attempt of a delivery, if it is due and free and its channel has a free send
    slot; returns its new status or None (a delivery left waiting is sent by a drain)."""
    with LeaseKeeper() as leases:
        return _delivery_send(delivery_id, leases)


def _delivery_send(delivery_id, leases: LeaseKeeper) -> str | None:
    channel_id = (
        WebhookDelivery.objects.filter(pk=delivery_id).values_list("channel_id", flat=True).first()
    )
    if channel_id is None:
        # Unknown, or its channel was deleted: the claim settles it without sending.
        claim = delivery_claim(delivery_id=delivery_id, leases=leases)
        return _attempt_make(*claim, leases) if claim else None
    with slots_held(channel_id, leases) as held:
        if held is None:
            return None
        claim = delivery_claim(delivery_id=delivery_id, leases=leases)
        return _attempt_make(*claim, leases) if claim else None


def channel_drain(*, channel_id) -> int:
    """Sends the channel's due deliveries one after another, oldest first, for at most
    WEBHOOKS_DRAIN_SECONDS; returns how many it claimed.

    New deliveries are queued as one drain per channel (queueing.channel_drain_request),
    not one message per delivery. The drain ends by clearing the channel's drain marker and
    then looking once more, so a delivery committed while the marker was still set (and so not
    queued) is sent by this drain. Out of time with more due, it queues its successor, which
    goes to the back of the queue: other channels' work is not held up behind a backlog.

    It sends only while holding its send slots; with a bound full it ends at once, and a slot
    holder queues the next drain (slots._channels_wake). While it runs, its marker is a
    lease of this worker (leases.py): a killed drain's is gone within seconds.
    """
    with LeaseKeeper() as leases:
        return _channel_drain(channel_id, leases)


def _channel_drain(channel_id, leases: LeaseKeeper) -> int:
    started = time.monotonic()
    claimed = 0
    out_of_time = False
    marker_held = True
    with slots_held(channel_id, leases, more_due=lambda: out_of_time) as held:
        if held is None:
            # The slots' holders wake this channel when they let go; if they die, the
            # sweeper does, once this marker has run out.
            channel_drain_marker_let_go(channel_id, leases, refused=True)
            return 0
        channel_drain_marker_hold(channel_id, leases)
        try:
            while True:
                if claimed and time.monotonic() - started >= settings.WEBHOOKS_DRAIN_SECONDS:
                    out_of_time = True
                    return claimed
                claim = delivery_claim(channel_id=channel_id, leases=leases)
                if claim is None:
                    if not marker_held:
                        return claimed
                    channel_drain_marker_clear(channel_id, leases)
                    marker_held = False
                    continue
                claimed += 1
                if claim:
                    _attempt_make(*claim, leases)
        finally:
            # Before the slots' release queues a successor, which sets the marker anew.
            channel_drain_marker_let_go(channel_id, leases)
