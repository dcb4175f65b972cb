import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.dispatch import Signal
from django.utils import timezone

from core.operations import metrics
from events import partitions
from events.models import Event, EventPruneMark
from events.registry import event_type_get

logger = logging.getLogger(__name__)

# Sent by `record` with `event=`, inside the transaction of the change. The journal sits below
# the apps that consume it: an app above (webhooks) connects in its `AppConfig.ready`, so
# `events` imports none of them (docs/design.md "A layered house").
event_recorded = Signal()


def record(*, store, type: str, subject, data: dict | None = None) -> Event:
    """The single writer of the journal: call it inside the transaction of the change.

    `subject` is a model instance (its `_meta.model_name` and pk name it) or a
    `(subject_type, subject_id)` pair.
    """
    event_type = event_type_get(type)
    if isinstance(subject, tuple):
        subject_type, subject_id = subject
    else:
        subject_type, subject_id = subject._meta.model_name, subject.pk
    if subject_type != event_type.subject_type:
        raise ValueError(f"{type} events are about a {event_type.subject_type}")
    data = dict(data or {})
    for name, kind in event_type.data_schema.items():
        if not isinstance(data.get(name), kind):
            raise ValueError(f"{type} needs data[{name!r}] of type {kind.__name__}")
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events.record must run inside the transaction of the change")
    event = Event.objects.create(
        store=store,
        type=event_type.type,
        version=event_type.version,
        subject_type=subject_type,
        subject_id=str(subject_id),
        data=data,
    )
    # Same transaction: what a receiver writes (a pending webhook delivery) exists iff the
    # event does; a receiver's error is the change's error (send, not send_robust).
    event_recorded.send(sender=Event, event=event)
    metrics.event_recorded(event_type.type)
    return event


def partitions_upkeep(
    *, now=None, batch_size: int | None = None, on_batch: Callable[[int], object] | None = None
) -> dict:
    """The hourly upkeep of the journal's days: the partitions from today to
    EVENTS_PARTITIONS_AHEAD days ahead exist, and the days past retention are gone
    (`events_prune`, to which `batch_size` and `on_batch` go)."""
    today = (now or timezone.now()).date()
    created = partitions.partitions_ensure(
        today, today + timedelta(days=settings.EVENTS_PARTITIONS_AHEAD)
    )
    pruned = events_prune(now=now, batch_size=batch_size, on_batch=on_batch)
    return {"created": created, "pruned": pruned}


def events_prune(
    *, now=None, batch_size: int | None = None, on_batch: Callable[[int], object] | None = None
) -> int:
    """Removes the events past the retention window; returns how many.

    Whole days go: each day partition whose every event is past the window is dropped with the
    deliveries and attempts of its day, raising the stores' prune marks in the same
    transaction (events/partitions.py), so an event is kept between EVENTS_RETENTION_DAYS and
    a day more. Rows of the legacy partition (the journal as it was before it was partitioned)
    are deleted in short batches until that partition's whole range is past the window and it
    is dropped too. The prune marks are what make older cursors answer 410.
    """
    now = now or timezone.now()
    removed = 0
    for partition in partitions.expired_partitions(now):
        dropped = partitions.partition_drop(partition, now=now, marks_raise=_prune_marks_raise)
        removed += dropped
        if on_batch is not None:  # the command's progress bar
            on_batch(dropped)
    legacy = partitions.legacy_partition()
    if legacy is not None:
        cutoff = min(now - timedelta(days=settings.EVENTS_RETENTION_DAYS), legacy.high)
        removed += _rows_prune(cutoff, now=now, batch_size=batch_size, on_batch=on_batch)
    return removed


def _rows_prune(cutoff, *, now, batch_size, on_batch) -> int:
    """Deletes events older than `cutoff` in short batches, each its own transaction (no long
    locks, and the journal's transaction horizon never waits on the pruner), through the ORM so
    that their deliveries and attempts go with them."""
    batch_size = batch_size or settings.EVENTS_PRUNE_BATCH_SIZE
    deleted_total = 0
    while True:
        with transaction.atomic():
            batch = list(
                Event.objects.filter(occurred_at__lt=cutoff)
                # Overlapping runs take different rows instead of waiting on each other.
                .select_for_update(skip_locked=True)
                .order_by("occurred_at")
                .values_list("id", "store_id", "txid")[:batch_size]
            )
            if not batch:
                break
            Event.objects.filter(pk__in=[event_id for event_id, _, _ in batch]).delete()
            _prune_marks_raise(batch, now)
        deleted_total += len(batch)
        if on_batch is not None:
            on_batch(len(batch))
        logger.info("events prune: deleted %d events so far (cutoff %s)", deleted_total, cutoff)
        if len(batch) < batch_size:
            break
    return deleted_total


def _prune_marks_raise(batch, now) -> None:
    """Raises each store's prune mark to the highest (txid, id) deleted in this batch.

    A conditional UPDATE only ever moves a mark forward, so overlapping prune runs are safe.
    """
    # In position order, so each store keeps its highest.
    ordered = sorted(batch, key=lambda row: (row[2], row[0]))
    highest = {store_id: (txid, event_id) for event_id, store_id, txid in ordered}
    for store_id, (txid, event_id) in highest.items():
        behind = EventPruneMark.objects.filter(store_id=store_id).filter(
            Q(txid__lt=txid) | Q(txid=txid, event_id__lt=event_id)
        )
        if behind.update(txid=txid, event_id=event_id, updated_at=now):
            continue
        # No mark yet, or one already at or past this position; get_or_create survives a race.
        _, created = EventPruneMark.objects.get_or_create(
            store_id=store_id, defaults={"txid": txid, "event_id": event_id, "updated_at": now}
        )
        if not created:
            behind.update(txid=txid, event_id=event_id, updated_at=now)
