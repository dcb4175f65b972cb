"""Recover what a channel missed (issue 31 §2): one new pending delivery for every retained event
in [since, until) that the channel is subscribed to and that has no `succeeded` and no
`pending` delivery to it (failed ones, ones disabled while the channel was off, and events that
got none).

Bounded work per request: events are taken in batches of WEBHOOKS_RECOVER_BATCH, oldest first,
each batch in its own short transaction holding the channel's row lock (so two recovers of
one channel cannot both queue an event: the second batch sees the first's deliveries), and at
most WEBHOOKS_RECOVER_MAX per request; when that cap stops it, the answer's `until` is where
it stopped, and the client calls again from there.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from core.api.errors import Conflict, ValidationFailed
from events.models import Event
from webhooks.models import WebhookChannel, WebhookDelivery
from webhooks.queueing import drain_request_on_commit
from webhooks.services import _delivery_new

BATCH = 500
MAX_PER_REQUEST = 5000


def channel_recover(*, channel: WebhookChannel, since, until=None) -> dict:
    now = timezone.now()
    until = until or now
    retained_from = now - timedelta(days=settings.EVENTS_RETENTION_DAYS)
    if since < retained_from:
        raise ValidationFailed.field(
            "since", f"must be within the retention ({settings.EVENTS_RETENTION_DAYS} days)"
        )
    if since >= until:
        raise ValidationFailed.field("since", "must be before until")
    if not channel.enabled:
        raise Conflict("The webhook channel is disabled; enable it first.")
    batch = getattr(settings, "WEBHOOKS_RECOVER_BATCH", BATCH)
    cap = getattr(settings, "WEBHOOKS_RECOVER_MAX", MAX_PER_REQUEST)
    delivered_or_waiting = WebhookDelivery.objects.filter(
        event=OuterRef("pk"),
        destination_id=channel.pk,
        status__in=[WebhookDelivery.STATUS_SUCCEEDED, WebhookDelivery.STATUS_PENDING],
    )
    missed = (
        Event.objects.filter(
            store_id=channel.store_id,
            type__in=channel.event_types,
            occurred_at__gte=since,
            occurred_at__lt=until,
        )
        .exclude(Exists(delivered_or_waiting))
        .order_by("occurred_at", "id")
    )
    queued, after = 0, None
    while queued < cap:
        with transaction.atomic():
            locked = WebhookChannel.objects.select_for_update().filter(pk=channel.pk).first()
            if locked is None or not locked.enabled:
                break  # deleted or turned off meanwhile: nothing more to send it
            page = missed
            if after is not None:
                page = page.filter(
                    Q(occurred_at__gt=after[0]) | Q(occurred_at=after[0], id__gt=after[1])
                )
            events = list(page[: min(batch, cap - queued)])
            for event in events:
                _delivery_new(event=event, destination=locked)
            if events:
                drain_request_on_commit(locked.pk)
        queued += len(events)
        if len(events) < batch:
            break
        after = (events[-1].occurred_at, events[-1].id)
    if queued >= cap and after is not None:
        # Stopped by the cap: the next call starts here (events at this instant after the last
        # one queued are still missed; the queued ones now have a pending delivery).
        until = after[0]
    return {"queued": queued, "since": since, "until": until}
