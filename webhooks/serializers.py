from rest_framework import serializers

from events.registry import EVENT_TYPES
from webhooks.models import WebhookDelivery, WebhookDestination


class WebhookDestinationSerializer(serializers.ModelSerializer):
    """The store's destination; the secret is shown only on creation and rotation."""

    disabled_reason = serializers.SerializerMethodField()
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=sorted(EVENT_TYPES)))

    class Meta:
        model = WebhookDestination
        fields = ["url", "event_types", "enabled", "disabled_reason", "created_at", "updated_at"]

    def get_disabled_reason(self, destination) -> str | None:
        return destination.disabled_reason or None


class WebhookDestinationWithSecretSerializer(WebhookDestinationSerializer):
    class Meta(WebhookDestinationSerializer.Meta):
        fields = [*WebhookDestinationSerializer.Meta.fields, "secret"]


# What a GET answers with: a PUT body may repeat these read-only fields; they are ignored.
READ_ONLY_DESTINATION_FIELDS = frozenset({"disabled_reason", "created_at", "updated_at", "secret"})


class WebhookDestinationInputSerializer(serializers.Serializer):
    url = serializers.CharField(
        max_length=2048,
        trim_whitespace=True,
        help_text="https URL receiving the deliveries (private, loopback, link-local and "
        "metadata addresses are refused unless the deployment allows private destinations).",
    )
    event_types = serializers.ListField(
        child=serializers.CharField(max_length=120),
        allow_empty=False,
        max_length=len(EVENT_TYPES),
        help_text="Event types to deliver; see GET /api/v2/webhook-event-types.",
    )
    enabled = serializers.BooleanField(required=False, default=True)

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields) - READ_ONLY_DESTINATION_FIELDS
        if unknown:
            raise serializers.ValidationError(
                {name: ["is not a property of a webhook destination"] for name in sorted(unknown)}
            )
        return attrs


class WebhookEventTypeSerializer(serializers.Serializer):
    type = serializers.CharField()
    version = serializers.IntegerField()
    description = serializers.CharField()


class WebhookDeliverySerializer(serializers.ModelSerializer):
    id = serializers.CharField()
    event_id = serializers.CharField()
    status = serializers.ChoiceField(choices=[value for value, _ in WebhookDelivery.STATUSES])
    destination_origin = serializers.CharField(
        help_text="scheme://host[:port] of the destination; the full URL is never shown."
    )

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_id",
            "event_type",
            "status",
            "destination_origin",
            "attempts",
            "response_status",
            "response_body",
            "next_attempt_at",
            "created_at",
            "updated_at",
        ]


class ReplayInputSerializer(serializers.Serializer):
    """A JSON object that accepts no properties (spec: send an empty object)."""
