"""Reads of the webhooks area."""

import uuid

from django.db.models import Subquery
from django.db.models.functions import Coalesce

from config.api.errors import NotFound
from events.registry import EVENT_TYPES, EventType
from webhooks.models import WebhookDelivery, WebhookDeliveryTotal, WebhookDestination


def destination_get(*, store) -> WebhookDestination:
    destination = WebhookDestination.objects.filter(store=store).first()
    if destination is None:
        raise NotFound("This store has no webhook destination.")
    return destination


def destination_secret_get(*, store) -> str | None:
    """The current signing secret of the store's destination; None without a destination."""
    return WebhookDestination.objects.filter(store=store).values_list("secret", flat=True).first()


def destination_url_get(*, store) -> str | None:
    """The URL of the store's destination; None without a destination."""
    return WebhookDestination.objects.filter(store=store).values_list("url", flat=True).first()


def event_types_list() -> list[EventType]:
    return list(EVENT_TYPES.values())


def delivery_total(*, store) -> Coalesce:
    """The number of the store's deliveries, as an expression: its maintained counter row,
    O(1) at any size (config/list_totals.py). No row: no deliveries."""
    counter = WebhookDeliveryTotal.objects.filter(store=store).values("deliveries")
    return Coalesce(Subquery(counter), 0)


def delivery_get(*, store, delivery_id) -> WebhookDelivery:
    """Another store's delivery and a malformed id are both simply not found."""
    try:
        delivery_uuid = uuid.UUID(str(delivery_id))
    except ValueError:
        raise NotFound() from None
    delivery = (
        WebhookDelivery.objects.select_related("event")
        .filter(store=store, pk=delivery_uuid)
        .first()
    )
    if delivery is None:
        raise NotFound()
    return delivery
