"""Queueing the sending tasks: publishing them without blocking a business request, one drain
per channel (its marker), and the sweeper that queues what a lost message, a broker outage
or a dead worker left due (docs/decisions/webhooks.md "Pipeline and at-least-once").

Creating deliveries is services.py's, sending them attempts.py's; both queue through here.
"""

import contextlib
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.celery import app
from webhooks.dispatch.leases import LeaseKeeper, live_seconds
from webhooks.models import WebhookDelivery

logger = logging.getLogger(__name__)

# The tasks (webhooks/tasks.py) are queued by their stable names: tasks.py calls attempts.py,
# which calls this module, so importing the task objects here would close a circle.
DELIVERY_SEND_TASK = "webhooks.delivery_send"
CHANNEL_DRAIN_TASK = "webhooks.channel_drain"
DELIVERIES_SWEEP_TASK = "webhooks.deliveries_sweep"


# --- publishing ---------------------------------------------------------------------------


# After a failed publish this process stops trying for WEBHOOKS_BROKER_OUTAGE_PAUSE_SECONDS:
# during a broker outage a business request would otherwise wait out a connection timeout
# after its commit, and log a line, each time. The deliveries stay due in PostgreSQL; the
# sweeper queues them once the broker is back. With a pause of 0 (the test settings) nothing is
# kept, and the failure's time is kept rather than the pause's end, so none kept before counts.
_publish_failed_at = float("-inf")  # monotonic


def _tasks_publish(task_name, args_list: list[list], *, countdown: float | None = None) -> bool:
    """Queues the task named `task_name` once per args; False (nothing raised) when the
    broker is unreachable.

    Fails fast (one connection try, no publish retries): this runs after the commit of a
    business request, which must not wait seconds for a broker that is down.
    """
    global _publish_failed_at
    pause = settings.WEBHOOKS_BROKER_OUTAGE_PAUSE_SECONDS
    if time.monotonic() < _publish_failed_at + pause:
        return False
    try:
        with app.producer_or_acquire() as producer:
            producer.connection.ensure_connection(max_retries=1, interval_start=0, timeout=1)
            for args in args_list:
                app.send_task(
                    task_name, args=args, countdown=countdown, retry=False, producer=producer
                )
    except Exception:
        # Unreachable, or a pooled connection that broke: either way the next tries would fail
        # the same way for a while.
        if pause:
            _publish_failed_at = time.monotonic()
        logger.warning(
            "task broker unavailable: webhook tasks not queued for %.0f s; the sweeper will "
            "queue the deliveries",
            pause,
            exc_info=True,
        )
        return False
    return True


def deliveries_enqueue(delivery_ids: list, *, countdown: float | None = None) -> bool:
    """Queues one send task per delivery (retries, the sweeper); a broker outage is logged,
    not raised: the sweeper catches up."""
    args_list = [[str(delivery_id)] for delivery_id in delivery_ids]
    return _tasks_publish(DELIVERY_SEND_TASK, args_list, countdown=countdown)


# --- one drain per channel -------------------------------------------------------------- New
# deliveries are sent by a drain of their channel (attempts.channel_drain), which claims and sends
# due deliveries one after another. A marker in the cache says "a drain of this channel is queued or
# running"; while it is set, new deliveries queue nothing. Queued, it lasts WEBHOOKS_LEASE_SECONDS;
# running, the drain holds it as a lease (webhooks/dispatch/leases.py), so a killed worker's marker
# is gone within seconds, and the sweeper then queues a drain of what it left (deliveries_sweep).


def _drain_marker_key(channel_id) -> str:
    return f"webhooks:drain:{channel_id}"


def _drain_enqueue(channel_id) -> None:
    if not _tasks_publish(CHANNEL_DRAIN_TASK, [[channel_id]]):
        channel_drain_marker_clear(channel_id)  # so the next delivery tries again


def channel_drain_request(channel_id) -> None:
    """Queues a drain of the channel unless one is queued or running already (it will
    claim the new deliveries too). Called on the commit that created deliveries."""
    try:
        marker_set = cache.add(
            _drain_marker_key(channel_id), 1, timeout=settings.WEBHOOKS_LEASE_SECONDS
        )
    except Exception:
        marker_set = True  # no cache: queue anyway; a drain with nothing due just ends
    if marker_set:
        _drain_enqueue(channel_id)


def drain_request_on_commit(channel_id) -> None:
    transaction.on_commit(lambda: channel_drain_request(channel_id), robust=True)


def drains_request_on_commit(channel_ids: list) -> None:
    """drain_request_on_commit of each of an event's channels, in one cache round trip when
    their drains are queued or running already (a batch of events: all but the first)."""
    transaction.on_commit(lambda: _drains_request(channel_ids), robust=True)


def _drains_request(channel_ids: list) -> None:
    keys = {channel_id: _drain_marker_key(channel_id) for channel_id in channel_ids}
    try:
        marked = cache.get_many(list(keys.values()))
    except Exception:
        marked = {}  # no cache: each request below decides, as a single one would
    for channel_id, key in keys.items():
        if key not in marked:
            channel_drain_request(channel_id)


def channel_drain_continue(channel_id) -> None:
    """Queues the successor of a drain that ran out of time with deliveries still due."""
    with contextlib.suppress(Exception):
        cache.set(_drain_marker_key(channel_id), 1, timeout=settings.WEBHOOKS_LEASE_SECONDS)
    _drain_enqueue(channel_id)


def channel_drain_marker_hold(channel_id, leases: LeaseKeeper) -> None:
    """The running drain's marker: a lease renewed by `leases`, gone soon after it dies."""
    key = _drain_marker_key(channel_id)
    with contextlib.suppress(Exception):
        cache.set(key, 1, timeout=live_seconds())
    leases.hold_marker(key, taken_at=timezone.now())


def channel_drain_marker_let_go(channel_id, leases: LeaseKeeper, *, refused: bool = False) -> None:
    """A drain that ends without clearing its marker stops renewing it: it lasts a lease more,
    or as long as a successor queued meanwhile set it. A drain refused a send slot shortens it
    to a lease: the slots' holders queue the next drain when they let go, and if they died, the
    sweeper does once the marker is gone."""
    key = _drain_marker_key(channel_id)
    leases.drop_marker(key)
    if refused:
        with contextlib.suppress(Exception):
            cache.touch(key, live_seconds())


def channel_drain_marker_clear(channel_id, leases: LeaseKeeper | None = None) -> None:
    """Deletes the marker (and stops renewing it, if the drain of `leases` held it)."""
    key = _drain_marker_key(channel_id)
    if leases is not None:
        leases.drop_marker(key)
    try:
        cache.delete(key)
    except Exception:
        # It expires on its own; until then the sweeper queues what new deliveries need.
        logger.warning("webhook channel %s: drain marker not cleared", channel_id)


def _channels_without_drain(channel_ids: list) -> set:
    """Those of `channel_ids` with no drain queued or running (no marker); none when the
    cache cannot say."""
    keys = {_drain_marker_key(pk): pk for pk in channel_ids}
    try:
        marked = cache.get_many(list(keys))
    except Exception:
        return set()
    return {pk for key, pk in keys.items() if key not in marked}


def _drain_markers_set(channel_ids: list) -> None:
    with contextlib.suppress(Exception):
        cache.set_many(
            {_drain_marker_key(pk): 1 for pk in channel_ids},
            timeout=settings.WEBHOOKS_LEASE_SECONDS,
        )


# --- the sweeper ----------------------------------------------------------------------------


def deliveries_sweep(*, now=None) -> int:
    """Queues a drain of every channel with a due delivery that no drain will send;
    returns how many deliveries that covers.

    No drain will send them when their last message is older than
    WEBHOOKS_REQUEUE_AFTER_SECONDS (lost, or its queue is that far behind), or when their
    channel has no drain marker (none queued, none running: a killed worker's is gone
    within seconds, webhooks/dispatch/leases.py). One drain per channel, not one message per
    delivery: a channel's backlog costs one message, and its drains are bounded by
    WEBHOOKS_CHANNEL_CONCURRENCY, so a failing store's backlog neither floods the queue nor
    crowds out other stores' catch-up. The queued drains' markers are set, so a queue that is
    behind gets one more message per channel per WEBHOOKS_LEASE_SECONDS at most. Batches
    of WEBHOOKS_SWEEP_BATCH_SIZE channels, at most WEBHOOKS_SWEEP_MAX_BATCHES per run.
    """
    now = now or timezone.now()
    requeue_before = now - timedelta(seconds=settings.WEBHOOKS_REQUEUE_AFTER_SECONDS)
    due = WebhookDelivery.objects.due(now)
    unqueued = Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=requeue_before)
    batch_size = settings.WEBHOOKS_SWEEP_BATCH_SIZE
    queued = 0
    # A dead worker's delivery whose channel was deleted meanwhile has no drain: its own
    # send settles it (rare; one message each).
    orphans = list(
        due.filter(unqueued, channel__isnull=True).values_list("id", flat=True)[:batch_size]
    )
    if orphans and deliveries_enqueue(orphans):
        queued += WebhookDelivery.objects.filter(pk__in=orphans).update(enqueued_at=now)
    stale = due.filter(unqueued, channel__isnull=False)
    for _ in range(settings.WEBHOOKS_SWEEP_MAX_BATCHES):
        channel_ids = list(
            stale.order_by("channel_id")
            .values_list("channel_id", flat=True)
            .distinct()[:batch_size]
        )
        if not channel_ids:
            break
        drained = _drains_queue(due, channel_ids, now)
        if drained is None:
            return queued
        queued += drained
        if len(channel_ids) < batch_size:
            break
    # Recently queued, but with no drain queued or running any more: the longest waiting first
    # (a dead drain's deliveries), within the run's bound.
    recent = due.filter(channel__isnull=False).exclude(unqueued).order_by("next_attempt_at")
    waiting = list(
        dict.fromkeys(
            recent.values_list("channel_id", flat=True)[
                : batch_size * settings.WEBHOOKS_SWEEP_MAX_BATCHES
            ]
        )
    )
    for start in range(0, len(waiting), batch_size):
        undrained = _channels_without_drain(waiting[start : start + batch_size])
        drained = _drains_queue(due, sorted(undrained), now) if undrained else 0
        if drained is None:
            break
        queued += drained
    return queued


def _drains_queue(due, channel_ids: list, now) -> int | None:
    """Queues a drain of each channel and marks it queued; returns the due deliveries that
    covers, None when the broker refused them."""
    if not _tasks_publish(CHANNEL_DRAIN_TASK, [[pk] for pk in channel_ids]):
        logger.warning("webhook sweep: %d drains not queued", len(channel_ids))
        return None
    _drain_markers_set(channel_ids)
    return due.filter(channel_id__in=channel_ids).update(enqueued_at=now)
