"""Send slots: how many sends are in flight at once (docs/decisions/webhooks.md "Fairness between
stores"). A send holds, all at once or not at all, one free slot of its channel
(WEBHOOKS_CHANNEL_CONCURRENCY), one of the account that created its store
(WEBHOOKS_ACCOUNT_CONCURRENCY) and, while its channel is failing (`failing_since` set), one of the
failing channels' share (WEBHOOKS_FAILING_CONCURRENCY). A slot is a leased row
(models.WebhookSendSlot), kept alive while its holder lives (webhooks/dispatch/leases.py): a worker
that dies gives its slots back within seconds, and slots work through any connection pooler, which
session advisory locks did not.

`slots_held` is what a send uses (webhooks/dispatch/attempts.py): take, run the send, release, and
wake who waits for the slots."""

import contextlib
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.database.connections import PreparedStatement
from webhooks.dispatch.leases import LeaseKeeper, live_seconds
from webhooks.dispatch.queueing import channel_drain_continue
from webhooks.models import WebhookSendSlot, due_sql

logger = logging.getLogger(__name__)


# --- take ---------------------------------------------------------------------------------


@dataclass
class HeldSlots:
    """What a send holds: its slot rows (none for a deleted channel), and what they were
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


def slots_take(channel_id, leases: LeaseKeeper | None = None) -> HeldSlots | None:
    """Takes the slots a send to this channel needs, renewed by `leases` (none: nobody
    renews them, as after a worker's death); None when one of them is full."""
    token = uuid.uuid4()
    taken_at = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            TAKE_SQL,
            [
                channel_id,
                token,
                timedelta(seconds=live_seconds()),
                settings.WEBHOOKS_CHANNEL_CONCURRENCY,
                settings.WEBHOOKS_ACCOUNT_CONCURRENCY,
                settings.WEBHOOKS_FAILING_CONCURRENCY,
            ],
        )
        slot_ids, account_id, failing = cursor.fetchone()
    if slot_ids is None:
        return None
    if leases is not None:
        leases.hold(token, taken_at=taken_at)
    return HeldSlots(slot_ids=slot_ids, token=token, account_id=account_id, failing=failing)


# --- release, and wake who waits ------------------------------------------------------------

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

# After a release, in one round trip: whether the channel still has a due delivery
# (models.DUE_SQL; the deliveries' leases are in the workers' clock, the slots' in
# the database's), and the next other channel, in id order after this one and wrapping round
# (so the waiting ones take turns), that has a due delivery and a free channel slot: one
# of the same account, and, when a failing slot was released, one of the failing ones.
# Fixed text; values are parameters. ({channel} is filled in below.)
DUE_WHERE = "due.channel_id = {channel} AND " + due_sql(delivery="due", now="%(now)s")
DUE_EXISTS_SQL = f"EXISTS (SELECT 1 FROM webhooks_webhookdelivery AS due WHERE {DUE_WHERE})"  # noqa: S608
WAITING_SQL = """
SELECT dest.id FROM webhooks_webhookchannel AS dest
JOIN stores_store AS store ON store.id = dest.store_id
WHERE {where} AND dest.enabled AND dest.id {after} %(channel)s AND {due}
    AND (SELECT count(*) FROM webhooks_webhooksendslot AS slot
         WHERE slot.scope = 1 AND slot.owner = dest.id AND slot.lease_until >= now())
        < %(channel_slots)s
ORDER BY dest.id LIMIT 1
"""
NEXT_WAITING_SQL = """(
    SELECT waiting.id FROM (
        (SELECT * FROM ({after}) AS after_this) UNION ALL (SELECT * FROM ({before}) AS before_this)
    ) AS waiting
    LIMIT 1
)"""


def _next_waiting(where: str) -> str:
    due = DUE_EXISTS_SQL.format(channel="dest.id")
    return NEXT_WAITING_SQL.format(
        after=WAITING_SQL.format(where=where, after=">", due=due),
        before=WAITING_SQL.format(where=where, after="<", due=due),
    )


WAKE_SQL = "SELECT {own_due}, {account_next}, CASE WHEN %(failing)s THEN {failing_next} END".format(
    own_due=DUE_EXISTS_SQL.format(channel="%(channel)s"),
    account_next=_next_waiting(
        "(store.created_by_id = %(account)s OR store.id = %(creatorless_store)s)"
    ),
    failing_next=_next_waiting("dest.failing_since IS NOT NULL"),
)
# Prepared once per database session (core/database/connections.py): planning the wake-up query
# cost more than
# running it.
RELEASE_STATEMENT = PreparedStatement("storefront_send_slots_release", RELEASE_SQL)
WAKE_STATEMENT = PreparedStatement("storefront_send_slots_wake", WAKE_SQL)
# The constant written into the SQL above.
assert WebhookSendSlot.SCOPE_CHANNEL == 1


def slots_release(held: HeldSlots, leases: LeaseKeeper) -> None:
    leases.drop(held.token)
    if not held.slot_ids:
        return
    try:
        with connection.cursor() as cursor:
            RELEASE_STATEMENT.execute(cursor, {"slot_ids": held.slot_ids, "token": held.token})
    except Exception:
        # A broken connection: the leases run out on their own.
        logger.warning("webhook send slots %s not released; their lease runs out", held.slot_ids)


def _channels_wake(channel_id, held: HeldSlots, *, more_due: bool = False) -> None:
    """After slots are released: a drain or send refused a slot ended without a trace, leaving
    its deliveries to the slot holders; so each holder, once it let go, queues a drain of its
    channel if anything is still due there, and a drain of the next other channel of
    its account with a due delivery (and, for a failing slot, of the next failing one). Looking
    after the release closes the gap: whoever was refused this slot was refused before, and
    its deliveries are due now. What a wake-up misses (a slot whose lease ran out) the sweeper
    queues."""
    if not held.slot_ids:
        return  # a deleted channel: nothing to wake
    with connection.cursor() as cursor:
        WAKE_STATEMENT.execute(
            cursor,
            {
                "now": timezone.now(),
                "channel": channel_id,
                "account": held.account_id,
                # A store whose creator is gone is its own account, numbered minus its id.
                "creatorless_store": -held.account_id,
                "failing": held.failing,
                "channel_slots": settings.WEBHOOKS_CHANNEL_CONCURRENCY,
            },
        )
        own_due, account_next, failing_next = cursor.fetchone()
    # The others first: they queue ahead of this channel's successor for the freed slot.
    for other in dict.fromkeys(filter(None, (account_next, failing_next))):
        channel_drain_continue(other)
    if more_due or own_due:
        channel_drain_continue(channel_id)


@contextlib.contextmanager
def slots_held(channel_id, leases: LeaseKeeper, *, more_due=lambda: False):
    """Holds the slots of a send to this channel while the block runs, renewed by
    `leases`; yields the HeldSlots, or None (holding nothing) when one of its bounds is full.
    After the block, the slots are released and who waits for them is woken (`more_due()`:
    whether the block left deliveries it was due to send)."""
    held = slots_take(channel_id, leases)
    try:
        yield held
    finally:
        if held is not None:
            slots_release(held, leases)
    if held is not None:
        _channels_wake(channel_id, held, more_due=more_due())
