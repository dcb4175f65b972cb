"""Recover what a channel missed: one new pending delivery for every retained event
in [since, until) that the channel is subscribed to and that it has not received, is not about
to, and was not sent by a recover already: no `succeeded` and no `pending` delivery to it, and no
delivery a recover queued (so failed ones, ones turned `disabled` when the channel was turned
off, and events that got none are recovered once; a disable and enable do not make them missed
again).

Budgeted per store (docs/decisions/hardening.md, Hardening V, 5): at most
WEBHOOKS_RECOVER_CALLS_LIMIT calls and WEBHOOKS_RECOVER_QUEUED_LIMIT queued deliveries in any
WEBHOOKS_RECOVER_WINDOW_SECONDS, and never past the store's pending ceiling
(WEBHOOKS_STORE_PENDING_MAX); a call with nothing left is RateLimited with Retry-After. A call
reserves its share of the budget when it starts (a WebhookRecovery row), so concurrent calls
cannot spend it twice, and gives back what it did not queue when it ends.

Bounded work per request: events are taken in batches of WEBHOOKS_RECOVER_BATCH, oldest first,
each batch in its own short transaction holding the channel's row lock (so two recovers of
one channel cannot both queue an event: the second batch sees the first's deliveries), and at
most WEBHOOKS_RECOVER_MAX (or what the budget leaves) per request; when that stops it, the
answer's `until` is where it stopped, and the client calls again from there.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from core.api.errors import Conflict, RateLimited, ValidationFailed
from events.models import Event
from stores.models import Store
from webhooks.deliveries.services import budget_wait, deliveries_create, pending_room_check
from webhooks.dispatch.queueing import drain_request_on_commit
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookRecovery


def _recover_budget_take(*, channel: WebhookChannel, now) -> WebhookRecovery:
    """This call's row, holding how many deliveries it may queue: what the per-call cap, the
    store's recover budget and its pending room leave. RateLimited when that is none."""
    window_seconds = settings.WEBHOOKS_RECOVER_WINDOW_SECONDS
    window = timedelta(seconds=window_seconds)
    calls_limit = settings.WEBHOOKS_RECOVER_CALLS_LIMIT
    queued_limit = settings.WEBHOOKS_RECOVER_QUEUED_LIMIT
    with transaction.atomic():
        # Serialises the store's recover calls: each counts the others' rows.
        Store.objects.select_for_update(no_key=True).only("id").get(pk=channel.store_id)
        # Rows past the window count no more: a store keeps at most calls_limit of them.
        WebhookRecovery.objects.filter(
            store_id=channel.store_id, created_at__lte=now - window
        ).delete()
        # At most calls_limit rows: a refused call writes none.
        spent = list(
            WebhookRecovery.objects.filter(
                store_id=channel.store_id, created_at__gt=now - window
            ).values_list("created_at", "queued")
        )
        calls = [(when, 1) for when, _ in spent]
        wait = budget_wait(spent=calls, limit=calls_limit, window=window, now=now)
        if wait is not None:
            raise RateLimited(
                int(wait) + 1,
                f"At most {calls_limit} recover calls per store in {window_seconds:g} s; "
                "try later.",
            )
        wait = budget_wait(spent=spent, limit=queued_limit, window=window, now=now)
        if wait is not None:
            raise RateLimited(
                int(wait) + 1,
                f"At most {queued_limit} deliveries queued by recover per store in "
                f"{window_seconds:g} s; try later.",
            )
        allowance = min(
            settings.WEBHOOKS_RECOVER_MAX,
            queued_limit - sum(queued for _, queued in spent),
            pending_room_check(store_id=channel.store_id),
        )
        return WebhookRecovery.objects.create(
            store_id=channel.store_id, channel_id=channel.pk, queued=allowance, created_at=now
        )


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
    recovery = _recover_budget_take(channel=channel, now=now)
    cap, batch = recovery.queued, settings.WEBHOOKS_RECOVER_BATCH
    received_or_recovered = WebhookDelivery.objects.filter(
        Q(status__in=[WebhookDelivery.STATUS_SUCCEEDED, WebhookDelivery.STATUS_PENDING])
        | Q(recovered=True),
        event=OuterRef("pk"),
        channel_id=channel.pk,
    )
    missed = (
        Event.objects.filter(
            store_id=channel.store_id,
            type__in=channel.event_types,
            occurred_at__gte=since,
            occurred_at__lt=until,
        )
        .exclude(Exists(received_or_recovered))
        .order_by("occurred_at", "id")
    )
    queued, after, exhausted = 0, None, False
    while queued < cap and not exhausted:
        size = min(batch, cap - queued)
        with transaction.atomic():
            # NO KEY UPDATE: serialises recovers of the channel, yet lets an event's fan-out
            # check its deliveries' foreign key to it (KEY SHARE) without waiting.
            locked = (
                WebhookChannel.objects.select_for_update(no_key=True).filter(pk=channel.pk).first()
            )
            if locked is None or not locked.enabled:
                exhausted = True  # deleted or turned off meanwhile: nothing more to send it
                break
            page = missed
            if after is not None:
                page = page.filter(
                    Q(occurred_at__gt=after[0]) | Q(occurred_at=after[0], id__gt=after[1])
                )
            events = list(page[:size])
            if events:
                deliveries_create([(event, locked) for event in events], recovered=True)
                drain_request_on_commit(locked.pk)
        queued += len(events)
        exhausted = len(events) < size
        if events:
            after = (events[-1].occurred_at, events[-1].id)
    # What it did not queue goes back to the store's budget.
    WebhookRecovery.objects.filter(pk=recovery.pk).update(queued=queued)
    if not exhausted and after is not None:
        # Stopped by the cap or the budget: the next call starts here (events at this instant
        # after the last one queued are still missed; the queued ones now have a delivery).
        until = after[0]
    return {"queued": queued, "since": since, "until": until}
