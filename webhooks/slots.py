"""Send slots: how many sends may be in flight at once, per destination, per account, and for
the failing destinations together (docs/decisions/webhooks.md "Fairness between stores").

A send holds, all at once or not at all, one free slot of its destination
(WEBHOOKS_DESTINATION_CONCURRENCY), one of the account that created its store
(WEBHOOKS_ACCOUNT_CONCURRENCY) and, while its destination is failing (`failing_since` set: its
last attempt failed, a hanging receiver included), one of the failing destinations' shared
slots (WEBHOOKS_FAILING_CONCURRENCY). So a receiver that hangs holds at most its destination's
slots, an account's stores at most its account's, and all failing destinations together at
most their share, whatever the number of stores or accounts behind them.

A slot is a leased row (models.WebhookSendSlot), taken for WEBHOOKS_LEASE_SECONDS, the hard time
limit of the task that takes it, so the lease outlives its holder: a worker that dies (kill -9,
a host gone) gives its slots back when their lease runs out, and slots work through any
connection pooler (PgBouncer in transaction mode included), which session advisory locks did
not. Taking them is one round trip (the database function webhooks_send_slots_take, migration
0007, all or nothing); giving them back is another.
"""

import contextlib
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from config.db import PreparedStatement
from webhooks.models import WebhookDelivery, WebhookSendSlot
from webhooks.selectors import deliveries_due

logger = logging.getLogger(__name__)


@dataclass
class HeldSlots:
    """What a send holds: its slot rows (none under SQLite, or for a deleted destination), and
    what they were taken as, for the wake-ups after their release."""

    slot_ids: list
    token: uuid.UUID | None = None
    account_id: int | None = None
    failing: bool = False


TAKE_SQL = (
    "SELECT slot_ids, account_id, failing FROM webhooks_send_slots_take(%s, %s, %s, %s, %s, %s)"
)

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

# After a release, in one round trip: whether the destination still has a due delivery (as
# selectors.deliveries_due; the deliveries' leases are in the workers' clock, the slots' in the
# database's), and the next other destination, in id order after this one and wrapping round
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


def slots_take(destination_id) -> HeldSlots | None:
    """Takes the slots a send to this destination needs; None when one of them is full."""
    if connection.vendor != "postgresql":
        # SQLite (`make run`, one worker process): no bound.
        return HeldSlots(slot_ids=[])
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


def slots_release(held: HeldSlots) -> None:
    if not held.slot_ids:
        return
    try:
        with connection.cursor() as cursor:
            RELEASE_STATEMENT.execute(cursor, {"slot_ids": held.slot_ids, "token": held.token})
    except Exception:
        # A broken connection: the leases run out on their own.
        logger.warning("webhook send slots %s not released; their lease runs out", held.slot_ids)


def destinations_to_wake(destination_id, held: HeldSlots) -> tuple[bool, list[int]]:
    """After `held` was released: whether the destination still has a due delivery, and the
    other destinations waiting for what was released (see WAKE_SQL)."""
    now = timezone.now()
    if not held.slot_ids:
        own_due = deliveries_due(now=now).filter(destination_id=destination_id).exists()
        return own_due, []
    with connection.cursor() as cursor:
        WAKE_STATEMENT.execute(
            cursor,
            {
                "now": now,
                "destination": destination_id,
                "account": held.account_id,
                # A store whose creator is gone is its own account, numbered minus its id.
                "creatorless_store": -held.account_id,
                "failing": held.failing,
                "destination_slots": settings.WEBHOOKS_DESTINATION_CONCURRENCY,
            },
        )
        own_due, account_next, failing_next = cursor.fetchone()
    others = []
    for other in (account_next, failing_next):
        if other is not None and other not in others:
            others.append(other)
    return own_due, others


@contextlib.contextmanager
def slots_held(destination_id):
    """Holds the slots of a send to this destination while the block runs; yields the
    HeldSlots, or None (holding nothing) when one of its bounds is full."""
    held = slots_take(destination_id)
    try:
        yield held
    finally:
        if held is not None:
            slots_release(held)
