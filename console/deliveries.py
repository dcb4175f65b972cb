"""Deliveries pages: the store's deliveries filtered by status, event type and channel (the
API's FilterSet), one delivery with its attempts (the API's attempt representation: never a
URL), and replay (the API's service, with its caps)."""

import uuid
from datetime import datetime
from urllib.parse import urlencode

from django.contrib import messages
from django.urls import reverse
from django.utils.dateparse import parse_datetime

from console import webhooks_area as area
from console.pages import console_view, render_page, submit
from console.paging import keyset_page
from core.api.errors import ValidationFailed
from events.registry import EVENT_TYPES

READ, WRITE = "webhook:read", "webhook:write"
STATUSES = [value for value, _ in area.WebhookDelivery.STATUSES]


def _position(token: str) -> tuple[datetime, uuid.UUID] | None:
    """`<created_at>~<id>` of the "older" link; anything else starts from the newest."""
    moment, _, delivery_id = token.partition("~")
    try:
        when = parse_datetime(moment)
        return (when, uuid.UUID(delivery_id)) if when else None
    except ValueError:
        return None


@console_view(permission=READ)
def deliveries(request):
    store = request.console.store
    # The API's filters, as the API reads them (a present, empty value is refused there: the
    # form's "any" sends one, which means no filter).
    chosen = {n: request.GET[n] for n in ("status", "event_type") if request.GET.get(n)}
    channel_id = request.GET.get("channel") or None
    request.store = store  # what the FilterSet's total reads, as in the API
    listed = area.deliveries_of(store=store, channel_id=channel_id)
    filters = area.WebhookDeliveryFilter(data=chosen, queryset=listed, request=request)
    error = None
    rows, older = [], None
    if filters.is_valid():
        after = _position(request.GET.get("before", ""))
        rows, older = keyset_page(filters.qs, order=("created_at", "id"), after=after)
    else:
        error = ValidationFailed({n: [str(m) for m in ms] for n, ms in filters.errors.items()})
    channels = list(area.channels_of(store=store, url_in_full=False).only("uid", "name", "url"))
    query = {**chosen, **({"channel": channel_id} if channel_id else {})}
    names = {str(channel.uid): channel.name or "(unnamed)" for channel in channels}
    shown = area.WebhookDeliverySerializer(rows, many=True).data
    for row in shown:
        row["channel_name"] = names.get(str(row["channel_id"]), "deleted channel")
    context = {
        "section": "deliveries",
        "deliveries": shown,
        "query_string": urlencode(query),
        "older": f"{older[0]:%Y-%m-%dT%H:%M:%S.%fZ}~{older[1]}" if older else None,
        "query": query,
        "statuses": STATUSES,
        "event_types": sorted(EVENT_TYPES),
        "channels": channels,
        "channel_id": channel_id,
    }
    return render_page(request, "console/deliveries.html", context, error=error)


def _delivery_page(request, found, error=None):
    attempts = found.attempt_records.order_by("number")
    context = {
        "section": "deliveries",
        "delivery": area.WebhookDeliverySerializer(found).data,
        "attempts": area.WebhookDeliveryAttemptSerializer(attempts, many=True).data,
        "channel_name": found.channel.name if found.channel else None,
    }
    return render_page(request, "console/delivery.html", context, error=error)


@console_view(permission=READ)
def delivery(request, delivery_id):
    found = area.delivery_get(store=request.console.store, delivery_id=delivery_id)
    if request.method != "POST":
        return _delivery_page(request, found)

    def replay():
        request.console.require(WRITE)
        replayed = area.delivery_replay(store=request.console.store, delivery_id=found.pk)
        messages.success(request, "Replayed as a new pending delivery.")
        return replayed

    return submit(
        request,
        replay,
        page=lambda error: _delivery_page(request, found, error),
        success_url=lambda replayed: reverse("console:delivery", args=[replayed.pk]),
    )
