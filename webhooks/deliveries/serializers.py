"""TODO docstring."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.api.schema import response_example
from core.api.serializers import ClosedObjectSerializer
from webhooks.models import WebhookDelivery


class WebhookDeliveryReplaySerializer(ClosedObjectSerializer):
    """Body of the replay: an empty object. The channel, payload and query cannot be
    overridden (spec "Events and deliveries", replay rule 4)."""


# OpenAPI examples (spec "Webhook delivery", "Webhook event type"; docs/design.md "Webhooks"),
# used by webhooks/deliveries/views.py.
WEBHOOK_DELIVERY_EXAMPLE = {
    "id": "3f0c9a52-7d1e-4b8a-9c2f-5e6d7a8b9c0d",
    "event_id": "evt_01J0Z8X4R2M6N7P8Q9R0S1T2V3",
    "event_type": "order.completed",
    "status": "succeeded",
    "channel_id": "0b6f7c1e-2d3a-4c5b-8e9f-a0b1c2d3e4f5",
    "destination_origin": "https://hooks.example.com",
    "attempts": 1,
    "response_status": 200,
    "response_body": "ok",
    "next_attempt_at": None,
    "created_at": "2026-06-02T14:05:01Z",
    "updated_at": "2026-06-02T14:05:02Z",
}
WEBHOOK_DELIVERY_REPLAYED_EXAMPLE = {
    **WEBHOOK_DELIVERY_EXAMPLE,
    "id": "8b7a6c5d-4e3f-4a2b-8c1d-0e9f8a7b6c5d",
    "status": "pending",
    "attempts": 0,
    "response_status": None,
    "response_body": None,
    "next_attempt_at": "2026-06-03T10:00:00Z",
    "created_at": "2026-06-03T10:00:00Z",
    "updated_at": "2026-06-03T10:00:00Z",
}


# The item of the paginated list (GET /api/v2/webhook-deliveries builds its page example).
@extend_schema_serializer(examples=[response_example("Delivery", WEBHOOK_DELIVERY_EXAMPLE)])
class WebhookDeliverySerializer(serializers.ModelSerializer):
    id = serializers.CharField()
    event_id = serializers.CharField()
    status = serializers.ChoiceField(choices=[value for value, _ in WebhookDelivery.STATUSES])
    destination_origin = serializers.CharField(
        help_text="scheme://host[:port] of the channel; the full URL is never shown."
    )
    channel_id = serializers.UUIDField(
        source="channel.uid",
        allow_null=True,
        default=None,
        help_text="The channel it is (or was) sent to; null once that channel is deleted.",
    )

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_id",
            "event_type",
            "status",
            "channel_id",
            "destination_origin",
            "attempts",
            "response_status",
            "response_body",
            "next_attempt_at",
            "created_at",
            "updated_at",
        ]


class WebhookDeliveryAttemptSerializer(serializers.Serializer):
    """One attempt of a delivery: never the URL, nor its path or query."""

    attempt = serializers.IntegerField(source="number")
    attempted_at = serializers.DateTimeField(source="started_at")
    duration_ms = serializers.IntegerField(allow_null=True)
    response_status = serializers.IntegerField(allow_null=True)
    error = serializers.SerializerMethodField(
        help_text="What went wrong without an answer: `timeout`, `connect timeout`, "
        "`connection refused`, `DNS failure`, `TLS error`, `connection error`, `request error`, "
        "`reading the response failed`, `Refused destination`, `abandoned`; null when the "
        "receiver answered (see response_status)."
    )

    def get_error(self, attempt) -> str | None:
        # Stored as "<kind>: <origin or detail>" or "HTTP <status>" (webhooks/dispatch/sender.py).
        if not attempt.error or attempt.error.startswith("HTTP "):
            return None
        return attempt.error.split(":", 1)[0]


# `{data: [...]}`, not a page.
@extend_schema_serializer(many=False)
class WebhookDeliveryAttemptListSerializer(serializers.Serializer):
    data = WebhookDeliveryAttemptSerializer(many=True)
