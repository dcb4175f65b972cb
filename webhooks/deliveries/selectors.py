"""TODO docstring."""

import uuid

from django.db.models import Subquery
from django.db.models.functions import Coalesce

from core.api.errors import NotFound
from webhooks.models import (
    WebhookDelivery,
    WebhookDeliveryTotal,
)


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
        WebhookDelivery.objects.select_related("event", "channel")
        .filter(store=store, pk=delivery_uuid)
        .first()
    )
    if delivery is None:
        raise NotFound()
    return delivery
