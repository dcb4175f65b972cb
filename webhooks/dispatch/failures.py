"""What a failed attempt leads to: the wait before its retry (the schedule, and a receiver's
Retry-After within it), and the channel's health: failing since when, disabled after 410
Gone or after failing for WEBHOOKS_DISABLE_AFTER_FAILING (docs/design.md "Webhooks")."""

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webhooks.dispatch.sender import SendResult
from webhooks.models import WebhookChannel, WebhookDelivery

logger = logging.getLogger(__name__)


def retry_delay(*, attempts: int, result: SendResult) -> float | None:
    """Seconds until the next attempt, or None when the schedule is exhausted."""
    schedule = settings.WEBHOOKS_RETRY_SCHEDULE_SECONDS
    if attempts > len(schedule):
        return None
    delay = schedule[attempts - 1]
    if result.retry_after_seconds is not None:
        # Honoured when it asks for longer, within the schedule's longest wait.
        delay = max(delay, min(result.retry_after_seconds, max(schedule)))
    return delay


def retry_cancel_if_channel_off(*, delivery_id, now) -> bool:
    """A retry is not scheduled for a channel disabled or deleted during the attempt (its
    pending deliveries were settled then, except this leased one): the delivery is `failed`."""
    return bool(
        WebhookDelivery.objects.filter(
            pk=delivery_id, status=WebhookDelivery.STATUS_PENDING, lease_until__isnull=True
        )
        .filter(Q(channel__isnull=True) | Q(channel__enabled=False))
        .update(
            status=WebhookDelivery.STATUS_FAILED,
            next_attempt_at=None,
            enqueued_at=None,
            updated_at=now,
        )
    )


def channel_health_update(*, channel, result: SendResult, now) -> bool:
    """410 Gone, or failing every attempt for WEBHOOKS_DISABLE_AFTER_FAILING, disables it;
    returns whether it did (its pending deliveries, this one included, are then settled).

    `channel` is as read at claim time; the conditional UPDATEs keep it right when other
    workers change it meanwhile, and are skipped when there is nothing to change.
    """
    if result.succeeded:
        if channel.failing_since is not None:
            WebhookChannel.objects.filter(pk=channel.pk).update(failing_since=None)
        return False
    if channel.failing_since is None:
        WebhookChannel.objects.filter(pk=channel.pk, failing_since__isnull=True).update(
            failing_since=now
        )
    reason = ""
    if result.response_status == 410:
        reason = WebhookChannel.DISABLED_GONE
    elif channel.failing_since is not None:
        failing_since = (
            WebhookChannel.objects.filter(pk=channel.pk)
            .values_list("failing_since", flat=True)
            .first()
        )
        if failing_since and failing_since <= now - settings.WEBHOOKS_DISABLE_AFTER_FAILING:
            reason = WebhookChannel.DISABLED_FAILING
    if reason:
        logger.warning("webhook channel %s disabled: %s", channel.pk, reason)
        channel_enabled_set(channel=channel, enabled=False, reason=reason)
    return bool(reason)


def channel_enabled_set(*, channel: WebhookChannel, enabled: bool, reason: str = ""):
    now = timezone.now()
    fields = {"enabled": enabled, "updated_at": now}
    if enabled:
        fields |= {"disabled_reason": "", "failing_since": None}
    else:
        fields["disabled_reason"] = reason or WebhookChannel.DISABLED_BY_USER
    with transaction.atomic():
        WebhookChannel.objects.filter(pk=channel.pk).update(**fields)
        if not enabled:
            pending_deliveries_settle(channel_id=channel.pk, now=now)
    for name, value in fields.items():
        setattr(channel, name, value)
    return channel


def pending_deliveries_settle(*, channel_id, now) -> None:
    """Deliveries still waiting for a disabled or removed channel will never be sent:
    `disabled` if never tried (docs/design.md: attempts 0), `failed` if already tried.

    Leased ones (an attempt in flight, or a worker that died) are left to their attempt's
    outcome or to the next claim, which record that attempt and then settle them the same way.
    """
    waiting = WebhookDelivery.objects.filter(
        channel_id=channel_id,
        status=WebhookDelivery.STATUS_PENDING,
        lease_until__isnull=True,
    )
    final = {"next_attempt_at": None, "enqueued_at": None, "updated_at": now}
    waiting.filter(attempts=0).update(status=WebhookDelivery.STATUS_DISABLED, **final)
    waiting.filter(attempts__gt=0).update(status=WebhookDelivery.STATUS_FAILED, **final)
