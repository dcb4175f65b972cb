"""Everything the console uses of webhooks/, imported here only (the pages import this
module): the API's own request serializers, services and selectors, so the console's rules are
the API's. Two reads the API has no selector for live here: the signing secret's dates (never
the secret) and the deliveries of one channel.
"""

import uuid

from webhooks.channels.recovery import channel_recover
from webhooks.channels.selectors import (
    channel_get,
    channels_of,
    event_types_list,
    signing_secret_configured,
)
from webhooks.channels.serializers import (
    WebhookChannelCreateSerializer,
    WebhookChannelRecoverSerializer,
    WebhookChannelReplaceSerializer,
    WebhookChannelSerializer,
    WebhookChannelTestSerializer,
    WebhookSigningSecretSerializer,
)
from webhooks.channels.services import (
    channel_create,
    channel_delete,
    channel_test_send,
    channel_update,
    secret_new,
    signing_secret_supplied,
)
from webhooks.deliveries.filters import WebhookDeliveryFilter
from webhooks.deliveries.selectors import delivery_get
from webhooks.deliveries.serializers import (
    WebhookDeliveryAttemptSerializer,
    WebhookDeliverySerializer,
)
from webhooks.deliveries.services import delivery_replay
from webhooks.models import WebhookChannel, WebhookDelivery, WebhookSigningSecret

__all__ = [
    "WebhookChannelCreateSerializer",
    "WebhookChannelRecoverSerializer",
    "WebhookChannelReplaceSerializer",
    "WebhookChannelSerializer",
    "WebhookChannelTestSerializer",
    "WebhookDeliveryAttemptSerializer",
    "WebhookDeliveryFilter",
    "WebhookDeliverySerializer",
    "WebhookSigningSecretSerializer",
    "channel_create",
    "channel_delete",
    "channel_get",
    "channel_recover",
    "channel_test_send",
    "channel_update",
    "channels_of",
    "deliveries_of",
    "delivery_get",
    "delivery_replay",
    "event_types_list",
    "secret_new",
    "signing_secret_configured",
    "signing_secret_dates",
    "signing_secret_supplied",
]

DISABLED_REASONS = dict(WebhookChannel.DISABLED_REASONS)


def disabled_reason_text(reason: str) -> str:
    return DISABLED_REASONS.get(reason, reason)


def signing_secret_dates(*, store) -> dict | None:
    """When the store's signing secret was last set, and until when the previous one still
    signs; None without one. Never the secrets themselves."""
    return (
        WebhookSigningSecret.objects.filter(store=store)
        .values("updated_at", "previous_secret_expires_at")
        .first()
    )


def deliveries_of(*, store, channel_id: str | None):
    """The store's deliveries, newest first (the API list's order and join), of one channel
    when `channel_id` names one of the store's (a malformed id: none)."""
    deliveries = (
        WebhookDelivery.objects.select_related("channel")
        .filter(store=store)
        .order_by("-created_at", "-id")
    )
    if channel_id:
        try:
            uid = uuid.UUID(channel_id)
        except ValueError:
            return deliveries.none()
        deliveries = deliveries.filter(channel__uid=uid)
    return deliveries
