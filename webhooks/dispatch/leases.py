"""A delivery's leases: the claim that takes one (one statement), the outcome that ends it
with the attempt's record, and the keeper that renews them while their worker lives.

Leases are kept alive while their holder lives (docs/decisions/hardening.md, Hardening IV 12).
A send holds leases: its send slots (webhooks/dispatch/slots.py), its claimed delivery, and a
running drain its channel's drain marker (webhooks/dispatch/queueing.py). They are taken short, for
`live_seconds()` (3 heartbeats), and the sending call renews them every WEBHOOKS_HEARTBEAT_SECONDS
from a thread of its own while it holds them (a LeaseKeeper, one per call, passed down to what takes
them). A worker killed with kill -9 renews nothing more: its leases run out within seconds, and
another worker takes over. A live holder is never overtaken: a renewal only extends a lease that has
not run out, and no lease is renewed past `WEBHOOKS_LEASE_SECONDS` after it was taken, the bound the
system check webhooks.E001 keeps beyond the sending tasks' hard time limit, at which the pool kills
the process and with it this thread.

The claim and the outcome are hand-written SQL, one round trip each where the ORM took four or
more, measured against their ORM versions
(docs/decisions/webhooks.md "A delivery's way through the code"). Prepared once per database
session (core/database/connections.py): planning them was a large part of their time.
"""

import contextlib
import logging
import threading
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from core.database.connections import PreparedStatement
from events.models import Event
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookDeliveryAttempt, due_sql

logger = logging.getLogger(__name__)


def live_seconds() -> float:
    """How long a lease lasts unless renewed: three heartbeats, so one late renewal is no loss;
    never more than WEBHOOKS_LEASE_SECONDS."""
    return min(3 * settings.WEBHOOKS_HEARTBEAT_SECONDS, settings.WEBHOOKS_LEASE_SECONDS)


# One round trip renews every slot and delivery lease of a call. Slot leases are in the
# database's clock (as their take), delivery leases in the workers' (as their claim).
RENEW_SQL = """
WITH held AS (
    SELECT * FROM unnest(%(tokens)s::uuid[], %(caps)s::timestamptz[]) AS held(token, cap)
), slots AS (
    UPDATE webhooks_webhooksendslot AS slot
    SET lease_until = LEAST(now() + %(live)s, held.cap)
    FROM held WHERE slot.lease_token = held.token AND slot.lease_until >= now()
)
UPDATE webhooks_webhookdelivery AS delivery
SET lease_until = LEAST(%(until)s, held.cap)
FROM held WHERE delivery.lease_token = held.token AND delivery.lease_until >= %(now)s
"""


class LeaseKeeper:
    """Renews the leases one sending call takes, from a thread that lives no longer than the
    call: `with LeaseKeeper() as leases: ...` (attempts.delivery_send, .channel_drain).

    The thread starts with the first `hold` (a drain refused its slots starts none), and on
    leaving the block it stops and closes its own database connection: nothing outlives the
    call. What is still held then is renewed no more and runs out, as a dead worker's does.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._tokens: dict[uuid.UUID, datetime] = {}  # lease token -> renewed at most until
        self._markers: dict[str, datetime] = {}  # cache key -> renewed at most until
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "LeaseKeeper":
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:
            self._tokens.clear()
            self._markers.clear()
            self._stop.set()
            thread = self._thread
        if thread is not None:
            thread.join()  # at most one renewal round trip away

    def hold(self, token: uuid.UUID, *, taken_at: datetime) -> None:
        """Renews the slot or delivery leases taken with `token` until `drop(token)`."""
        self._add(self._tokens, token, taken_at)

    def hold_marker(self, key: str, *, taken_at: datetime) -> None:
        """Renews the cache key `key` (set for live_seconds()) until `drop_marker(key)`."""
        self._add(self._markers, key, taken_at)

    def drop(self, token: uuid.UUID | None) -> None:
        with self._lock:
            self._tokens.pop(token, None)

    def drop_marker(self, key: str) -> None:
        with self._lock:
            self._markers.pop(key, None)

    def _add(self, held: dict, key, taken_at: datetime) -> None:
        cap = taken_at + timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)
        with self._lock:
            if self._stop.is_set():
                return  # the call is over: nobody renews
            held[key] = cap
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="webhooks-leases", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        try:
            # A lease is fresh when taken: the first renewal is a heartbeat later.
            while not self._stop.wait(settings.WEBHOOKS_HEARTBEAT_SECONDS):
                try:
                    self._renew()
                except Exception:
                    # Never the end of this thread, or every lease it holds would lapse: what
                    # was not renewed now is on the next beat (leases last three).
                    logger.warning("webhooks: leases not renewed", exc_info=True)
        finally:
            connection.close()  # this thread's own, before the call returns

    def _renew(self) -> None:
        now = timezone.now()
        with self._lock:
            for held in (self._tokens, self._markers):
                for key in [key for key, cap in held.items() if cap <= now]:
                    del held[key]  # past its bound: it cannot be renewed any more
            tokens = dict(self._tokens)
            markers = dict(self._markers)
        live = timedelta(seconds=live_seconds())
        try:
            if tokens:
                with connection.cursor() as cursor:
                    cursor.execute(
                        RENEW_SQL,
                        {
                            "tokens": list(tokens),
                            "caps": list(tokens.values()),
                            "live": live,
                            "until": now + live,
                            "now": now,
                        },
                    )
            for key in markers:
                with contextlib.suppress(Exception):  # no cache: the sweeper catches up
                    cache.touch(key, live.total_seconds())
        except Exception:
            # A broken connection (a database restart): a new one on the next heartbeat; the
            # leases are three heartbeats long.
            logger.warning("webhooks: leases not renewed", exc_info=True)
            connection.close()


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
