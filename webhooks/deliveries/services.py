"""Writes of the webhooks area: channels, and deliveries from creation to a final state.

Delivery lifecycle (docs/design.md "Webhooks"): created `pending` in the event's transaction, to the
enabled channels only (`disabled`, never sent, when its channel is disabled before its first
attempt) -> claimed with a lease by one worker -> attempt sent -> `succeeded` on a 2xx, else
`pending` again with `next_attempt_at` on the retry schedule, then `failed` after the last retry.
New deliveries are sent by a drain of their channel, queued on commit; a retry is queued as its own
send task; the beat sweeper queues a drain of each channel with a due delivery whose message was
lost. Every send holds one of its channel's few send slots, one of its account's and, while the
channel fails, one of the failing channels' share (webhooks/dispatch/attempts.py), so no store, no
account and no set of failing receivers fills the workers. Queueing the tasks and the sweeper are
webhooks/dispatch/queueing.py's."""

import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.api.errors import RateLimited, ValidationFailed
from core.operations import metrics
from events.models import Event
from stores.models import Store
from webhooks.deliveries.selectors import delivery_get
from webhooks.dispatch.queueing import drain_request_on_commit, drains_request_on_commit
from webhooks.models import WebhookChannel, WebhookDelivery, url_origin

logger = logging.getLogger(__name__)


def deliveries_create(
    pairs: list[tuple[Event, WebhookChannel]], *, replay_of=None, recovered=False
) -> list[WebhookDelivery]:
    """A pending delivery of each (event, channel) of `pairs`, written in one statement."""
    now = timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            store_id=event.store_id,
            event=event,
            event_occurred_at=event.occurred_at,
            event_type=event.type,
            channel=channel,
            destination_origin=url_origin(channel.url),
            status=WebhookDelivery.STATUS_PENDING,
            next_attempt_at=now,
            enqueued_at=now,
            replay_of=replay_of,
            recovered=recovered,
            created_at=now,
            updated_at=now,
        )
        for event, channel in pairs
    )
    for delivery in deliveries:
        event = delivery.event
        # Logged with the id of the request that created it: its attempts may be made by a
        # drain another request queued, so this line links the request to the delivery id.
        logger.info(
            "webhook delivery %s created: event %s (%s), channel %s, %s",
            delivery.pk,
            event.pk,
            event.type,
            delivery.channel_id,
            delivery.status,
            extra={
                "delivery_id": str(delivery.pk),
                "event_id": str(event.pk),
                "event_type": event.type,
                "channel_id": delivery.channel_id,
                "store_id": event.store_id,
                "delivery_status": delivery.status,
            },
        )
    return deliveries


# --- a store's pending deliveries ------------------------------------------------------------

# How long a refused recover or replay is told to wait for the store's backlog to drain.
PENDING_RETRY_AFTER_SECONDS = 60


def pending_room(*, store_id) -> int:
    """How many more pending deliveries the store may have (WEBHOOKS_STORE_PENDING_MAX); the
    count stops at the ceiling, so a store's backlog costs at most that many index entries."""
    limit = settings.WEBHOOKS_STORE_PENDING_MAX
    # Through its channels: the pending deliveries' index is by channel (at most
    # WEBHOOKS_STORE_CHANNELS_MAX of them).
    channel_ids = WebhookChannel.objects.filter(store_id=store_id).values("id")
    pending = WebhookDelivery.objects.filter(
        channel_id__in=channel_ids, status=WebhookDelivery.STATUS_PENDING
    )[:limit].count()
    return limit - pending


def pending_room_check(*, store_id) -> int:
    """The store's room for pending deliveries; none is RateLimited (recover and replay)."""
    room = pending_room(store_id=store_id)
    if room <= 0:
        raise RateLimited(
            PENDING_RETRY_AFTER_SECONDS,
            f"The store has {settings.WEBHOOKS_STORE_PENDING_MAX} pending deliveries, its "
            "most; try when they have been sent.",
        )
    return room


class _TransactionRoom(threading.local):
    """Each store's room for pending deliveries as the current transaction of this thread has
    used it (events of one transaction share its txid): measured at the store's first event,
    then lowered by what the transaction writes, so a batch of events counts the backlog once.
    What other transactions send meanwhile only makes it an underestimate."""

    txid = None

    def of(self, txid) -> dict:
        if txid != self.txid:
            self.txid, self.room = txid, {}
        return self.room


_transaction_room = _TransactionRoom()


def deliveries_create_for_event(*, event, **signal) -> list[WebhookDelivery]:
    """Connected to events.services.event_recorded (webhooks/apps.py): runs inside the event's
    transaction; `signal` is what a Django signal passes besides the event.

    One pending delivery per enabled channel of the store whose allowed_notifications include
    the event's type, written in one statement (at most WEBHOOKS_STORE_CHANNELS_MAX rows). A
    disabled channel gets none: recover sends it what it missed once it is enabled. An event
    whose deliveries would take the store past WEBHOOKS_STORE_PENDING_MAX pending gets none
    either (logged, counted): the business write never fails for its webhooks, and recover
    sends the event once the backlog has drained.
    """
    channels = list(
        WebhookChannel.objects.filter(
            store_id=event.store_id, enabled=True, event_types__contains=[event.type]
        ).order_by("id")
    )
    if not channels:
        return []
    rooms = _transaction_room.of(event.txid)
    room = rooms.get(event.store_id)
    if room is None:
        room = rooms[event.store_id] = pending_room(store_id=event.store_id)
    if len(channels) > room:
        metrics.webhook_fanout_withheld("pending_ceiling")
        logger.warning(
            "webhook deliveries of event %s withheld: store %s has %s pending deliveries, "
            "its most; recover sends the event later",
            event.pk,
            event.store_id,
            settings.WEBHOOKS_STORE_PENDING_MAX - room,
            extra={"event_id": str(event.pk), "store_id": event.store_id},
        )
        return []
    rooms[event.store_id] = room - len(channels)
    deliveries = deliveries_create([(event, channel) for channel in channels])
    drains_request_on_commit([channel.pk for channel in channels])
    return deliveries


# --- budgets -----------------------------------------------------------------------------------


def budget_wait(
    *, spent: list[tuple[datetime, int]], limit: int, window: timedelta, now, wanted: int = 1
) -> float | None:
    """Seconds until `wanted` more fit in a budget of `limit` per sliding `window`, given what
    was `spent` in the window as (when, how much); None when they fit now. Every per-store
    budget of the area (replays, recover calls and the deliveries they queue) is this."""
    total = sum(amount for _, amount in spent)
    if total + wanted <= limit:
        return None
    for when, amount in sorted(spent):
        total -= amount
        if total + wanted <= limit:
            return (when + window - now).total_seconds()
    return window.total_seconds()


def _replay_cap_check(*, store) -> None:
    """At most WEBHOOKS_REPLAY_LIMIT replays per store in any WEBHOOKS_REPLAY_WINDOW_SECONDS;
    more is RateLimited, with Retry-After when the oldest counted replay leaves the window.

    Call inside the transaction that creates the replay: the store row lock serialises a
    store's replays, so concurrent ones cannot all pass the count together.
    """
    Store.objects.select_for_update(no_key=True).only("id").get(pk=store.pk)
    now = timezone.now()
    window = timedelta(seconds=settings.WEBHOOKS_REPLAY_WINDOW_SECONDS)
    limit = settings.WEBHOOKS_REPLAY_LIMIT  # at least 1 (config/settings/webhooks.py)
    # The newest `limit` replays in the window are all that can decide.
    spent = (
        WebhookDelivery.objects.filter(
            store=store, replay_of__isnull=False, created_at__gt=now - window
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)[:limit]
    )
    wait = budget_wait(spent=[(when, 1) for when in spent], limit=limit, window=window, now=now)
    if wait is None:
        return
    raise RateLimited(
        int(wait) + 1,
        f"At most {limit} replays per store in "
        f"{settings.WEBHOOKS_REPLAY_WINDOW_SECONDS:g} s; try later.",
    )


def delivery_replay(*, store, delivery_id) -> WebhookDelivery:
    """A new pending delivery of the same (retained) event to the delivery's own channel.

    Sends the event again; it never repeats the business action that recorded the event.
    Capped per store (_replay_cap_check) for the API and the admin alike.
    """
    original = delivery_get(store=store, delivery_id=delivery_id)
    with transaction.atomic():
        channel = WebhookChannel.objects.filter(store=store, pk=original.channel_id).first()
        if channel is None:
            raise ValidationFailed.field("destination", "the delivery's channel was deleted")
        if not channel.enabled:
            raise ValidationFailed.field("destination", "the delivery's channel is disabled")
        _replay_cap_check(store=store)
        pending_room_check(store_id=store.pk)
        [delivery] = deliveries_create([(original.event, channel)], replay_of=original.pk)
        drain_request_on_commit(delivery.channel_id)
    return delivery
