"""Sending deliveries: claim (a lease), one signed POST, and recording the outcome.

See services.py for the lifecycle; these are the writes of a worker's attempt.
"""

import json
import logging
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from config import metrics
from config.db import PreparedStatement
from events.models import Event
from webhooks.addresses import url_origin
from webhooks.models import WebhookDelivery, WebhookDeliveryAttempt, WebhookDestination
from webhooks.selectors import deliveries_due
from webhooks.sender import SendResult, send
from webhooks.services import (
    deliveries_enqueue,
    destination_drain_continue,
    destination_drain_marker_clear,
    destination_enabled_set,
    destination_signing_secrets,
)
from webhooks.slots import HeldSlots, destinations_to_wake, slots_held

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
OUTCOME_RECORD_STATEMENT = PreparedStatement("storefront_delivery_outcome", OUTCOME_RECORD_SQL)


ABANDONED_ATTEMPT_ERROR = "abandoned: the worker stopped before an outcome (lease expired)"


# Claims the oldest due, unleased delivery matching {match}, counts its attempt, and reads what
# the attempt needs, in one round trip. SKIP LOCKED: concurrent claimers take different rows (or
# none) instead of queueing behind the row another one is claiming; PostgreSQL re-checks the
# subquery's conditions on the row it locks, so exactly one claimer wins an attempt.
CLAIM_SQL = """
WITH claimed AS (
    UPDATE webhooks_webhookdelivery AS delivery
    SET lease_until = %(lease_until)s, lease_token = %(token)s,
        attempts = delivery.attempts + 1, updated_at = %(now)s
    WHERE delivery.id = (
        SELECT due.id FROM webhooks_webhookdelivery AS due
        WHERE {match} AND due.status = '{pending}' AND due.next_attempt_at <= %(now)s
            AND (due.lease_until IS NULL OR due.lease_until < %(now)s)
        ORDER BY due.next_attempt_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    RETURNING delivery.*
)
SELECT {columns}
FROM claimed
JOIN events_event AS event ON event.id = claimed.event_id
LEFT JOIN webhooks_webhookdestination AS destination ON destination.id = claimed.destination_id
"""
# The row of CLAIM_SQL, model by model (fixed identifiers from the models, no input).
CLAIM_ROW_MODELS = (
    ("claimed", WebhookDelivery),
    ("event", Event),
    ("destination", WebhookDestination),
)
# Prepared once per database session (config/db.py): planning the claim was a large part of
# its time. The pending status is a constant in the text, so the generic plan can use the
# partial indexes on pending deliveries.
CLAIM_STATEMENT_BY = {
    match_name: PreparedStatement(
        f"storefront_delivery_claim_by_{match_name}",
        CLAIM_SQL.format(
            match=match,
            pending=WebhookDelivery.STATUS_PENDING,
            columns=", ".join(
                f'{alias}."{field.column}"'
                for alias, model in CLAIM_ROW_MODELS
                for field in model._meta.concrete_fields
            ),
        ),
    )
    for match_name, match in (
        ("delivery_id", "due.id = %(delivery_id)s"),
        ("destination_id", "due.destination_id = %(destination_id)s"),
    )
}


def _claimed_from_row(row) -> WebhookDelivery:
    """The delivery of a CLAIM_SQL row, with its event and destination (None if deleted)."""
    instances, offset = [], 0
    for _alias, model in CLAIM_ROW_MODELS:
        fields = model._meta.concrete_fields
        values = []
        for field, value in zip(fields, row[offset : offset + len(fields)], strict=True):
            for converter in field.get_db_converters(connection):
                value = converter(value, None, connection)
            values.append(value)
        offset += len(fields)
        names = [field.attname for field in fields]
        present = values[names.index(model._meta.pk.attname)] is not None  # the LEFT JOIN's
        instances.append(model.from_db(connection.alias, names, values) if present else None)
    delivery, event, destination = instances
    delivery.event = event
    delivery.destination = destination
    return delivery


def _delivery_lease(*, now, token, **match) -> WebhookDelivery | None:
    """Leases the oldest due delivery matching `match` (delivery_id= or destination_id=) to
    this worker and counts its attempt; None when there is none (or another worker has it)."""
    ((match_name, match_value),) = match.items()
    lease_until = now + timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)
    if connection.vendor == "postgresql":
        params = {
            "lease_until": lease_until,
            "token": token,
            "now": now,
            match_name: match_value,
        }
        with connection.cursor() as cursor:
            CLAIM_STATEMENT_BY[match_name].execute(cursor, params)
            row = cursor.fetchone()
        return _claimed_from_row(row) if row else None
    # SQLite (`make run`): one writer at a time; the conditional UPDATE is the claim.
    orm_match = {"pk": match_value} if match_name == "delivery_id" else match
    due = deliveries_due(now=now).filter(**orm_match).order_by("next_attempt_at")
    candidate = due.values_list("pk", flat=True).first()
    if candidate is None or not due.filter(pk=candidate).update(
        lease_until=lease_until, lease_token=token, attempts=F("attempts") + 1, updated_at=now
    ):
        return None
    return WebhookDelivery.objects.select_related("event", "destination").get(pk=candidate)


def delivery_claim(
    *, delivery_id=None, destination_id=None
) -> tuple[WebhookDelivery, WebhookDeliveryAttempt] | None:
    """Leases a due pending delivery (this one, or the destination's oldest due) to this worker
    and counts its attempt; None if none is due, it is final, or another worker has it.

    A claimed delivery whose destination is disabled or deleted is settled instead (also None).
    """
    claim = _delivery_claim_next(delivery_id=delivery_id, destination_id=destination_id)
    return claim if claim else None


def _delivery_claim_next(*, delivery_id=None, destination_id=None):
    """As delivery_claim, but tells "nothing to claim" (None) from "claimed, then settled
    without an attempt" (False), so a drain goes on after the latter."""
    now = timezone.now()
    token = uuid.uuid4()
    # Autocommitted statements, no transaction: the claim is one statement; what follows only
    # reads or records, and a worker dying in between just lets the lease run out.
    match = {"delivery_id": delivery_id} if delivery_id else {"destination_id": destination_id}
    delivery = _delivery_lease(now=now, token=token, **match)
    if delivery is None:
        return None
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
        metrics.webhook_delivery_settled("failed" if tried else "disabled")
        return False
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
    metrics.webhook_attempt_finished(response_status=result.response_status, final_status=status)
    # The error's kind only ("connection error", "HTTP 500"): its text may quote the
    # destination's path, which can be a credential (hooks.slack.com/services/...).
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
            "destination_id": destination.pk,
            "attempt": attempt.number,
            "delivery_status": status,
            "response_status": result.response_status,
            "error_kind": error_kind,
            "duration_ms": result.duration_ms,
        },
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
        OUTCOME_RECORD_STATEMENT.execute(cursor, params)
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


def _attempt_make(delivery: WebhookDelivery, attempt: WebhookDeliveryAttempt) -> str:
    from events.serializers import event_resource

    body = json.dumps(event_resource(delivery.event), separators=(",", ":")).encode()
    result = send(
        url=attempt.url,
        message_id=delivery.event_id,
        body=body,
        secrets=destination_signing_secrets(delivery.destination),
    )
    return delivery_attempt_finish(delivery=delivery, attempt=attempt, result=result)


def _slot_released(destination_id, held: HeldSlots, *, more_due: bool | None = None) -> None:
    """After slots are released: a drain or send refused a slot ended without a trace, leaving
    its deliveries to the slot holders; so each holder, once it let go, queues a drain of its
    destination if anything is still due there, and a drain of the next other destination of
    its account with a due delivery (and, for a failing slot, of the next failing one). Looking
    after the release closes the gap: whoever was refused this slot was refused before, and
    its deliveries are due now. What a wake-up misses (a slot whose lease ran out) the sweeper
    queues."""
    own_due, others = destinations_to_wake(destination_id, held)
    # The others first: they queue ahead of this destination's successor for the freed slot.
    for other in others:
        destination_drain_continue(other)
    if more_due or own_due:
        destination_drain_continue(destination_id)


def delivery_send(*, delivery_id) -> str | None:
    """One attempt of a delivery, if it is due and free and its destination has a free send
    slot; returns its new status or None (a delivery left waiting is sent by a drain)."""
    destination_id = (
        WebhookDelivery.objects.filter(pk=delivery_id)
        .values_list("destination_id", flat=True)
        .first()
    )
    if destination_id is None:
        # Unknown, or its destination was deleted: the claim settles it without sending.
        claim = delivery_claim(delivery_id=delivery_id)
        return _attempt_make(*claim) if claim else None
    with slots_held(destination_id) as held:
        if held is None:
            return None
        claim = delivery_claim(delivery_id=delivery_id)
        status = _attempt_make(*claim) if claim else None
    _slot_released(destination_id, held)
    return status


def destination_drain(*, destination_id) -> int:
    """Sends the destination's due deliveries one after another, oldest first, for at most
    WEBHOOKS_DRAIN_SECONDS; returns how many it claimed.

    New deliveries are queued as one drain per destination (services.destination_drain_request),
    not one message per delivery. The drain ends by clearing the destination's drain marker and
    then looking once more, so a delivery committed while the marker was still set (and so not
    queued) is sent by this drain. Out of time with more due, it queues its successor, which
    goes to the back of the queue: other destinations' work is not held up behind a backlog.

    It sends only while holding its send slots (slots.slots_held); with a bound full it ends at
    once, and a slot holder queues the next drain (_slot_released).
    """
    with slots_held(destination_id) as held:
        if held is None:
            return 0
        claimed, out_of_time = _destination_drain_slotted(destination_id)
    _slot_released(destination_id, held, more_due=out_of_time)
    return claimed


def _destination_drain_slotted(destination_id) -> tuple[int, bool]:
    started = time.monotonic()
    claimed = 0
    marker_held = True
    while True:
        if claimed and time.monotonic() - started >= settings.WEBHOOKS_DRAIN_SECONDS:
            return claimed, True
        claim = _delivery_claim_next(destination_id=destination_id)
        if claim is None:
            if not marker_held:
                return claimed, False
            destination_drain_marker_clear(destination_id)
            marker_held = False
            continue
        claimed += 1
        if claim:
            _attempt_make(*claim)
