"""The hand-written SQL of a delivery's way (webhooks/dispatch/attempts.py): the claim and the
outcome,
one round trip each where the ORM took four or more, measured against their ORM versions
(docs/decisions/webhooks.md "A delivery's way through the code"). Prepared once per database
session (core/database/connections.py): planning them was a large part of their time.
"""

from datetime import timedelta

from django.conf import settings
from django.db import connection

from core.database.connections import PreparedStatement
from events.models import Event
from webhooks.dispatch.leases import live_seconds
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookDeliveryAttempt, due_sql

# --- the claim -------------------------------------------------------------------------------

# Claims the oldest due, unleased delivery matching {match}, counts its attempt, and reads what
# the attempt needs, in one round trip. SKIP LOCKED: concurrent claimers take different rows (or
# none) instead of queueing behind the row another one is claiming; PostgreSQL re-checks the
# subquery's conditions (models.DUE_SQL) on the row it locks, so exactly one
# claimer wins an attempt.
#
# The retry schedule holds here, also for attempts whose outcome is never recorded (a worker
# that died, a task that crashed): the claim sets `next_attempt_at` to the schedule's wait after
# this attempt, so a lapsed lease makes the delivery due no sooner than a recorded failure
# would (after the last attempt at once: its next claim only settles it). A delivery whose
# attempts are all spent is not tried again: the claim settles it `failed`, lease and schedule
# cleared, and attempts.delivery_claim records the lost attempts. `waits` is the schedule
# (`waits[n]` follows attempt n), `attempts_most` the number of attempts it allows.
CLAIM_SQL = """
WITH claimed AS (
    UPDATE webhooks_webhookdelivery AS delivery
    SET status = CASE WHEN {tries_left} THEN 'pending' ELSE 'failed' END,
        attempts = delivery.attempts + CASE WHEN {tries_left} THEN 1 ELSE 0 END,
        lease_until = CASE WHEN {tries_left} THEN %(lease_until)s::timestamptz END,
        lease_token = CASE WHEN {tries_left} THEN %(token)s::uuid END,
        next_attempt_at = CASE WHEN {tries_left} THEN %(now)s::timestamptz
            + interval '1 second' * COALESCE((%(waits)s::float8[])[delivery.attempts + 1], 0)
        END,
        enqueued_at = CASE WHEN {tries_left} THEN delivery.enqueued_at END,
        updated_at = %(now)s
    WHERE (delivery.id, delivery.event_occurred_at) = (
        SELECT due.id, due.event_occurred_at FROM webhooks_webhookdelivery AS due
        WHERE {match} AND {due}
        ORDER BY due.next_attempt_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    RETURNING delivery.*
)
SELECT {columns}
FROM claimed
JOIN events_event AS event
    ON event.id = claimed.event_id AND event.occurred_at = claimed.event_occurred_at
LEFT JOIN webhooks_webhookchannel AS channel ON channel.id = claimed.channel_id
"""
# The row of CLAIM_SQL, model by model (fixed identifiers from the models, no input).
CLAIM_ROW_MODELS = (
    ("claimed", WebhookDelivery),
    ("event", Event),
    ("channel", WebhookChannel),
)
CLAIM_STATEMENT_BY = {
    match_name: PreparedStatement(
        f"storefront_delivery_claim_by_{match_name}",
        CLAIM_SQL.format(
            match=match,
            due=due_sql(delivery="due", now="%(now)s"),
            tries_left="delivery.attempts < %(attempts_most)s",
            columns=", ".join(
                f'{alias}."{field.column}"'
                for alias, model in CLAIM_ROW_MODELS
                for field in model._meta.concrete_fields
            ),
        ),
    )
    for match_name, match in (
        ("delivery_id", "due.id = %(delivery_id)s"),
        ("channel_id", "due.channel_id = %(channel_id)s"),
    )
}


def _claimed_from_row(row) -> WebhookDelivery:
    """The delivery of a CLAIM_SQL row, with its event and channel (None if deleted)."""
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
    delivery, event, channel = instances
    delivery.event = event
    delivery.channel = channel
    return delivery


def delivery_lease(*, now, token, **match) -> WebhookDelivery | None:
    """Leases the oldest due delivery matching `match` (delivery_id= or channel_id=) to
    this worker and counts its attempt; None when there is none (or another worker has it).
    A delivery whose schedule is spent comes back `failed`, not leased (CLAIM_SQL)."""
    ((match_name, match_value),) = match.items()
    schedule = settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS
    params = {
        # Kept alive while this worker lives (leases.py), as its send slots are.
        "lease_until": now + timedelta(seconds=live_seconds()),
        "token": token,
        "now": now,
        # As an array's text: psycopg adapts it faster than a list, and PostgreSQL casts it.
        "waits": "{" + ",".join(str(float(wait)) for wait in schedule) + "}",
        "attempts_most": len(schedule) + 1,
        match_name: match_value,
    }
    with connection.cursor() as cursor:
        CLAIM_STATEMENT_BY[match_name].execute(cursor, params)
        row = cursor.fetchone()
    return _claimed_from_row(row) if row else None


# --- the outcome -----------------------------------------------------------------------------

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
    WHERE id = %s AND event_occurred_at = %s AND lease_token = %s
    RETURNING id, event_occurred_at
)
INSERT INTO webhooks_webhookdeliveryattempt
    (delivery_id, delivery_event_occurred_at, {", ".join(ATTEMPT_OUTCOME_COLUMNS)})
SELECT moved.id, moved.event_occurred_at, {", ".join(["%s"] * len(ATTEMPT_OUTCOME_COLUMNS))}
FROM moved
"""  # noqa: S608 (fixed column names; values are parameters)
OUTCOME_RECORD_STATEMENT = PreparedStatement("storefront_delivery_outcome", OUTCOME_RECORD_SQL)


def storable_text(value):
    """`value` as PostgreSQL text takes it: a receiver's bytes, decoded, may hold NUL (which
    text refuses) or, decoded otherwise, lone surrogates (which UTF-8 cannot encode)."""
    if not isinstance(value, str):
        return value
    return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def outcome_record(*, delivery: WebhookDelivery, attempt: WebhookDeliveryAttempt, outcome) -> bool:
    """Moves the delivery on and saves the attempt, atomically, if this worker still holds the
    lease; False otherwise. One statement (a data-modifying CTE: one round trip instead of
    BEGIN, UPDATE, INSERT, COMMIT). Its text (the receiver's body, the error) is stored as
    storable_text: this is where an answer is saved, whatever its bytes."""
    params = [
        *(storable_text(outcome[column]) for column in DELIVERY_OUTCOME_COLUMNS),
        delivery.pk,
        delivery.event_occurred_at,
        delivery.lease_token,
        *(storable_text(getattr(attempt, column)) for column in ATTEMPT_OUTCOME_COLUMNS),
    ]
    with connection.cursor() as cursor:
        OUTCOME_RECORD_STATEMENT.execute(cursor, params)
        return cursor.rowcount == 1
