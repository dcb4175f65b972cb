"""A delivery's way through a worker, top to bottom: take the send slots, claim the delivery
(a lease), send one signed POST, record the outcome, release the slots and wake who waits.

The two ways in are at the end: `delivery_send` (one delivery: a retry, the sweeper's orphans)
and `destination_drain` (a destination's due deliveries in turn: new deliveries, wake-ups).
Creating and queueing deliveries is services.py's; the tasks only call these two.

Send slots bound how many sends are in flight at once (docs/decisions/webhooks.md "Fairness
between stores"): a send holds, all at once or not at all, one free slot of its destination
(WEBHOOKS_DESTINATION_CONCURRENCY), one of the account that created its store
(WEBHOOKS_ACCOUNT_CONCURRENCY) and, while its destination is failing (`failing_since` set),
one of the failing destinations' share (WEBHOOKS_FAILING_CONCURRENCY). A slot is a leased row
(models.WebhookSendSlot): a worker that dies gives its slots back when their lease runs out,
and slots work through any connection pooler, which session advisory locks did not.
"""

import contextlib
import json
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from config import metrics
from config.db import PreparedStatement
from events.models import Event
from events.serializers import event_resource
from webhooks.addresses import url_origin
from webhooks.models import (
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookDestination,
    WebhookSendSlot,
)
from webhooks.sender import SendResult, send
from webhooks.services import (
    deliveries_enqueue,
    destination_drain_continue,
    destination_drain_marker_clear,
    destination_enabled_set,
    destination_signing_secrets,
)

logger = logging.getLogger(__name__)

ABANDONED_ATTEMPT_ERROR = "abandoned: the worker stopped before an outcome (lease expired)"


# --- 1. take the send slots -----------------------------------------------------------------


@dataclass
class HeldSlots:
    """What a send holds: its slot rows (none for a deleted destination), and what they were
    taken as, for the wake-ups after their release."""

    slot_ids: list
    token: uuid.UUID | None = None
    account_id: int | None = None
    failing: bool = False


# The database function of migration 0007: one free slot of each bound, all or none, in one
# round trip.
TAKE_SQL = (
    "SELECT slot_ids, account_id, failing FROM webhooks_send_slots_take(%s, %s, %s, %s, %s, %s)"
)


def slots_take(destination_id) -> HeldSlots | None:
    """Takes the slots a send to this destination needs; None when one of them is full."""
    token = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(
            TAKE_SQL,
            [
                destination_id,
                token,
                timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS),
                settings.WEBHOOKS_DESTINATION_CONCURRENCY,
                settings.WEBHOOKS_ACCOUNT_CONCURRENCY,
                settings.WEBHOOKS_FAILING_CONCURRENCY,
            ],
        )
        slot_ids, account_id, failing = cursor.fetchone()
    if slot_ids is None:
        return None
    return HeldSlots(slot_ids=slot_ids, token=token, account_id=account_id, failing=failing)


# --- 2. claim the delivery --------------------------------------------------------------------

# Claims the oldest due, unleased delivery matching {match}, counts its attempt, and reads what
# the attempt needs, in one round trip. SKIP LOCKED: concurrent claimers take different rows (or
# none) instead of queueing behind the row another one is claiming; PostgreSQL re-checks the
# subquery's conditions (WebhookDelivery.objects.due) on the row it locks, so exactly one
# claimer wins an attempt.
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
    params = {
        "lease_until": now + timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS),
        "token": token,
        "now": now,
        match_name: match_value,
    }
    with connection.cursor() as cursor:
        CLAIM_STATEMENT_BY[match_name].execute(cursor, params)
        row = cursor.fetchone()
    return _claimed_from_row(row) if row else None


def delivery_claim(
    *, delivery_id=None, destination_id=None
) -> tuple[WebhookDelivery, WebhookDeliveryAttempt] | bool | None:
    """Leases a due pending delivery (this one, or the destination's oldest due) to this worker
    and counts its attempt; returns it with its attempt to make, None if none is due, it is
    final, or another worker has it, and False when the claimed delivery's destination is
    disabled or deleted: it is settled without an attempt (a drain goes on after that)."""
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
        delivery=delivery, number=delivery.attempts, origin=origin, started_at=now
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
                origin=delivery.destination_origin,
                started_at=now,
                finished_at=now,
                error=ABANDONED_ATTEMPT_ERROR,
            )
            for number in range(1, delivery.attempts)
            if number not in recorded
        ],
        ignore_conflicts=True,
    )


# --- 3. send --------------------------------------------------------------------------------


def _attempt_make(delivery: WebhookDelivery, attempt: WebhookDeliveryAttempt) -> str:
    """Sends the claimed delivery once and records the outcome; returns its new status."""
    body = json.dumps(event_resource(delivery.event), separators=(",", ":")).encode()
    result = send(
        url=delivery.destination.url,
        message_id=delivery.event_id,
        body=body,
        secrets=destination_signing_secrets(delivery.destination),
    )
    return delivery_attempt_finish(delivery=delivery, attempt=attempt, result=result)


# --- 4. record the outcome ----------------------------------------------------------------------

# The columns _outcome_record writes, and its statement (fixed text, parameters only).
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
    "number",
    "origin",
    "started_at",
    "finished_at",
    "duration_ms",
    "response_status",
    "response_body",
    "error",
)
OUTCOME_RECORD_SQL = f"""
WITH moved AS (
    UPDATE webhooks_webhookdelivery SET {", ".join(f"{c} = %s" for c in DELIVERY_OUTCOME_COLUMNS)}
    WHERE id = %s AND lease_token = %s
    RETURNING id
)
INSERT INTO webhooks_webhookdeliveryattempt (delivery_id, {", ".join(ATTEMPT_OUTCOME_COLUMNS)})
SELECT moved.id, {", ".join(["%s"] * len(ATTEMPT_OUTCOME_COLUMNS))} FROM moved
"""  # noqa: S608 (fixed column names; values are parameters)
OUTCOME_RECORD_STATEMENT = PreparedStatement("storefront_delivery_outcome", OUTCOME_RECORD_SQL)


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
    lease; False otherwise. One statement (a data-modifying CTE: one round trip instead of
    BEGIN, UPDATE, INSERT, COMMIT)."""
    params = [
        *(outcome[column] for column in DELIVERY_OUTCOME_COLUMNS),
        delivery.pk,
        delivery.lease_token,
        *(getattr(attempt, column) for column in ATTEMPT_OUTCOME_COLUMNS),
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


# --- 5. release the slots and wake who waits ------------------------------------------------

# Given back in the order every taker locks slot rows in (scope, owner, number), so a release
# and a take never wait for each other in a cycle.
RELEASE_SQL = """
UPDATE webhooks_webhooksendslot SET lease_until = NULL, lease_token = NULL
WHERE id IN (
    SELECT id FROM webhooks_webhooksendslot
    WHERE id = ANY(%(slot_ids)s) AND lease_token = %(token)s
    ORDER BY scope, owner, number
    FOR UPDATE
)
"""

# After a release, in one round trip: whether the destination still has a due delivery
# (WebhookDelivery.objects.due; the deliveries' leases are in the workers' clock, the slots' in
# the database's), and the next other destination, in id order after this one and wrapping round
# (so the waiting ones take turns), that has a due delivery and a free destination slot: one
# of the same account, and, when a failing slot was released, one of the failing ones.
DUE_SQL = """EXISTS (
    SELECT 1 FROM webhooks_webhookdelivery AS due
    WHERE due.destination_id = {destination} AND due.status = 'pending'
        AND due.next_attempt_at <= %(now)s
        AND (due.lease_until IS NULL OR due.lease_until < %(now)s)
)"""
WAITING_SQL = """
SELECT dest.id FROM webhooks_webhookdestination AS dest
JOIN stores_store AS store ON store.id = dest.store_id
WHERE {where} AND dest.enabled AND dest.id {after} %(destination)s AND {due}
    AND (SELECT count(*) FROM webhooks_webhooksendslot AS slot
         WHERE slot.scope = 1 AND slot.owner = dest.id AND slot.lease_until >= now())
        < %(destination_slots)s
ORDER BY dest.id LIMIT 1
"""
NEXT_WAITING_SQL = """(
    SELECT waiting.id FROM (
        (SELECT * FROM ({after}) AS after_this) UNION ALL (SELECT * FROM ({before}) AS before_this)
    ) AS waiting
    LIMIT 1
)"""


def _next_waiting(where: str) -> str:
    due = DUE_SQL.format(destination="dest.id")
    return NEXT_WAITING_SQL.format(
        after=WAITING_SQL.format(where=where, after=">", due=due),
        before=WAITING_SQL.format(where=where, after="<", due=due),
    )


WAKE_SQL = "SELECT {own_due}, {account_next}, CASE WHEN %(failing)s THEN {failing_next} END".format(
    own_due=DUE_SQL.format(destination="%(destination)s"),
    account_next=_next_waiting(
        "(store.created_by_id = %(account)s OR store.id = %(creatorless_store)s)"
    ),
    failing_next=_next_waiting("dest.failing_since IS NOT NULL"),
)
# Prepared once per database session (config/db.py): planning the wake-up query cost more than
# running it.
RELEASE_STATEMENT = PreparedStatement("storefront_send_slots_release", RELEASE_SQL)
WAKE_STATEMENT = PreparedStatement("storefront_send_slots_wake", WAKE_SQL)
# The constants written into the SQL above.
assert WebhookDelivery.STATUS_PENDING == "pending"
assert WebhookSendSlot.SCOPE_DESTINATION == 1


def slots_release(held: HeldSlots) -> None:
    if not held.slot_ids:
        return
    try:
        with connection.cursor() as cursor:
            RELEASE_STATEMENT.execute(cursor, {"slot_ids": held.slot_ids, "token": held.token})
    except Exception:
        # A broken connection: the leases run out on their own.
        logger.warning("webhook send slots %s not released; their lease runs out", held.slot_ids)


def _destinations_wake(destination_id, held: HeldSlots, *, more_due: bool = False) -> None:
    """After slots are released: a drain or send refused a slot ended without a trace, leaving
    its deliveries to the slot holders; so each holder, once it let go, queues a drain of its
    destination if anything is still due there, and a drain of the next other destination of
    its account with a due delivery (and, for a failing slot, of the next failing one). Looking
    after the release closes the gap: whoever was refused this slot was refused before, and
    its deliveries are due now. What a wake-up misses (a slot whose lease ran out) the sweeper
    queues."""
    if not held.slot_ids:
        return  # a deleted destination: nothing to wake
    with connection.cursor() as cursor:
        WAKE_STATEMENT.execute(
            cursor,
            {
                "now": timezone.now(),
                "destination": destination_id,
                "account": held.account_id,
                # A store whose creator is gone is its own account, numbered minus its id.
                "creatorless_store": -held.account_id,
                "failing": held.failing,
                "destination_slots": settings.WEBHOOKS_DESTINATION_CONCURRENCY,
            },
        )
        own_due, account_next, failing_next = cursor.fetchone()
    # The others first: they queue ahead of this destination's successor for the freed slot.
    for other in dict.fromkeys(filter(None, (account_next, failing_next))):
        destination_drain_continue(other)
    if more_due or own_due:
        destination_drain_continue(destination_id)


@contextlib.contextmanager
def slots_held(destination_id, *, more_due=lambda: False):
    """Holds the slots of a send to this destination while the block runs; yields the
    HeldSlots, or None (holding nothing) when one of its bounds is full. After the block, the
    slots are released and who waits for them is woken (`more_due()`: whether the block left
    deliveries it was due to send)."""
    held = slots_take(destination_id)
    try:
        yield held
    finally:
        if held is not None:
            slots_release(held)
    if held is not None:
        _destinations_wake(destination_id, held, more_due=more_due())


# --- the ways in ----------------------------------------------------------------------------


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
        return _attempt_make(*claim) if (claim := delivery_claim(delivery_id=delivery_id)) else None
    with slots_held(destination_id) as held:
        if held is None:
            return None
        claim = delivery_claim(delivery_id=delivery_id)
        return _attempt_make(*claim) if claim else None


def destination_drain(*, destination_id) -> int:
    """Sends the destination's due deliveries one after another, oldest first, for at most
    WEBHOOKS_DRAIN_SECONDS; returns how many it claimed.

    New deliveries are queued as one drain per destination (services.destination_drain_request),
    not one message per delivery. The drain ends by clearing the destination's drain marker and
    then looking once more, so a delivery committed while the marker was still set (and so not
    queued) is sent by this drain. Out of time with more due, it queues its successor, which
    goes to the back of the queue: other destinations' work is not held up behind a backlog.

    It sends only while holding its send slots; with a bound full it ends at once, and a slot
    holder queues the next drain (_destinations_wake).
    """
    started = time.monotonic()
    claimed = 0
    out_of_time = False
    marker_held = True
    with slots_held(destination_id, more_due=lambda: out_of_time) as held:
        if held is None:
            return 0
        while True:
            if claimed and time.monotonic() - started >= settings.WEBHOOKS_DRAIN_SECONDS:
                out_of_time = True
                return claimed
            claim = delivery_claim(destination_id=destination_id)
            if claim is None:
                if not marker_held:
                    return claimed
                destination_drain_marker_clear(destination_id)
                marker_held = False
                continue
            claimed += 1
            if claim:
                _attempt_make(*claim)
