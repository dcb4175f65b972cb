"""TODO docstring."""

import uuid

from django.db.models import Q

from core.api.errors import NotFound
from events.registry import EVENT_TYPES, EventType
from webhooks.models import (
    WebhookChannel,
    WebhookSigningSecret,
)


def event_types_list() -> list[EventType]:
    return list(EVENT_TYPES.values())


def channel_get(*, store, channel_id) -> WebhookChannel:
    """Another store's channel and a malformed id are both simply not found."""
    try:
        uid = uuid.UUID(str(channel_id))
    except ValueError:
        raise NotFound() from None
    found = WebhookChannel.objects.filter(store=store, uid=uid).first()
    if found is None:
        raise NotFound()
    return found


def channels_of(*, store, search: str | None = None, event: str | None = None, url_in_full=True):
    """The store's channels, oldest first; `search` matches the name, and the URL only for a
    reader who sees it in full (else one guess at a time would reveal a path); `event` keeps
    the channels it is sent to (enabled and subscribed)."""
    channels = WebhookChannel.objects.filter(store=store).order_by("created_at", "id")
    if search:
        matches = Q(name__icontains=search)
        if url_in_full:
            matches |= Q(url__icontains=search)
        channels = channels.filter(matches)
    if event:
        channels = channels.filter(enabled=True, event_types__contains=[event])
    return channels


def signing_secret_configured(*, store) -> bool:
    return WebhookSigningSecret.objects.filter(store=store).exists()
