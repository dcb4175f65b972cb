"""Reads of the webhooks area."""

import uuid

from django.db import connection

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


def event_types_list() -> list[EventType]:
    return list(EVENT_TYPES.values())


def deliveries_of_store(*, store):
    """The store's deliveries, newest first (filtered by webhooks.filters in the view)."""
    return WebhookDelivery.objects.filter(store=store).order_by("-created_at", "-id")


def delivery_total(*, store):
    """The number of the store's deliveries as a one-value queryset for the list's paginator:
    the store's WebhookDeliveryTotal row, O(1) at any size. None on SQLite (`make run`, no
    triggers): the paginator counts instead."""
    if connection.vendor != "postgresql":
        return None
    return WebhookDeliveryTotal.objects.filter(store=store).values_list("deliveries", flat=True)


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
