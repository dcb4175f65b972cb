"""Reads of the webhooks area."""

import uuid

from django.db.models import Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.api.errors import NotFound
from events.registry import EVENT_TYPES, EventType
from webhooks.models import (
    WebhookChannel,
    WebhookDelivery,
    WebhookDeliveryTotal,
    WebhookSigningSecret,
)


def destination_get(*, store) -> WebhookChannel:
    """The /api/v2/webhook-destination alias: the store's first channel."""
    destination = WebhookChannel.objects.filter(store=store).order_by("id").first()
    if destination is None:
        raise NotFound("This store has no webhook destination.")
    return destination


def destination_secret_get(*, store) -> str | None:
    """The store's current signing secret; None without a destination (the alias shows it)."""
    if not WebhookChannel.objects.filter(store=store).exists():
        return None
    found = WebhookSigningSecret.objects.filter(store=store).values_list("secret", flat=True)
    return found.first()


def destination_url_get(*, store) -> str | None:
    """The URL of the store's destination; None without a destination."""
    found = WebhookChannel.objects.filter(store=store).order_by("id")
    return found.values_list("url", flat=True).first()


def signing_secrets(*, store_id) -> list[str]:
    """The secrets a delivery of the store is signed with: the current one, and the previous
    one while its grace lasts. Empty while the store has none configured."""
    found = WebhookSigningSecret.objects.filter(store_id=store_id).first()
    if found is None:
        return []
    secrets = [found.secret]
    expires = found.previous_secret_expires_at
    if found.previous_secret and expires and expires > timezone.now():
        secrets.append(found.previous_secret)
    return secrets


def event_types_list() -> list[EventType]:
    return list(EVENT_TYPES.values())


def delivery_total(*, store) -> Coalesce:
    """The number of the store's deliveries, as an expression: its maintained counter row,
    O(1) at any size (core/database/list_totals.py). No row: no deliveries."""
    counter = WebhookDeliveryTotal.objects.filter(store=store).values("deliveries")
    return Coalesce(Subquery(counter), 0)


def delivery_get(*, store, delivery_id) -> WebhookDelivery:
    """Another store's delivery and a malformed id are both simply not found."""
    try:
        delivery_uuid = uuid.UUID(str(delivery_id))
    except ValueError:
        raise NotFound() from None
    delivery = (
        WebhookDelivery.objects.select_related("event", "destination")
        .filter(store=store, pk=delivery_uuid)
        .first()
    )
    if delivery is None:
        raise NotFound()
    return delivery
